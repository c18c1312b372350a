"""The polyhedral IR: a program specialised to concrete sizes, as frozen dataclasses.

A `Program` is what the parser produces and what every later stage reads.  The kernel's
statements carry their isl iteration domain, access relations and original 2d+1 schedule; the
init function is kept as a plain loop tree (it is printed to C as written, never transformed).
"""
from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Callable, Union

import islpy as isl


class DType(enum.Enum):
    """Element types of arrays and scalars, with their C spelling."""

    F64 = ("f64", "double", True, 5, 8)
    F32 = ("f32", "float", True, 4, 4)
    I64 = ("i64", "long", False, 3, 8)
    I32 = ("i32", "int", False, 2, 4)
    I8 = ("i8", "char", False, 1, 1)

    def __init__(self, short: str, ctype: str, is_float: bool, rank: int, nbytes: int):
        self.short = short
        self.ctype = ctype
        self.is_float = is_float
        self.rank = rank
        self.nbytes = nbytes  # bytes per element on x86-64

    @staticmethod
    def by_name(name: str) -> "DType | None":
        for d in DType:
            if d.short == name:
                return d
        return None

    @staticmethod
    def promote(a: "DType", b: "DType") -> "DType":
        """C's usual arithmetic conversions, restricted to looper's types (char promotes to int)."""
        r = a if a.rank >= b.rank else b
        return DType.I32 if r is DType.I8 else r


# ---------------------------------------------------------------------------------------------
# Affine forms (subscripts, loop bounds, conditions)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Affine:
    """sum(coeff * name) + const, names being loop iterators or sizes."""

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    @staticmethod
    def of(name: str) -> "Affine":
        return Affine(((name, 1),), 0)

    @staticmethod
    def constant(c: int) -> "Affine":
        return Affine((), c)

    def _combine(self, other: "Affine", sign: int) -> "Affine":
        d = dict(self.terms)
        for n, c in other.terms:
            d[n] = d.get(n, 0) + sign * c
        return Affine(tuple(sorted((n, c) for n, c in d.items() if c != 0)), self.const + sign * other.const)

    def __add__(self, other: "Affine") -> "Affine":
        return self._combine(other, 1)

    def __sub__(self, other: "Affine") -> "Affine":
        return self._combine(other, -1)

    def scale(self, k: int) -> "Affine":
        if k == 0:
            return Affine()
        return Affine(tuple((n, c * k) for n, c in self.terms), self.const * k)

    def times(self, other: "Affine") -> "Affine | None":
        """The product, when one factor is a constant; None when it is not affine (both front
        ends reject it, each naming the expression its own way)."""
        if self.is_constant:
            return other.scale(self.const)
        if other.is_constant:
            return self.scale(other.const)
        return None

    @property
    def is_constant(self) -> bool:
        return not self.terms

    def names(self) -> set[str]:
        return {n for n, _ in self.terms}

    def coeff(self, name: str) -> int:
        return dict(self.terms).get(name, 0)

    def substitute(self, values: dict[str, int]) -> "Affine":
        """Replace names with integers (sizes with their concrete values)."""
        const = self.const
        terms = []
        for n, c in self.terms:
            if n in values:
                const += c * values[n]
            else:
                terms.append((n, c))
        return Affine(tuple(terms), const)

    def evaluate(self, values: dict[str, int]) -> int:
        return self.const + sum(c * values[n] for n, c in self.terms)

    def render(self, env: dict[str, str] | None = None) -> str:
        """Text usable both by isl's parser and by C (`2*i + N - 1`)."""
        env = env or {}
        parts: list[str] = []
        for n, c in self.terms:
            v = env.get(n, n)
            if c == 1:
                t = v
            elif c == -1:
                t = f"-{v}"
            else:
                t = f"{c}*{v}"
            parts.append(t)
        if self.const or not parts:
            parts.append(str(self.const))
        out = parts[0]
        for p in parts[1:]:
            out += f" - {p[1:]}" if p.startswith("-") else f" + {p}"
        return out


@dataclass(frozen=True)
class MinMax:
    """`min(...)`/`max(...)` of affine forms, allowed in loop bounds."""

    op: str  # "min" | "max"
    args: tuple["Bound", ...]

    def names(self) -> set[str]:
        return set().union(*(a.names() for a in self.args))

    def substitute(self, values: dict[str, int]) -> "MinMax":
        return MinMax(self.op, tuple(a.substitute(values) for a in self.args))

    def render(self, env: dict[str, str] | None = None) -> str:
        out = self.args[0].render(env)
        for a in self.args[1:]:
            out = f"{self.op}({out}, {a.render(env)})"
        return out


Bound = Union[Affine, MinMax]


