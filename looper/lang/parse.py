"""Parse looper's input language (a Python subset) into a `Program`, with `ast` only.

The file is never imported or executed.  Every construct outside the language is reported as
`FILE:LINE:COL: error: MESSAGE` through `LooperSyntaxError`.
"""
from __future__ import annotations

import ast
import copy
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..ir.extract import extract_statements
from ..ir.program import (
    Affine, Array, Assign, Binary, Bound, Call, Cast, Condition, Const, DType, Expr,
    Guard, IterRef, Load, Loop, MinMax, Node, Output, Program, Select, SizeRef, Unary,
)
from ..errors import LooperSyntaxError, LooperUsageError

SIZE_LABELS = ("MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE")
MATH_CALLS = {"sqrt": 1, "exp": 1, "pow": 2, "abs": 1, "min": 2, "max": 2}
AUG_OPS = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/="}
BIN_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}
CMP_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
OP_SPELLING = {
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^",
    ast.BitAnd: "&", ast.MatMult: "@", ast.Invert: "~", ast.Is: "is", ast.IsNot: "is not",
    ast.In: "in", ast.NotIn: "not in",
}
# Names that would collide with C keywords, the harness, isl's parser or libm in the generated program.
RESERVED = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
    "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
    "volatile", "while", "main", "kernel", "init", "dump", "min", "max", "floord", "floor", "ceil",
    "mod", "exists", "true", "false", "infty", "sqrt", "exp", "pow", "abs", "fabs", "range",
    "f64", "f32", "i64", "i32", "i8", "printf", "fprintf", "stderr", "stdout", "NULL", "errno",
}


def parse_file(path: str | Path, size: str | None = None,
               defines: dict[str, int] | None = None) -> Program:
    """Read and parse a program file for one dataset size (plus `-D` overrides)."""
    p = Path(path)
    try:
        source = p.read_text()
    except OSError as e:
        raise LooperUsageError(f"cannot read program: {e.strerror}", str(path)) from None
    except UnicodeDecodeError:
        raise LooperSyntaxError("file is not UTF-8 text", str(path)) from None
    return parse_source(source, str(path), size, defines)


def parse_source(source: str, filename: str = "<string>", size: str | None = None,
                 defines: dict[str, int] | None = None) -> Program:
    return _Parser(source, filename).program(size, defines or {})


def available_sizes(path: str | Path) -> list[str]:
    """The dataset labels a program file declares in SIZES."""
    return list(declared_sizes(Path(path).read_text(), str(path)))


def declared_sizes(source: str, filename: str = "<string>") -> dict[str, dict[str, int]]:
    """A program's SIZES table: dataset label -> size values."""
    p = _Parser(source, filename)
    p.module_parts()
    return p.sizes_table


@dataclass
class _Scope:
    """Names visible while parsing one function body."""

    function: str  # "init" or "kernel"
    iterators: list[str] = field(default_factory=list)
    locals: dict[str, Array] = field(default_factory=dict)


@dataclass
class _Typed:
    """An expression under construction; `weak` literals take the type of their partner."""

    expr: Expr
    weak: bool = False

    @property
    def dtype(self) -> DType:
        return self.expr.dtype


