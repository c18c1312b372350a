"""The work a kernel must do, counted exactly from the IR: floating-point operations and the
compulsory memory traffic, the two coordinates of a roofline.

Flops.  A statement executes once per point of its iteration domain (an exact isl count,
`poly.count`), and each execution performs the floating-point arithmetic of its expression
tree.  What counts, and why:

- `+ - * /` on floating-point operands: one each (a division costs far more cycles than an
  addition, but a flop is an operation, not a cost; this is how PolyBench-era papers and
  roofline plots count);
- the operation of a compound assignment (`+=`, `-=`, `*=`, `/=`) on a floating target: one;
- `sqrt`, `exp`, `pow`: one each (library calls of tens of instructions, counted as one
  operation so that a kernel's count does not depend on a libm);
- unary minus, `abs`, `min`, `max`, comparisons, selections and casts: none (sign flips, moves
  and compares, no arithmetic).  Of `a if c else b` the costlier branch counts (which branch
  runs depends on the data);
- integer arithmetic (subscripts, loop bounds, integer kernels such as floyd-warshall): none.

Bytes.  The compulsory traffic is a lower bound on what any schedule moves between memory and
the cores: every array element the kernel touches is read once, and every element it writes is
written back once (`element size x (|touched| + |written|)`, from the access relations' images,
counted exactly).  Kernel-local scalars live in registers and move nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import islpy as isl

from ..ir.program import Binary, Call, Cast, DType, Expr, Program, Select, Statement, Unary
from .count import count_points

_ARITHMETIC = frozenset("+-*/")
_CALLS = frozenset(("sqrt", "exp", "pow"))


def _tally(e: Expr, own: Callable[[Expr], int]) -> int:
    """`own` of every node of `e` that one evaluation runs, summed; of a selection's two branches
    the costlier (which one runs depends on the data)."""
    if isinstance(e, Binary):
        return own(e) + _tally(e.left, own) + _tally(e.right, own)
    if isinstance(e, Call):
        return own(e) + sum(_tally(a, own) for a in e.args)
    if isinstance(e, Select):
        return own(e) + _tally(e.cond, own) + max(_tally(e.then, own), _tally(e.orelse, own))
    if isinstance(e, (Unary, Cast)):
        return own(e) + _tally(e.operand, own)
    return 0  # constants, loads, iterators, sizes


def _flop(e: Expr) -> int:
    if isinstance(e, Binary):
        return 1 if e.op in _ARITHMETIC and e.dtype.is_float else 0
    if isinstance(e, Call):
        return 1 if e.fn in _CALLS and e.dtype.is_float else 0
    return 0


def _operation(e: Expr) -> int:
    return 1 if isinstance(e, (Binary, Call, Select)) else 0


def expr_flops(e: Expr) -> int:
    """Floating-point operations of one evaluation of `e` (see the module docstring)."""
    return _tally(e, _flop)


def statement_flops(s: Statement) -> int:
    """Floating-point operations of one execution of statement `s`."""
    compound = 1 if s.body.op != "=" and s.body.target.dtype.is_float else 0
    return compound + expr_flops(s.body.value)


def expr_operations(e: Expr) -> int:
    """Operations one evaluation of `e` issues, whatever their type: every binary operator
    (arithmetic or comparison), call and selection.  Not flops: the cost terms' compute time
    needs them (floyd-warshall's add, compare and select per point, 0 flops)."""
    return _tally(e, _operation)


def statement_operations(s: Statement) -> int:
    """Operations of one execution of statement `s` (`expr_operations`, and a compound
    assignment's own), at least one: a copy costs something too."""
    return max(1, (1 if s.body.op != "=" else 0) + expr_operations(s.body.value))


@dataclass(frozen=True)
class StatementWork:
    """One statement's share: how often it runs and what each run computes."""

    statement: str
    instances: int
    flops_each: int

    @property
    def flops(self) -> int:
        """This statement's flops over the whole kernel."""
        return self.instances * self.flops_each


@dataclass(frozen=True)
class KernelWork:
    """A kernel's exact flop count, its compulsory traffic, and which peak bounds it."""

    statements: tuple[StatementWork, ...]
    bytes: int
    precision: str | None  # "double" or "single" (the peak that bounds it); None: no flops

    @property
    def flops(self) -> int:
        """The kernel's exact flop count."""
        return sum(s.flops for s in self.statements)

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity in flop/byte (None for a kernel without flops or traffic)."""
        return self.flops / self.bytes if self.flops and self.bytes else None


def kernel_work(program: Program) -> KernelWork:
    """Flops per statement, compulsory bytes and precision of `program` at its sizes."""
    stmts = tuple(StatementWork(s.name, count_points(s.domain), statement_flops(s))
                  for s in program.statements)
    return KernelWork(stmts, compulsory_bytes(program), _precision(program, stmts))


def instances(program: Program) -> int:
    """How many times `program`'s statements run in all: its work, for comparing its sizes (the
    flop count would leave out statements that only move data)."""
    return sum(count_points(s.domain) for s in program.statements)


def _precision(program: Program, work: tuple[StatementWork, ...]) -> str | None:
    """Single when every statement that computes flops writes a float, else double: the
    kernel's type decides which peak bounds it (PolyBench's deriche is float)."""
    types = {program.statement(w.statement).body.target.dtype for w in work if w.flops_each}
    if not types:
        return None
    return "single" if types == {DType.F32} else "double"


def compulsory_bytes(program: Program) -> int:
    """Element size x (elements touched + elements written), over the kernel's arrays."""
    total = 0
    for name, array in program.arrays.items():
        if array.role == "local":
            continue
        touched = _image(program, name, None)
        if touched is None:
            continue
        written = _image(program, name, True)
        total += array.dtype.nbytes * (count_points(touched) + (count_points(written) if written else 0))
    return total


def _image(program: Program, array: str, writes: bool | None) -> isl.Set | None:
    """The elements of `array` the kernel accesses (only writes, or every access for None)."""
    out = None
    for s in program.statements:
        for a in s.accesses:
            if a.array == array and (writes is None or a.is_write == writes):
                img = a.relation.range()
                out = img if out is None else out.union(img)
    return out.coalesce() if out is not None else None