@dataclass(frozen=True)
class Condition:
    """An affine condition: comparison leaves joined by and/or/not (rendered for isl and C)."""

    op: str  # "cmp", "and", "or", "not"
    args: tuple = ()
    cmp: str = ""  # "<", "<=", ">", ">=", "==", "!="

    def isl(self, values: dict[str, int]) -> str:
        if self.op == "cmp":
            left, right = (a.substitute(values).render() for a in self.args)
            op = {"==": "="}.get(self.cmp, self.cmp)
            return f"({left} {op} {right})"
        if self.op == "not":
            return f"(not {self.args[0].isl(values)})"
        return "(" + f" {self.op} ".join(a.isl(values) for a in self.args) + ")"

    def c(self, env: dict[str, str] | None = None) -> str:
        if self.op == "cmp":
            return f"({self.args[0].render(env)} {self.cmp} {self.args[1].render(env)})"
        if self.op == "not":
            return f"!{self.args[0].c(env)}"
        join = " && " if self.op == "and" else " || "
        return "(" + join.join(a.c(env) for a in self.args) + ")"


# ---------------------------------------------------------------------------------------------
# Value expressions
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Const:
    value: int | float
    dtype: DType


@dataclass(frozen=True)
class IterRef:
    """The value of a loop iterator (or size) used as data, an `int` in C."""

    name: str
    dtype: DType = DType.I32


@dataclass(frozen=True)
class SizeRef:
    name: str
    dtype: DType = DType.I32


@dataclass(frozen=True)
class Load:
    """Read of an array element or a scalar (rank 0: `index == ()`)."""

    array: str
    index: tuple[Affine, ...]
    dtype: DType


@dataclass(frozen=True)
class Unary:
    op: str  # "-" or "!"
    operand: "Expr"
    dtype: DType


@dataclass(frozen=True)
class Binary:
    op: str  # + - * / // % < <= > >= == != && ||
    left: "Expr"
    right: "Expr"
    dtype: DType


@dataclass(frozen=True)
class Select:
    cond: "Expr"
    then: "Expr"
    orelse: "Expr"
    dtype: DType


@dataclass(frozen=True)
class Call:
    fn: str  # sqrt exp pow abs min max
    args: tuple["Expr", ...]
    dtype: DType


@dataclass(frozen=True)
class Cast:
    operand: "Expr"
    dtype: DType


Expr = Union[Const, IterRef, SizeRef, Load, Unary, Binary, Select, Call, Cast]


def walk(e: Expr):
    """Pre-order traversal of an expression tree."""
    yield e
    if isinstance(e, (Unary, Cast)):
        yield from walk(e.operand)
    elif isinstance(e, Binary):
        yield from walk(e.left)
        yield from walk(e.right)
    elif isinstance(e, Select):
        yield from walk(e.cond)
        yield from walk(e.then)
        yield from walk(e.orelse)
    elif isinstance(e, Call):
        for a in e.args:
            yield from walk(a)


def map_loads(e: Expr, fn: Callable[[Load], Expr]) -> Expr:
    """`e` with every read `ld` replaced by `fn(ld)` (a transformation that renames storage)."""
    if isinstance(e, Load):
        return fn(e)
    if isinstance(e, (Unary, Cast)):
        return replace(e, operand=map_loads(e.operand, fn))
    if isinstance(e, Binary):
        return replace(e, left=map_loads(e.left, fn), right=map_loads(e.right, fn))
    if isinstance(e, Select):
        return replace(e, cond=map_loads(e.cond, fn), then=map_loads(e.then, fn), orelse=map_loads(e.orelse, fn))
    if isinstance(e, Call):
        return replace(e, args=tuple(map_loads(a, fn) for a in e.args))
    return e


# ---------------------------------------------------------------------------------------------
# Program structure
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Array:
    """An array or (rank 0) a scalar variable; every one is a global of the generated program."""

    name: str
    dtype: DType
    shape: tuple[Affine, ...]  # symbolic in sizes, as declared
    extent: tuple[int, ...]  # concrete
    # "param" (in kernel's signature), "init" (init temporary), "local" (kernel local scalar),
    # "temp" (an array the kernel's transformations add: a packed copy, `transforms.packing`)
    role: str

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Assign:
    """`target op= value`, with op one of "=", "+=", "-=", "*=", "/="."""

    target: Load
    op: str
    value: Expr
    line: int


@dataclass(frozen=True)
class Loop:
    var: str
    lower: Bound  # first value
    upper: Bound  # exclusive bound in the direction of `step`
    step: int  # +1 or -1
    body: tuple["Node", ...]
    line: int


@dataclass(frozen=True)
class Guard:
    cond: Condition
    then: tuple["Node", ...]
    orelse: tuple["Node", ...]
    line: int


Node = Union[Assign, Loop, Guard]


@dataclass(frozen=True)
class Access:
    array: str
    index: tuple[Affine, ...]
    is_write: bool
    relation: isl.Map = field(compare=False)


@dataclass(frozen=True, eq=False)
class Statement:
    """One kernel assignment with its polyhedral description."""

    name: str  # S0, S1, ... in textual order
    iterators: tuple[str, ...]
    steps: tuple[int, ...]  # +1 / -1 per enclosing loop
    beta: tuple[int, ...]  # textual positions: len(iterators) + 1
    domain: isl.Set
    body: Assign
    accesses: tuple[Access, ...]  # the write first, then reads in evaluation order

    @property
    def depth(self) -> int:
        return len(self.iterators)

    def width(self, k: int) -> int | None:
        """How many values iterator `k` takes over the domain's bounding box (None when a bound is
        not a constant)."""
        lo, hi = self.domain.dim_min_val(k), self.domain.dim_max_val(k)
        if not (lo.is_int() and hi.is_int()):
            return None
        return int(hi.to_python()) - int(lo.to_python()) + 1

    @property
    def line(self) -> int:
        return self.body.line

    @property
    def writes(self) -> isl.Map:
        return self.accesses[0].relation

    def reads(self) -> list[Access]:
        return [a for a in self.accesses if not a.is_write]