class _Parser:
    def __init__(self, source: str, filename: str):
        self.source = source
        self.file = filename
        self.sizes_table: dict[str, dict[str, int]] = {}
        self.sizes_node: ast.AST | None = None
        self.outputs_node: ast.AST | None = None
        self.functions: dict[str, ast.FunctionDef] = {}
        self.doc = ""
        self.sizes: dict[str, int] = {}
        self.arrays: dict[str, Array] = {}
        self.size_params: dict[str, ast.arg] = {}

    # -- errors --------------------------------------------------------------------------------
    def error(self, node: ast.AST | None, message: str) -> LooperSyntaxError:
        line = getattr(node, "lineno", None)
        col = getattr(node, "col_offset", None)
        return LooperSyntaxError(message, self.file, line, None if col is None else col + 1)

    # -- module level ----------------------------------------------------------------------------
    def module_parts(self) -> None:
        try:
            with warnings.catch_warnings():  # Python's own warnings about the text are not looper's errors
                warnings.simplefilter("ignore")
                tree = ast.parse(self.source, self.file)
        except SyntaxError as e:
            raise LooperSyntaxError(f"invalid Python syntax: {e.msg}", self.file, e.lineno,
                                    e.offset) from None
        for k, node in enumerate(tree.body):
            if k == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str):
                self.doc = node.value.value.strip()
            elif isinstance(node, ast.ImportFrom) and node.module == "looper.lang":
                continue
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                raise self.error(node, "only 'from looper.lang import ...' may be imported")
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id in ("SIZES", "OUTPUTS"):
                if node.targets[0].id == "SIZES":
                    self.sizes_node = node
                    self.sizes_table = self.parse_sizes(node.value)
                else:
                    self.outputs_node = node
            elif isinstance(node, ast.FunctionDef) and node.name in ("init", "kernel"):
                if node.name in self.functions:
                    raise self.error(node, f"function '{node.name}' is defined twice")
                self.functions[node.name] = node
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                raise self.error(node, f"unsupported function '{node.name}': a program defines only "
                                       "'init' and 'kernel'")
            else:
                raise self.error(node, f"unsupported module-level statement ({type(node).__name__}): "
                                       "a program holds only a docstring, SIZES, OUTPUTS, init and kernel")
        if "kernel" not in self.functions:
            raise LooperSyntaxError("no 'def kernel(...)' in the program", self.file, 1, 1)

    def parse_sizes(self, node: ast.expr) -> dict[str, dict[str, int]]:
        if not isinstance(node, ast.Dict):
            raise self.error(node, "SIZES must be a dict literal: {\"MINI\": dict(N=...), ...}")
        table: dict[str, dict[str, int]] = {}
        for k, v in zip(node.keys, node.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                raise self.error(k or node, "SIZES keys must be dataset names in quotes")
            entries: list[tuple[str, ast.expr, ast.AST]] = []
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "dict" \
                    and not v.args:
                entries = [(kw.arg, kw.value, kw) for kw in v.keywords if kw.arg]
            elif isinstance(v, ast.Dict):
                for kk, vv in zip(v.keys, v.values):
                    if not (isinstance(kk, ast.Constant) and isinstance(kk.value, str)):
                        raise self.error(kk or v, "size names must be strings")
                    entries.append((kk.value, vv, kk))
            else:
                raise self.error(v, "each SIZES entry must be dict(NAME=value, ...)")
            values = {}
            for name, val, where in entries:
                n = _int_literal(val)
                if n is None or n < 0:
                    raise self.error(val, f"size {name} in SIZES[{k.value!r}] must be a "
                                          "non-negative integer literal")
                values[name] = n
            table[k.value] = values
        return table

    def choose_sizes(self, label: str | None, defines: dict[str, int]) -> str:
        if label is None:
            if "LARGE" in self.sizes_table:
                label = "LARGE"
            elif self.sizes_table:
                label = list(self.sizes_table)[-1]
        if label is not None:
            if label not in self.sizes_table:
                known = ", ".join(self.sizes_table) or "none"
                raise LooperUsageError(f"no size '{label}' in SIZES (available: {known})", self.file)
            self.sizes = dict(self.sizes_table[label])
        declared = set(self.size_params)
        for name, value in defines.items():
            if name not in declared:
                known = ", ".join(sorted(declared)) or "none"
                raise LooperUsageError(f"-D {name}={value}: the program has no size named '{name}' "
                                       f"(sizes: {known})", self.file)
            self.sizes[name] = value
        for name, arg in self.size_params.items():
            if name not in self.sizes:
                where = f"SIZES[{label!r}]" if label else "SIZES"
                raise self.error(arg, f"size '{name}' has no value in {where} (add it or pass -D {name}=...)")
        self.sizes = {n: self.sizes[n] for n in self.size_params}
        if defines:
            return f"{label or 'custom'}+" + ",".join(f"{k}={v}" for k, v in sorted(defines.items()))
        return label or "custom"

    # -- whole program ---------------------------------------------------------------------------
    def program(self, label: str | None, defines: dict[str, int]) -> Program:
        self.module_parts()
        kernel = self.functions["kernel"]
        init = self.functions.get("init")
        # Sizes first: array shapes and every bound need them.
        for fn in filter(None, (init, kernel)):
            for arg in fn.args.args:
                if isinstance(arg.annotation, ast.Name) and arg.annotation.id == "int":
                    self.size_params.setdefault(arg.arg, arg)
        size_label = self.choose_sizes(label, defines)
        self.check_signature(kernel)
        kernel_params = self.declare_params(kernel, "param", {})
        if init is not None:
            self.check_signature(init)
            self.declare_params(init, "init", kernel_params)
        # Bodies: the kernel becomes statements; init is kept as a checked loop tree.
        init_nodes: tuple[Node, ...] = ()
        init_locals: dict[str, Array] = {}
        if init is not None:
            scope = _Scope("init")
            init_nodes = self.body(init.body, scope, docstring_ok=True)
            init_locals = scope.locals
            extract_statements(init_nodes, {**self.arrays, **init_locals}, self.sizes, self.file, "I")
        scope = _Scope("kernel")
        kernel_nodes = self.body(kernel.body, scope, docstring_ok=True)
        for name, arr in scope.locals.items():
            self.arrays[name] = arr
        statements = extract_statements(kernel_nodes, self.arrays, self.sizes, self.file)
        if not statements:
            raise self.error(kernel, "the kernel has no statements")
        outputs = self.parse_outputs()
        name = Path(self.file).stem
        return Program(
            name=name, path=self.file, source=self.source, doc=self.doc, size_label=size_label,
            sizes=dict(self.sizes), arrays=dict(self.arrays), init=init_nodes,
            init_locals=init_locals, kernel=kernel_nodes, statements=tuple(statements),
            outputs=outputs, kernel_text=self.kernel_text(kernel),
        )

    def kernel_text(self, kernel: ast.FunctionDef) -> str:
        """The kernel function (without its docstring) and OUTPUTS, unparsed by `ast`: the
        program's identity for tuning records (`Program.kernel_text`)."""
        fn = copy.deepcopy(kernel)
        body = fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            fn.body = body[1:] or [ast.Pass()]
        parts = [ast.unparse(fn)] + ([ast.unparse(self.outputs_node)] if self.outputs_node is not None else [])
        return "\n".join(parts) + "\n"

    def check_signature(self, fn: ast.FunctionDef) -> None:
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise self.error(fn, f"'{fn.name}' takes plain annotated parameters only")
        if fn.decorator_list:
            raise self.error(fn.decorator_list[0], "decorators are not supported")

    def declare_params(self, fn: ast.FunctionDef, role: str, kernel_params: dict[str, Array]
                       ) -> dict[str, Array]:
        declared: dict[str, Array] = {}
        for arg in fn.args.args:
            name = arg.arg
            self.check_name(arg, name)
            ann = arg.annotation
            if ann is None:
                raise self.error(arg, f"parameter '{name}' needs a type annotation "
                                      "(int for a size, f64 for a scalar, f64[N, M] for an array)")
            if isinstance(ann, ast.Name) and ann.id == "int":
                continue
            array = self.param_type(arg, ann)
            prev = self.arrays.get(name)
            if prev is not None:
                if (prev.dtype, prev.shape) != (array.dtype, array.shape):
                    raise self.error(arg, f"'{name}' is declared differently in init and kernel")
                continue
            self.arrays[name] = array if role == "param" else \
                Array(array.name, array.dtype, array.shape, array.extent, "init")
            declared[name] = self.arrays[name]
        return declared

    def param_type(self, arg: ast.arg, ann: ast.expr) -> Array:
        name = arg.arg
        if isinstance(ann, ast.Name):
            dt = DType.by_name(ann.id)
            if dt is None:
                raise self.error(ann, f"unknown type '{ann.id}' (use int, f64, f32, i64, i32 or i8)")
            return Array(name, dt, (), (), "param")
        if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name):
            dt = DType.by_name(ann.value.id)
            if dt is None:
                raise self.error(ann.value, f"unknown element type '{ann.value.id}'")
            dims = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            shape = tuple(self.affine(d, set(), what="array dimension") for d in dims)
            extent = tuple(s.evaluate(self.sizes) for s in shape)
            for d, e in zip(dims, extent):
                if e <= 0:
                    raise self.error(d, f"array '{name}' has a dimension of extent {e} at these sizes")
            return Array(name, dt, shape, extent, "param")
        raise self.error(ann, f"unsupported annotation for '{name}'")

    def check_name(self, node: ast.AST, name: str) -> None:
        if name in RESERVED or name.startswith("looper_") or name.startswith("__"):
            raise self.error(node, f"the name '{name}' is reserved (it clashes with C or the harness)")

    def parse_outputs(self) -> tuple[Output, ...]:
        node = self.outputs_node
        if node is None:
            raise LooperSyntaxError("no OUTPUTS = [...] in the program: name the arrays to dump and "
                                    "compare", self.file, 1, 1)
        if not isinstance(node.value, (ast.List, ast.Tuple)):
            raise self.error(node.value, "OUTPUTS must be a list of array names")
        outs = []
        for e in node.value.elts:
            region = "full"
            if isinstance(e, ast.Tuple) and len(e.elts) == 2 and all(
                    isinstance(x, ast.Constant) and isinstance(x.value, str) for x in e.elts):
                name, region = e.elts[0].value, e.elts[1].value
                if region not in ("full", "lower", "upper"):
                    raise self.error(e.elts[1], f"unknown output region '{region}' (full, lower, upper)")
            elif isinstance(e, ast.Constant) and isinstance(e.value, str):
                name = e.value
            else:
                raise self.error(e, "each OUTPUTS entry is \"A\" or (\"A\", \"lower\"|\"upper\")")
            arr = self.arrays.get(name)
            if arr is None or arr.role not in ("param", "local"):
                raise self.error(e, f"OUTPUTS names '{name}', which is not a kernel array or scalar")
            if region != "full" and arr.rank != 2:
                raise self.error(e, f"region '{region}' needs a 2-D array; '{name}' has rank {arr.rank}")
            outs.append(Output(name, region))
        if not outs:
            raise self.error(node, "OUTPUTS is empty")
        return tuple(outs)

    # -- statements --------------------------------------------------------------------------------
    def body(self, stmts: list[ast.stmt], scope: _Scope, docstring_ok: bool = False
             ) -> tuple[Node, ...]:
        out: list[Node] = []
        for k, st in enumerate(stmts):
            if k == 0 and docstring_ok and isinstance(st, ast.Expr) and \
                    isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                continue
            node = self.statement(st, scope)
            if node is not None:
                out.append(node)
        return tuple(out)

    def statement(self, st: ast.stmt, scope: _Scope) -> Node | None:
        if isinstance(st, ast.Pass):
            return None
        if isinstance(st, ast.For):
            return self.loop(st, scope)
        if isinstance(st, ast.If):
            cond = self.condition(st.test, set(scope.iterators))
            then = self.body(st.body, scope)
            orelse = self.body(st.orelse, scope)
            return Guard(cond, then, orelse, st.lineno)
        if isinstance(st, ast.Assign):
            if len(st.targets) != 1:
                raise self.error(st, "chained assignment is not supported: one target per statement")
            return self.assignment(st, st.targets[0], "=", st.value, scope, None)
        if isinstance(st, ast.AnnAssign):
            if st.value is None:
                raise self.error(st, "a declaration needs a value: 'x: f64 = 0.0'")
            if not isinstance(st.target, ast.Name):
                raise self.error(st.target, "only scalar names can be annotated")
            dt = DType.by_name(st.annotation.id) if isinstance(st.annotation, ast.Name) else None
            if dt is None:
                raise self.error(st.annotation, "a local scalar's type is one of f64, f32, i64, i32, i8")
            return self.assignment(st, st.target, "=", st.value, scope, dt)
        if isinstance(st, ast.AugAssign):
            op = AUG_OPS.get(type(st.op))
            if op is None:
                raise self.error(st, f"unsupported augmented assignment "
                                     f"'{OP_SPELLING.get(type(st.op), type(st.op).__name__)}='")
            return self.assignment(st, st.target, op, st.value, scope, None)
        if isinstance(st, ast.While):
            raise self.error(st, "'while' loops are not supported: use 'for v in range(...)'")
        kind = {ast.Return: "return", ast.Break: "break", ast.Continue: "continue",
                ast.With: "with", ast.Try: "try", ast.FunctionDef: "nested def",
                ast.Expr: "expression statement", ast.Delete: "del", ast.Raise: "raise",
                ast.Global: "global", ast.Nonlocal: "nonlocal", ast.Import: "import",
                ast.ImportFrom: "import", ast.Assert: "assert"}.get(type(st), type(st).__name__)
        raise self.error(st, f"unsupported statement '{kind}'")

    def loop(self, st: ast.For, scope: _Scope) -> Loop:
        if st.orelse:
            raise self.error(st, "'for ... else' is not supported")
        if not isinstance(st.target, ast.Name):
            raise self.error(st.target, "a loop variable must be a single name")
        var = st.target.id
        self.check_name(st.target, var)
        if var in scope.iterators:
            raise self.error(st.target, f"loop variable '{var}' shadows an enclosing loop's")
        if var in self.sizes or var in self.arrays or var in scope.locals:
            raise self.error(st.target, f"loop variable '{var}' clashes with a size, array or scalar")
        it = st.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
            raise self.error(it, "a loop iterates over range(...) only")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(it, "range takes 1 to 3 positional arguments")
        outer = set(scope.iterators)
        step = 1
        if len(it.args) == 3:
            s = _int_literal(it.args[2])
            if s not in (1, -1):
                raise self.error(it.args[2], "a range step must be the literal 1 or -1")
            step = s
        if len(it.args) == 1:
            lower: Bound = Affine.constant(0)
            upper = self.bound(it.args[0], outer)
        else:
            lower = self.bound(it.args[0], outer)
            upper = self.bound(it.args[1], outer)
        scope.iterators.append(var)
        try:
            body = self.body(st.body, scope)
        finally:
            scope.iterators.pop()
        return Loop(var, lower, upper, step, body, st.lineno)

    def assignment(self, st: ast.stmt, target: ast.expr, op: str, value: ast.expr, scope: _Scope,
                   declared: DType | None) -> Assign:
        rhs = self.expression(value, scope)
        if isinstance(target, ast.Name):
            name = target.id
            if name in self.sizes or name in self.size_params:
                raise self.error(target, f"cannot assign to size '{name}': sizes are fixed per dataset")
            if name in scope.iterators:
                raise self.error(target, f"cannot assign to loop variable '{name}'")
            arr = self.arrays.get(name) or scope.locals.get(name)
            if arr is not None and declared is not None and arr.dtype is not declared:
                raise self.error(target, f"'{name}' is already declared with type {arr.dtype.short}")
            if arr is None:
                if op != "=":
                    raise self.error(target, f"unknown name '{name}' (assign it before updating it)")
                self.check_name(target, name)
                dt = declared or (DType.F64 if rhs.dtype.is_float else rhs.dtype)
                arr = Array(name, dt, (), (), "local")
                scope.locals[name] = arr
            if arr.rank:
                raise self.error(target, f"array '{name}' needs {arr.rank} subscripts")
            lhs = Load(name, (), arr.dtype)
        elif isinstance(target, ast.Subscript):
            lhs = self.subscript(target, scope)
        else:
            raise self.error(target, "the target of an assignment is an array element or a scalar")
        return Assign(lhs, op, self.coerce(rhs, lhs.dtype).expr, st.lineno)

    # -- affine forms ------------------------------------------------------------------------------
    def affine(self, node: ast.expr, iterators: set[str], what: str) -> Affine:
        """An integer affine form in `iterators` and sizes; anything else is an error.  A product
        with a factor of sizes alone is affine at the sizes the program is parsed for (a flat
        array `f64[N * M]` indexed `A[i * M + k]`): that factor is taken at its value."""
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and \
                not isinstance(node.value, bool):
            return Affine.constant(node.value)
        if isinstance(node, ast.Name):
            if node.id in iterators or node.id in self.size_params:
                return Affine.of(node.id)
            if node.id in self.arrays:
                raise self.error(node, f"non-affine {what}: '{node.id}' is data, not a loop "
                                       "variable or size")
            raise self.error(node, f"unknown name '{node.id}' in {what}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            a = self.affine(node.operand, iterators, what)
            return a.scale(-1) if isinstance(node.op, ast.USub) else a
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            l = self.affine(node.left, iterators, what)
            r = self.affine(node.right, iterators, what)
            return l + r if isinstance(node.op, ast.Add) else l - r
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            left, right = self.affine(node.left, iterators, what), self.affine(node.right, iterators, what)
            product = left.times(right) or left.times(self.at_sizes(right)) or self.at_sizes(left).times(right)
            if product is not None:
                return product
            raise self.error(node, f"non-affine {what}: product of '{ast.unparse(node.left)}' and "
                                   f"'{ast.unparse(node.right)}'")
        if isinstance(node, ast.Subscript):
            raise self.error(node, f"non-affine {what}: '{ast.unparse(node)}' reads data")
        if isinstance(node, ast.Call):
            raise self.error(node, f"non-affine {what}: call '{ast.unparse(node.func)}' "
                                   "(only min/max in loop bounds)")
        raise self.error(node, f"non-affine {what}: '{ast.unparse(node)}'")

    def at_sizes(self, a: Affine) -> Affine:
        """`a` with its sizes replaced by their values (unchanged if it names anything else)."""
        if all(n in self.sizes for n in a.names()):
            return a.substitute(self.sizes)
        return a

    def bound(self, node: ast.expr, iterators: set[str]) -> Bound:
        """An affine loop bound, possibly with min/max anywhere in it (`min(i, j) + 1`): sums
        and constant multiples distribute over min/max (`min(a, b) + c = min(a + c, b + c)`,
        `-min(a, b) = max(-a, -b)`), so the result is a min/max tree of affine forms."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("min", "max"):
            if node.keywords or len(node.args) < 2:
                raise self.error(node, f"{node.func.id}() in a bound takes two or more arguments")
            return MinMax(node.func.id, tuple(self.bound(a, iterators) for a in node.args))
        if not _has_min_max(node):
            return self.affine(node, iterators, "loop bound")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            b = self.bound(node.operand, iterators)
            return _scale_bound(b, -1) if isinstance(node.op, ast.USub) else b
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            left, right = self.bound(node.left, iterators), self.bound(node.right, iterators)
            if isinstance(node.op, ast.Sub):
                right = _scale_bound(right, -1)
            return _add_bounds(left, right)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            left, right = self.bound(node.left, iterators), self.bound(node.right, iterators)
            if isinstance(left, Affine) and left.is_constant:
                return _scale_bound(right, left.const)
            if isinstance(right, Affine) and right.is_constant:
                return _scale_bound(left, right.const)
        raise self.error(node, f"non-affine loop bound: '{ast.unparse(node)}' (min/max combine with sums and "
                               "constant factors only)")

    def condition(self, node: ast.expr, iterators: set[str]) -> Condition:
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            return Condition(op, tuple(self.condition(v, iterators) for v in node.values))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return Condition("not", (self.condition(node.operand, iterators),))
        if isinstance(node, ast.Compare):
            leaves = []
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                c = CMP_OPS.get(type(op))
                if c is None:
                    raise self.error(node, f"unsupported comparison '{OP_SPELLING.get(type(op), '?')}'")
                leaves.append(Condition("cmp", (self.affine(left, iterators, "condition"),
                                                self.affine(right, iterators, "condition")), c))
                left = right
            return leaves[0] if len(leaves) == 1 else Condition("and", tuple(leaves))
        raise self.error(node, f"an 'if' condition must compare affine expressions of loop variables "
                               f"and sizes, not '{ast.unparse(node)}'")

    # -- value expressions -------------------------------------------------------------------------
    def subscript(self, node: ast.Subscript, scope: _Scope) -> Load:
        if not isinstance(node.value, ast.Name):
            raise self.error(node, "only arrays can be subscripted: A[i, j]")
        name = node.value.id
        arr = self.arrays.get(name) or scope.locals.get(name)
        if arr is None:
            raise self.error(node.value, f"unknown array '{name}'")
        if isinstance(node.slice, ast.Slice):
            raise self.error(node, "slices are not supported")
        idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if isinstance(node.value, ast.Subscript):
            raise self.error(node, "write A[i, j], not A[i][j]")
        if arr.rank == 0:
            raise self.error(node, f"'{name}' is a scalar and takes no subscripts")
        if len(idx) != arr.rank:
            raise self.error(node, f"array '{name}' has {arr.rank} dimensions but {len(idx)} "
                                   f"subscript{'s' if len(idx) != 1 else ''} given")
        its = set(scope.iterators)
        index = tuple(self.affine(i, its, "subscript") for i in idx)
        return Load(name, index, arr.dtype)

    def expression(self, node: ast.expr, scope: _Scope) -> _Typed:
        """A typed value expression (literals typed weakly, see `unify`)."""
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise self.error(node, f"unsupported constant {v!r}")
            return _Typed(Const(v, DType.F64 if isinstance(v, float) else DType.I32), True)
        if isinstance(node, ast.Name):
            return self.name(node, scope)
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Subscript):
                raise self.error(node, "write A[i, j], not A[i][j]")
            return _Typed(self.subscript(node, scope))
        if isinstance(node, ast.UnaryOp):
            return self.unary(node, scope)
        if isinstance(node, ast.BinOp):
            op = BIN_OPS.get(type(node.op))
            if op is None:
                raise self.error(node, f"unsupported operator '{OP_SPELLING.get(type(node.op), '?')}'")
            return self.arith(node, op, self.expression(node.left, scope),
                              self.expression(node.right, scope))
        if isinstance(node, ast.Compare):
            return self.compare(node, scope)
        if isinstance(node, ast.BoolOp):
            op = "&&" if isinstance(node.op, ast.And) else "||"
            vals = [self.expression(v, scope).expr for v in node.values]
            out = vals[0]
            for v in vals[1:]:
                out = Binary(op, out, v, DType.I32)
            return _Typed(out)
        if isinstance(node, ast.IfExp):
            cond = self.expression(node.test, scope)
            a, b = self.unify(self.expression(node.body, scope), self.expression(node.orelse, scope))
            dt = DType.promote(a.dtype, b.dtype)
            return _Typed(Select(cond.expr, a.expr, b.expr, dt), a.weak and b.weak)
        if isinstance(node, ast.Call):
            return self.call(node, scope)
        if isinstance(node, (ast.List, ast.Tuple, ast.Dict, ast.Set)):
            raise self.error(node, "containers are not supported in expressions")
        if isinstance(node, ast.Attribute):
            raise self.error(node, f"unsupported attribute access '{ast.unparse(node)}'")
        raise self.error(node, f"unsupported expression '{ast.unparse(node)}'")

    def name(self, node: ast.Name, scope: _Scope) -> _Typed:
        """A loop variable, a size, or a scalar read."""
        n = node.id
        if n in scope.iterators:
            return _Typed(IterRef(n))
        if n in self.size_params:
            return _Typed(SizeRef(n))
        arr = self.arrays.get(n) or scope.locals.get(n)
        if arr is None:
            raise self.error(node, f"unknown name '{n}'")
        if arr.rank:
            raise self.error(node, f"array '{n}' used without subscripts")
        return _Typed(Load(n, (), arr.dtype))

    def unary(self, node: ast.UnaryOp, scope: _Scope) -> _Typed:
        if isinstance(node.op, ast.UAdd):
            return self.expression(node.operand, scope)
        x = self.expression(node.operand, scope)
        if isinstance(node.op, ast.USub):
            if isinstance(x.expr, Const):
                return _Typed(Const(-x.expr.value, x.dtype), x.weak)
            return _Typed(Unary("-", x.expr, x.dtype), x.weak)
        if isinstance(node.op, ast.Not):
            return _Typed(Unary("!", x.expr, DType.I32))
        raise self.error(node, f"unsupported operator '{OP_SPELLING.get(type(node.op), '?')}'")

    def compare(self, node: ast.Compare, scope: _Scope) -> _Typed:
        """A (chained) comparison: `a < b < c` is `a < b && b < c`."""
        terms = [self.expression(node.left, scope)] + [self.expression(c, scope) for c in node.comparators]
        parts = []
        for k, op in enumerate(node.ops):
            c = CMP_OPS.get(type(op))
            if c is None:
                raise self.error(node, f"unsupported comparison '{OP_SPELLING.get(type(op), '?')}'")
            l, r = self.unify(terms[k], terms[k + 1])
            parts.append(Binary(c, l.expr, r.expr, DType.I32))
        out = parts[0]
        for p in parts[1:]:
            out = Binary("&&", out, p, DType.I32)
        return _Typed(out)

    def call(self, node: ast.Call, scope: _Scope) -> _Typed:
        if not isinstance(node.func, ast.Name):
            raise self.error(node, f"unsupported call '{ast.unparse(node.func)}'")
        fn = node.func.id
        if node.keywords:
            raise self.error(node, f"{fn}() takes no keyword arguments")
        args = [self.expression(a, scope) for a in node.args]
        cast = DType.by_name(fn)
        if cast is not None:
            if len(args) != 1:
                raise self.error(node, f"the cast {fn}() takes one argument")
            return _Typed(Cast(args[0].expr, cast))
        if fn not in MATH_CALLS:
            raise self.error(node, f"unsupported call '{fn}' (allowed: sqrt, exp, pow, abs, min, max "
                                   "and casts f64(), f32(), i64(), i32(), i8())")
        if len(args) != MATH_CALLS[fn]:
            raise self.error(node, f"{fn}() takes {MATH_CALLS[fn]} argument"
                                   f"{'s' if MATH_CALLS[fn] > 1 else ''}, {len(args)} given")
        if fn in ("sqrt", "exp", "pow"):
            # libm: float arguments stay float (expf, powf); anything else is computed in double.
            if len(args) == 2:
                args = list(self.unify(*args))
            args = [self.coerce(a, DType.F64) if a.weak else a for a in args]
            dt = DType.F32 if all(a.dtype is DType.F32 for a in args) else DType.F64
            exprs = tuple(a.expr if a.dtype is dt else Cast(a.expr, dt) for a in args)
            return _Typed(Call(fn, exprs, dt))
        if fn == "abs":
            return _Typed(Call(fn, (args[0].expr,), DType.promote(args[0].dtype, DType.I32)
                               if not args[0].dtype.is_float else args[0].dtype), args[0].weak)
        a, b = self.unify(*args)
        return _Typed(Call(fn, (a.expr, b.expr), DType.promote(a.dtype, b.dtype)), a.weak and b.weak)

    def arith(self, node: ast.BinOp, op: str, l: _Typed, r: _Typed) -> _Typed:
        if op in ("//", "%"):
            if l.dtype.is_float or r.dtype.is_float:
                raise self.error(node, f"'{op}' needs integer operands (cast with i32(...) first)")
            l, r = self.unify(l, r)
            return _Typed(Binary(op, l.expr, r.expr, DType.promote(l.dtype, r.dtype)), l.weak and r.weak)
        l, r = self.unify(l, r)
        dt = DType.promote(l.dtype, r.dtype)
        if op == "/" and not dt.is_float:
            # Python's true division of two integers: compute it in double, as the program says.
            return _Typed(Binary("/", Cast(l.expr, DType.F64), r.expr, DType.F64))
        return _Typed(Binary(op, l.expr, r.expr, dt), l.weak and r.weak)

    def unify(self, a: _Typed, b: _Typed) -> tuple[_Typed, _Typed]:
        """Give a weak literal side the type of its partner (PolyBench's SCALAR_VAL rule)."""
        if a.weak and not b.weak:
            return self.coerce(a, _weak_target(a.dtype, b.dtype)), b
        if b.weak and not a.weak:
            return a, self.coerce(b, _weak_target(b.dtype, a.dtype))
        return a, b

    def coerce(self, t: _Typed, dt: DType) -> _Typed:
        if not t.weak or t.dtype is dt:
            return t
        return _Typed(_retype(t.expr, dt), False)


def _has_min_max(node: ast.expr) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("min", "max")
               for n in ast.walk(node))


def _scale_bound(b: Bound, k: int) -> Bound:
    """k * b: a negative factor turns min into max."""
    if isinstance(b, Affine):
        return b.scale(k)
    op = b.op if k >= 0 else {"min": "max", "max": "min"}[b.op]
    return MinMax(op, tuple(_scale_bound(a, k) for a in b.args))


def _add_bounds(a: Bound, b: Bound) -> Bound:
    """a + b, with the sum pushed inside min/max."""
    if isinstance(a, MinMax):
        return MinMax(a.op, tuple(_add_bounds(x, b) for x in a.args))
    if isinstance(b, MinMax):
        return MinMax(b.op, tuple(_add_bounds(a, x) for x in b.args))
    return a + b


def _weak_target(weak: DType, other: DType) -> DType:
    if weak.is_float and not other.is_float:
        return DType.F64
    return other


def _retype(e: Expr, dt: DType) -> Expr:
    """Re-type a tree made only of weak literals (and arithmetic on them)."""
    if isinstance(e, Const):
        return Const(float(e.value) if dt.is_float else e.value, dt)
    if isinstance(e, Unary):
        return Unary(e.op, _retype(e.operand, dt), dt)
    if isinstance(e, Binary) and e.op in "+-*/":
        return Binary(e.op, _retype(e.left, dt), _retype(e.right, dt), dt)
    if isinstance(e, Select):
        return Select(e.cond, _retype(e.then, dt), _retype(e.orelse, dt), dt)
    if isinstance(e, Call) and e.fn in ("min", "max", "abs"):
        return Call(e.fn, tuple(_retype(a, dt) for a in e.args), dt)
    return e


def _int_literal(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _int_literal(node.operand)
        return None if v is None else -v
    return None