@dataclass(frozen=True)
class Output:
    array: str
    region: str = "full"  # "full", "lower" (j <= i) or "upper" (j >= i)


@dataclass(frozen=True)
class Preamble:
    """What the user's program runs right before each timed call of its kernel; looper's harness
    runs it too, so that a candidate is timed as the program times it.

    PolyBench's timer (`polybench_timer_start`, built with -DPOLYBENCH_TIME) first reads a zeroed
    buffer of `flush_kib` KiB in an OpenMP loop when built with OpenMP.  The kernel then starts
    with its data pushed out of the closer caches (a tiled atax at MEDIUM took 0.19 ms after it,
    0.10 ms without) and, when it is parallel, with its thread team already running (its first
    region cost 3 us after the flush and 3.9 ms without, on average over 12 fresh processes of a
    2-vCPU VM; `search.restraint` says why short kernels stay sequential all the same)."""

    flush_kib: int


@dataclass(frozen=True, eq=False)
class Program:
    """A parsed program specialised to one set of size values."""

    name: str
    path: str
    source: str
    doc: str
    size_label: str  # "LARGE", or "custom" when -D changed a value
    sizes: dict[str, int]
    arrays: dict[str, Array]
    init: tuple[Node, ...]
    init_locals: dict[str, Array]
    kernel: tuple[Node, ...]
    statements: tuple[Statement, ...]
    outputs: tuple[Output, ...]
    # The kernel as its front end read it, normalized: no comments, no layout, no line numbers
    # (Python: the kernel function and OUTPUTS, unparsed; C: the scop's statements after the
    # preprocessor, printed by pycparser).  A tuning record is keyed on it (`tune.records`): an
    # edit that changes a statement changes it, a reformatted or commented file does not.
    kernel_text: str = ""
    # arrays the user's code reaches through pointers (C function parameters, pointer variables):
    # code written in place cannot assume they do not alias, so they are measured that way too
    # (`codegen.harness`: passed to a kernel that sees only pointers)
    passed: frozenset[str] = frozenset()
    # what the user's program runs before each kernel call (C input; None: nothing looper models)
    preamble: Preamble | None = None

    @property
    def max_depth(self) -> int:
        return max((s.depth for s in self.statements), default=0)

    def is_output(self, array: str) -> bool:
        """Whether `array` is one of the program's outputs (what a caller may read after it)."""
        return any(o.array == array for o in self.outputs)

    @cached_property
    def rewritten(self) -> tuple:
        """() for a program as parsed; for one a transformation rewrote (a packed copy, an
        expanded temporary), the arrays it added and every statement's references: what tells
        it apart from the parsed program and from other rewrites with the same schedule rows."""
        temps = tuple((a.name, a.extent) for a in self.arrays.values() if a.role == "temp")
        if not temps:
            return ()
        return temps + tuple((s.name, tuple((a.array, a.index) for a in s.accesses)) for s in self.statements)

    @cached_property
    def content(self) -> tuple:
        """What the facts derived from a program (its dependences, its statements' counts) are a
        function of: source and sizes, the arrays and their roles, each statement's body, domain,
        textual position and accesses.  Equal for equal rewrites built as separate objects."""
        arrays = tuple(sorted((a.name, a.role, a.extent) for a in self.arrays.values()))
        statements = tuple((s.name, repr(s.body), s.iterators, s.beta, s.domain.to_str(),
                            tuple((a.array, a.is_write, a.relation.to_str()) for a in s.accesses))
                           for s in self.statements)
        return self.fingerprint, arrays, statements

    def statement(self, name: str) -> Statement:
        for s in self.statements:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def fingerprint(self) -> str:
        """Stable identity of (source, sizes): keys caches and measurements."""
        h = hashlib.sha256(self.source.encode())
        h.update(repr(sorted(self.sizes.items())).encode())
        return h.hexdigest()[:20]

    def domains(self) -> isl.UnionSet:
        u = isl.UnionSet.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
        for s in self.statements:
            u = u.union(isl.UnionSet.from_set(s.domain))
        return u

    def access_union(self, writes: bool, only=None, exclude=(), statements=None) -> isl.UnionMap:
        """The writes (or reads) of all statements (or those named in `statements`), to the
        arrays in `only` (None: every one) that are not in `exclude`."""
        u = isl.UnionMap.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
        for s in self.statements:
            if statements is not None and s.name not in statements:
                continue
            for a in s.accesses:
                if a.is_write == writes and (only is None or a.array in only) and a.array not in exclude:
                    u = u.union(isl.UnionMap.from_map(a.relation))
        return u
