"""Lowering a scop's C statements to looper's syntax tree: the `Loop` / `Guard` / `Assign` nodes
the Python front end builds, which `ir.extract` turns into polyhedral statements.

The subset is the polyhedral one: `for` loops with unit steps and bounds affine in enclosing loop
variables and sizes (min/max written as conditional expressions, `a < b ? a : b`), `if` on affine
conditions, assignments (`=`, `+=`, `-=`, `*=`, `/=`, chains `a = b = e`, `x++`) to array elements
with affine subscripts or to scalars, and expressions of arithmetic, comparisons, conditional
expressions, casts and the math functions the IR knows.  "Affine" means affine once the sizes are
known (`polynomial`: `i*lda + j`).  Expressions keep C's meaning: each node carries the type C
gives it, and printed back they are the same C.

Names: a loop variable is one of the scop's `for` loops' variables; a size is an integer variable
that a bound, a condition or a subscript uses and that the scop never writes; every other name is
data (an array, a pointer subscripted like one, or a scalar), found among the declarations
visible at the scop.  A pointer keeps its value in the scop (no `p++`, no `p = q`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pycparser import c_ast

from ...errors import LooperSyntaxError
from ...ir.program import (
    Affine, Assign, Binary, Bound, Call, Cast, Condition, Const, DType, Expr, Guard, IterRef, Load,
    Loop, MinMax, Node, Select, SizeRef, Unary,
)
from .ctype import CType, TypeTable
from .polynomial import Polynomial
from .scops import Locator, ScopSite, Symbol

# C functions the IR has, as (IR function, the C type of its arguments and result).
MATH = {
    "sqrt": ("sqrt", DType.F64), "sqrtf": ("sqrt", DType.F32), "exp": ("exp", DType.F64),
    "expf": ("exp", DType.F32), "pow": ("pow", DType.F64), "powf": ("pow", DType.F32),
    "fabs": ("abs", DType.F64), "fabsf": ("abs", DType.F32), "abs": ("abs", DType.I32),
    "labs": ("abs", DType.I64),
}
ARITY = {"sqrt": 1, "exp": 1, "pow": 2, "abs": 1}
OTHER_MATH = {"log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh",
              "cosh", "tanh", "floor", "ceil", "round", "trunc", "fmod", "fmin", "fmax", "hypot", "cbrt"}
ARITH = {"+", "-", "*", "/", "%"}
COMPARE = {"<", "<=", ">", ">=", "==", "!="}
ASSIGN_OPS = {"=", "+=", "-=", "*=", "/="}
_STATEMENT_NAMES = {
    c_ast.While: "'while' loop", c_ast.DoWhile: "'do ... while' loop", c_ast.Goto: "'goto'",
    c_ast.Label: "label", c_ast.Break: "'break'", c_ast.Continue: "'continue'", c_ast.Return: "'return'",
    c_ast.Switch: "'switch'", c_ast.Case: "'case'", c_ast.Default: "'default'",
}


@dataclass
class ScopTree:
    """A lowered scop: its syntax tree and the names it uses, each in order of first use."""

    nodes: tuple[Node, ...]
    iterators: dict[str, Symbol | None]  # loop variables (None: declared in the for itself)
    sizes: dict[str, Symbol]
    data: dict[str, Symbol]  # arrays and scalars
    written: set[str] = field(default_factory=set)


class ScopLowering:
    """Lowers one scop; every construct outside the subset is a `FILE:LINE:COL` error."""

    def __init__(self, site: ScopSite, types: TypeTable, loc: Locator):
        self.site = site
        self.types = types
        self.loc = loc
        self.active: list[str] = []  # enclosing loop variables, outermost first
        self.loop_types: dict[str, DType] = {}
        self.iterators: dict[str, Symbol | None] = {}
        self.affine_names: set[str] = set()
        self.written: set[str] = set()
        self.first_write: dict[str, object] = {}  # name -> the node of its first write
        self.sizes: dict[str, Symbol] = {}
        self.data: dict[str, Symbol] = {}
        self.out: list[Node] = []

    def error(self, node, message: str, token: str | None = None):
        return self.loc.error(node, message, token)

    # -- driver ----------------------------------------------------------------------------------
    def run(self) -> ScopTree:
        for item in self.site.items:
            self._survey(item)
        nodes = self.statements(self.site.items)
        if not any(True for _ in _assignments(nodes)):
            raise LooperSyntaxError("the scop has no statements", self.loc.pp.path, self.site.begin_line)
        return ScopTree(tuple(nodes), dict(self.iterators), dict(self.sizes), dict(self.data),
                        set(self.written))

    def _survey(self, node) -> None:
        """First pass: loop variables, names used in affine positions, names written."""
        if node is None:
            return
        if isinstance(node, c_ast.For):
            var = _loop_variable(node.init)
            if var is not None:
                self.iterators.setdefault(var, self.site.symbols.get(var))
            for part in (node.init, node.cond):
                self._affine_ids(part)
            self._survey(node.stmt)
            return
        if isinstance(node, c_ast.If):
            self._affine_ids(node.cond)
        if isinstance(node, c_ast.ArrayRef):
            self._affine_ids(node.subscript)
            sym = self.site.symbols.get(_base_name(node) or "")
            if sym is not None:  # the extents of a variable-length array are sizes too
                for dim in sym.ctype.dims:
                    self._affine_ids(dim)
        if isinstance(node, c_ast.Assignment):
            base = _base_name(node.lvalue)
            if base:
                self.written.add(base)
                self.first_write.setdefault(base, node)
        if isinstance(node, c_ast.UnaryOp) and node.op in ("++", "--", "p++", "p--"):
            base = _base_name(node.expr)
            if base:
                self.written.add(base)
                self.first_write.setdefault(base, node)
        for _, child in node.children():
            self._survey(child)

    def _affine_ids(self, node) -> None:
        if node is None:
            return
        if isinstance(node, c_ast.ID):
            self.affine_names.add(node.name)
        elif isinstance(node, c_ast.ArrayRef):
            self._affine_ids(node.subscript)
        elif isinstance(node, c_ast.FuncCall):
            return
        else:
            for _, child in node.children():
                self._affine_ids(child)

    # -- statements ------------------------------------------------------------------------------
    def statements(self, items) -> list[Node]:
        out: list[Node] = []
        for item in items:
            out.extend(self.statement(item))
        return out

    def statement(self, node) -> list[Node]:
        if isinstance(node, c_ast.Compound):
            return self.statements(node.block_items or [])
        if isinstance(node, c_ast.EmptyStatement):
            return []
        if isinstance(node, c_ast.For):
            return [self.loop(node)]
        if isinstance(node, c_ast.If):
            cond = self.condition(node.cond)
            then = tuple(self.statement(node.iftrue)) if node.iftrue is not None else ()
            orelse = tuple(self.statement(node.iffalse)) if node.iffalse is not None else ()
            return [Guard(cond, then, orelse, node.coord.line)]
        if isinstance(node, c_ast.Assignment):
            return self.assignment(node)
        if isinstance(node, c_ast.UnaryOp) and node.op in ("++", "--", "p++", "p--"):
            self._check_not_pointer(node.expr, node)
            target = self.target(node.expr)
            op = "+=" if "+" in node.op else "-="
            return [Assign(target, op, Const(1, DType.I32), node.coord.line)]
        if isinstance(node, c_ast.FuncCall):
            name = node.name.name if isinstance(node.name, c_ast.ID) else "?"
            raise self.error(node, f"call to '{name}' as a statement: a call may have side effects, "
                                   "which a scop cannot have", name)
        if isinstance(node, c_ast.Decl):
            raise self.error(node, f"declaration of '{node.name}' inside the scop: declare it before "
                                   "'#pragma scop'", node.name)
        if isinstance(node, c_ast.Pragma):
            raise self.error(node, f"'#pragma {node.string}' inside a scop")
        kind = _STATEMENT_NAMES.get(type(node))
        if kind is not None:
            word = kind.split("'")[1] if "'" in kind else None  # the keyword, to find its column
            raise self.error(node, f"{kind} in a scop: only for loops with affine bounds, if, and "
                                   "assignments are in the polyhedral subset", word)
        if isinstance(node, c_ast.ExprList):
            raise self.error(node, "comma expression as a statement: write one statement per assignment")
        raise self.error(node, f"unsupported statement ({_describe(node)}): a scop holds for loops, if "
                               "and assignments")

    def loop(self, node: c_ast.For) -> Loop:
        var, lower_node, declared = self._loop_init(node)
        if var in self.active:
            raise self.error(node.init, f"loop variable '{var}' shadows an enclosing loop's", var)
        sym = self.site.symbols.get(var)
        ctype = self.types.resolve(declared.type) if declared is not None else (sym.ctype if sym else None)
        if ctype is None:
            raise self.error(node.init, f"unknown identifier '{var}'", var)
        if not ctype.is_integer or ctype.dtype is DType.I8:
            raise self.error(node.init, f"loop variable '{var}' has type {_spell(ctype)}: loop variables "
                                        "are int or long", var)
        if var in self.sizes:
            raise self.error(node.init, f"'{var}' is both a loop variable and a size", var)
        if isinstance(self.site.symbols.get(var), Symbol) and self.site.symbols[var].ctype.is_array:
            raise self.error(node.init, f"'{var}' is an array", var)
        if node.cond is None:
            raise self.error(node, f"the loop over '{var}' has no condition: a scop's loops are bounded")
        if node.next is None:
            raise self.error(node, f"the loop over '{var}' has no increment ('{var}++')")
        step = self._step(node.next, var)
        lower = self.bound(lower_node, f"lower bound of the loop over '{var}'")
        upper = self._upper(node.cond, var, step)
        self.active.append(var)
        self.loop_types[var] = ctype.dtype
        try:
            body = tuple(self.statement(node.stmt)) if node.stmt is not None else ()
        finally:
            self.active.pop()
        return Loop(var, lower, upper, step, body, node.coord.line)

    def _loop_init(self, node: c_ast.For):
        init = node.init
        if isinstance(init, c_ast.Assignment) and init.op == "=" and isinstance(init.lvalue, c_ast.ID):
            return init.lvalue.name, init.rvalue, None
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1 and init.decls[0].init is not None:
            d = init.decls[0]
            return d.name, d.init, d
        raise self.error(init if init is not None else node,
                         "a scop's loop starts as 'for (v = lower; ...)' with one loop variable")

    def _step(self, nxt, var: str) -> int:
        if isinstance(nxt, c_ast.UnaryOp) and isinstance(nxt.expr, c_ast.ID) and nxt.expr.name == var:
            if nxt.op in ("p++", "++"):
                return 1
            if nxt.op in ("p--", "--"):
                return -1
        step = None
        if isinstance(nxt, c_ast.Assignment) and isinstance(nxt.lvalue, c_ast.ID) and nxt.lvalue.name == var:
            if nxt.op in ("+=", "-="):
                k = self._const_int(nxt.rvalue)
                if k is not None:
                    step = k if nxt.op == "+=" else -k
            elif nxt.op == "=":
                a = self._affine_or_none(nxt.rvalue, {var})
                if a is not None and a.coeff(var) == 1 and a.names() == {var}:
                    step = a.const
        if step in (1, -1):
            return step
        if step is not None:
            raise self.error(nxt, f"loop step {step}: looper's loops step by +1 or -1 (rewrite the loop "
                                  f"over a unit-step variable, e.g. {var}' with {var} = {step}*{var}' + lower)",
                             var)
        raise self.error(nxt, f"unsupported loop increment: write '{var}++', '{var}--', '{var} += 1' or "
                              f"'{var} -= 1'", var)

    def _upper(self, cond, var: str, step: int) -> Bound:
        """The exclusive bound in the loop's direction, from `var < e`, `var <= e`, `e > var`, ...
        (conjunctions give min/max)."""
        if isinstance(cond, c_ast.BinaryOp) and cond.op == "&&":
            a = self._upper(cond.left, var, step)
            b = self._upper(cond.right, var, step)
            return MinMax("min" if step > 0 else "max", (a, b))
        if isinstance(cond, c_ast.BinaryOp) and cond.op in ("<", "<=", ">", ">="):
            op, other = None, None
            if _is_id(cond.left, var) and not _mentions_id(cond.right, var):
                op, other = cond.op, cond.right
            elif _is_id(cond.right, var) and not _mentions_id(cond.left, var):
                op, other = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[cond.op], cond.left
            if op is not None:
                b = self.bound(other, f"bound of the loop over '{var}'")
                if step > 0 and op in ("<", "<="):
                    return b if op == "<" else _shift(b, 1)
                if step < 0 and op in (">", ">="):
                    return b if op == ">" else _shift(b, -1)
                raise self.error(cond, f"the condition '{_text(cond)}' does not bound the loop over '{var}' "
                                       f"in the direction it steps ({'+1' if step > 0 else '-1'})", var)
        raise self.error(cond, f"unsupported loop condition: compare '{var}' with an affine bound "
                               f"('{var} < n', '{var} <= n', '{var} >= 0', ...)", var)

    def assignment(self, node: c_ast.Assignment) -> list[Node]:
        self._check_not_pointer(node.lvalue, node)
        if node.op not in ASSIGN_OPS:
            raise self.error(node, f"unsupported assignment operator '{node.op}' (=, +=, -=, *=, /=)")
        out: list[Node] = []
        value = node.rvalue
        if isinstance(value, c_ast.Assignment):  # a = b = e: b = e, then a = b
            if node.op != "=" or value.op != "=":
                raise self.error(node, "a chained assignment is supported with '=' only")
            out.extend(self.assignment(value))
            rhs = self.target(value.lvalue, write=False)
        else:
            rhs = self.expression(value)
        target = self.target(node.lvalue)
        out.append(Assign(target, node.op, rhs, node.coord.line))
        return out

    def target(self, node, write: bool = True) -> Load:
        """An assigned array element or scalar."""
        if isinstance(node, c_ast.ID):
            name = node.name
            if write:
                self._check_writable(node, name)
            sym = self._data_symbol(node, name)
            if not sym.ctype.is_scalar:
                raise self.error(node, f"assignment to '{name}', which is not a scalar or an array element",
                                 name)
            self.data.setdefault(name, sym)
            return Load(name, (), sym.ctype.dtype)
        if isinstance(node, c_ast.ArrayRef):
            load = self.array_ref(node)
            if write:
                self._check_writable(node, load.array)
            return load
        if isinstance(node, c_ast.UnaryOp) and node.op == "*":
            raise self.error(node, f"assignment through the pointer dereference '{_text(node)}': pointer "
                                   "arithmetic is outside the polyhedral subset (subscript the pointer "
                                   "instead: p[i])", "*")
        raise self.error(node, f"unsupported assignment target ({_describe(node)}): an array element "
                               "A[i][j] or a scalar")

    def _check_not_pointer(self, lvalue, node) -> None:
        """A pointer keeps its value in a scop: looper's code indexes the memory it points to when
        the scop starts, and the test that arrays do not overlap looks there."""
        if not isinstance(lvalue, c_ast.ID):
            return
        sym = self.site.symbols.get(lvalue.name)
        if sym is None or not (sym.ctype.pointer or (sym.ctype.is_array and sym.kind == "param")):
            return
        what = "pointer" if sym.ctype.pointer else "array parameter"
        if isinstance(node, c_ast.Assignment) and node.op == "=":
            change = f"assignment to the {what} '{lvalue.name}'"
        else:
            change = f"pointer arithmetic '{_text(node)}'"
        raise self.error(node, f"{change}: a pointer's value must stay the same in a scop (index it "
                               f"instead: {lvalue.name}[i])", lvalue.name)

    def _check_writable(self, node, name: str) -> None:
        if name in self.active:
            raise self.error(node, f"write to loop variable '{name}' inside its loop", name)
        if name in self.iterators:
            raise self.error(node, f"write to '{name}', a loop variable of this scop", name)
        if name in self.affine_names:
            raise self.error(node, f"write to '{name}', which a loop bound, condition or subscript of the "
                                   "scop reads: a scop's sizes are fixed while it runs", name)
        sym = self.site.symbols.get(name)
        if sym is not None and sym.ctype.const:
            raise self.error(node, f"write to '{name}', which is const", name)

    # -- data ------------------------------------------------------------------------------------
    def _data_symbol(self, node, name: str) -> Symbol:
        sym = self.site.symbols.get(name)
        if sym is None:
            raise self.error(node, f"unknown identifier '{name}'", name)
        t = sym.ctype
        if t.pointer and t.dtype is None:
            raise self.error(node, f"'{name}' is a pointer to {_spell(t).removesuffix(' *')}: looper handles "
                                   "pointers to double, float, int, long and char elements (or to arrays of "
                                   "them)", name)
        if t.dtype is None:
            raise self.error(node, f"'{name}' has type {_spell(t)}: looper handles double, float, int, "
                                   "long and char data", name)
        return sym

    def array_ref(self, node: c_ast.ArrayRef) -> Load:
        subs = []
        base = node
        while isinstance(base, c_ast.ArrayRef):
            subs.append(base.subscript)
            base = base.name
        subs.reverse()
        if not isinstance(base, c_ast.ID):
            raise self.error(node, f"subscripted expression '{_text(base)}' is not an array name "
                                   "(pointer arithmetic is outside the polyhedral subset)")
        name = base.name
        if name in self.active or name in self.iterators or name in self.sizes:
            raise self.error(base, f"'{name}' is not an array", name)
        sym = self._data_symbol(base, name)
        t = sym.ctype
        if not t.is_array:
            raise self.error(base, f"'{name}' is a scalar and takes no subscripts", name)
        if len(subs) != len(t.dims) and t.pointer:
            raise self.error(node, f"pointer '{name}' takes {len(t.dims)} subscript"
                                   f"{'s' if len(t.dims) != 1 else ''}, {len(subs)} given", name)
        if len(subs) != len(t.dims):
            raise self.error(node, f"array '{name}' has {len(t.dims)} dimension"
                                   f"{'s' if len(t.dims) != 1 else ''} but {len(subs)} subscript"
                                   f"{'s' if len(subs) != 1 else ''} given", name)
        index = tuple(self.affine(s, "subscript") for s in subs)
        self.data.setdefault(name, sym)
        return Load(name, index, t.dtype)

    def expression(self, node) -> Expr:
        if isinstance(node, c_ast.Constant):
            return self.constant(node)
        if isinstance(node, c_ast.ID):
            return self.name_value(node)
        if isinstance(node, c_ast.ArrayRef):
            return self.array_ref(node)
        if isinstance(node, c_ast.UnaryOp):
            return self.unary(node)
        if isinstance(node, c_ast.BinaryOp):
            return self.binary(node)
        if isinstance(node, c_ast.TernaryOp):
            c = self.expression(node.cond)
            a = self.expression(node.iftrue)
            b = self.expression(node.iffalse)
            return Select(c, a, b, DType.promote(a.dtype, b.dtype))
        if isinstance(node, c_ast.Cast):
            t = self.types.resolve(node.to_type)
            if not t.is_scalar or t.dtype is None:
                raise self.error(node, f"cast to {_spell(t)}: looper casts to double, float, int, long "
                                       "or char")
            return Cast(self.expression(node.expr), t.dtype)
        if isinstance(node, c_ast.FuncCall):
            return self.call(node)
        if isinstance(node, c_ast.Assignment):
            raise self.error(node, "assignment inside an expression (a side effect): assign in a "
                                   "statement of its own")
        if isinstance(node, c_ast.StructRef):
            raise self.error(node, f"struct member access '{_text(node)}' is outside the polyhedral "
                                   "subset")
        raise self.error(node, f"unsupported expression ({_describe(node)})")

    def name_value(self, node: c_ast.ID) -> Expr:
        name = node.name
        if name in self.active:
            return IterRef(name, self.loop_types[name])
        if name in self.iterators:
            raise self.error(node, f"loop variable '{name}' is read outside its loop", name)
        sym = self.site.symbols.get(name)
        if sym is not None and name in self.affine_names and sym.ctype.is_integer \
                and name not in self.written:
            self._size(node, name)
            return SizeRef(name, sym.ctype.dtype)
        sym = self._data_symbol(node, name)
        if sym.ctype.is_array:
            what = "pointer" if sym.ctype.pointer else "array"
            raise self.error(node, f"{what} '{name}' used without subscripts", name)
        self.data.setdefault(name, sym)
        return Load(name, (), sym.ctype.dtype)

    def constant(self, node: c_ast.Constant) -> Const:
        t, text = node.type, node.value
        if t == "string":
            raise self.error(node, "string literal in a scop")
        if t == "char":
            return Const(_char_value(text, self, node), DType.I32)
        if t in ("double", "float"):
            body = text.rstrip("fFlL")
            value = float.fromhex(body) if body.lower().startswith("0x") else float(body)
            return Const(value, DType.F64 if t == "double" else DType.F32)
        if "unsigned" in t:
            raise self.error(node, f"unsigned constant '{text}': looper's integers are signed")
        if t == "long double":
            raise self.error(node, f"long double constant '{text}'")
        value = _int_value(text)
        if value is None:
            raise self.error(node, f"unsupported constant '{text}'")
        wide = "long" in t or value > 2**31 - 1
        return Const(value, DType.I64 if wide else DType.I32)

    def unary(self, node: c_ast.UnaryOp) -> Expr:
        op = node.op
        if op == "+":
            return self.expression(node.expr)
        if op == "-":
            x = self.expression(node.expr)
            if isinstance(x, Const):
                return Const(-x.value, x.dtype)
            return Unary("-", x, DType.promote(x.dtype, DType.I32))
        if op == "!":
            return Unary("!", self.expression(node.expr), DType.I32)
        if op in ("++", "--", "p++", "p--"):
            raise self.error(node, f"'{op.lstrip('p')}' inside an expression (a side effect): write it as "
                                   "a statement of its own")
        if op == "*":
            raise self.error(node, f"pointer dereference '{_text(node)}' is outside the polyhedral subset "
                                   "(subscript the pointer instead: p[0], p[i])", "*")
        if op == "&":
            raise self.error(node, f"address-of '{_text(node)}' is outside the polyhedral subset", "&")
        if op == "sizeof":
            raise self.error(node, "'sizeof' in a scop")
        raise self.error(node, f"unsupported operator '{op}'")

    def binary(self, node: c_ast.BinaryOp) -> Expr:
        op = node.op
        left = self.expression(node.left)
        right = self.expression(node.right)
        if op in ("&&", "||"):
            return Binary(op, left, right, DType.I32)
        if op in COMPARE:
            return Binary(op, left, right, DType.I32)
        if op in ARITH:
            dt = DType.promote(left.dtype, right.dtype)
            if op == "%" and dt.is_float:
                raise self.error(node, "'%' needs integer operands")
            if op == "/" and not dt.is_float:
                op = "//"  # C's integer division (printed '/')
            return Binary(op, left, right, dt)
        raise self.error(node, f"operator '{op}' is not supported in a scop (arithmetic, comparisons, "
                               "&&, || and ?: are)")

    def call(self, node: c_ast.FuncCall) -> Expr:
        if not isinstance(node.name, c_ast.ID):
            raise self.error(node, "call through an expression: only math functions are allowed")
        name = node.name.name
        args = list(node.args.exprs) if node.args is not None else []
        if name not in MATH:
            if name in OTHER_MATH:
                raise self.error(node, f"math function '{name}' is not in looper's IR (it has sqrt, exp, "
                                       "pow, fabs, abs and their float variants)", name)
            raise self.error(node, f"call to '{name}': a scop may call only the math functions sqrt, exp, "
                                   "pow, fabs, abs (and sqrtf, expf, powf, fabsf); other calls may have "
                                   "side effects", name)
        fn, dt = MATH[name]
        if len(args) != ARITY[fn]:
            raise self.error(node, f"{name}() takes {ARITY[fn]} argument{'s' if ARITY[fn] > 1 else ''}, "
                                   f"{len(args)} given", name)
        typed = [self.expression(a) for a in args]
        # C converts each argument to the parameter's type: the IR says so with a cast
        exprs = tuple(a if a.dtype is dt else Cast(a, dt) for a in typed)
        return Call(fn, exprs, dt)

    # -- affine forms ------------------------------------------------------------------------------
    def _size(self, node, name: str) -> None:
        sym = self.site.symbols.get(name)
        if sym is None:
            raise self.error(node, f"unknown identifier '{name}'", name)
        if not sym.ctype.is_integer:
            raise self.error(node, f"'{name}' ({_spell(sym.ctype)}) in an affine expression: loop bounds, "
                                   "conditions and subscripts use loop variables and integer sizes", name)
        if name in self.written:
            raise self.error(self.first_write[name],
                             f"write to '{name}', which a loop bound, condition or subscript of the scop "
                             f"reads (line {node.coord.line}): a scop's sizes stay fixed while it runs", name)
        self.sizes.setdefault(name, sym)

    def affine(self, node, what: str) -> Polynomial:
        """An integer form of the enclosing loop variables and sizes that is affine once the sizes
        are known: each term a loop variable (or none) times sizes (`i*lda + j`, `n*m - 1`)."""
        if isinstance(node, c_ast.Constant):
            v = _int_value(node.value) if node.type in ("int", "long int", "long long int") else None
            if v is None:
                raise self.error(node, f"non-affine {what}: constant '{node.value}' is not an integer")
            return Polynomial.constant(v)
        if isinstance(node, c_ast.ID):
            name = node.name
            if name in self.active:
                return Polynomial.variable(name)
            if name in self.iterators:
                raise self.error(node, f"loop variable '{name}' is read outside its loop", name)
            sym = self.site.symbols.get(name)
            if sym is not None and (sym.ctype.is_array or sym.ctype.pointer):
                raise self.error(node, f"non-affine {what}: '{name}' is an array", name)
            self._size(node, name)
            return Polynomial.size(name)
        if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
            a = self.affine(node.expr, what)
            return a.scale(-1) if node.op == "-" else a
        if isinstance(node, c_ast.Cast):
            t = self.types.resolve(node.to_type)
            if t.is_integer:
                return self.affine(node.expr, what)
        if isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-"):
            a, b = self.affine(node.left, what), self.affine(node.right, what)
            return a + b if node.op == "+" else a - b
        if isinstance(node, c_ast.BinaryOp) and node.op == "*":
            product = self.affine(node.left, what).times(self.affine(node.right, what))
            if product is not None:
                return product
            raise self.error(node, f"non-affine {what}: product of '{_text(node.left)}' and "
                                   f"'{_text(node.right)}'")
        if isinstance(node, c_ast.BinaryOp) and node.op in ("/", "%"):
            a, b = self.affine(node.left, what), self.affine(node.right, what)
            if a.is_constant and b.is_constant and b.const != 0:
                q = abs(a.const) // abs(b.const) * (1 if (a.const >= 0) == (b.const > 0) else -1)
                return Polynomial.constant(q if node.op == "/" else a.const - q * b.const)
            raise self.error(node, f"non-affine {what}: '{node.op}' of '{_text(node.left)}' by "
                                   f"'{_text(node.right)}'")
        if isinstance(node, c_ast.ArrayRef):
            raise self.error(node, f"non-affine {what}: '{_text(node)}' reads data")
        if isinstance(node, c_ast.FuncCall):
            raise self.error(node, f"non-affine {what}: call '{_text(node.name)}'")
        raise self.error(node, f"non-affine {what}: '{_text(node)}'")

    def _affine_or_none(self, node, allowed: set[str]) -> Affine | None:
        """The affine form of `node` over `allowed` names and constants, or None (no errors)."""
        if isinstance(node, c_ast.Constant) and node.type == "int":
            v = _int_value(node.value)
            return None if v is None else Affine.constant(v)
        if isinstance(node, c_ast.ID) and node.name in allowed:
            return Affine.of(node.name)
        if isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-"):
            a, b = self._affine_or_none(node.left, allowed), self._affine_or_none(node.right, allowed)
            if a is None or b is None:
                return None
            return a + b if node.op == "+" else a - b
        if isinstance(node, c_ast.UnaryOp) and node.op == "-":
            a = self._affine_or_none(node.expr, allowed)
            return None if a is None else a.scale(-1)
        return None

    def _const_int(self, node) -> int | None:
        a = self._affine_or_none(node, set())
        return a.const if a is not None else None

    def bound(self, node, what: str) -> Bound:
        """A loop bound: an affine form, or min/max of bounds written `a < b ? a : b`."""
        if isinstance(node, c_ast.TernaryOp) and isinstance(node.cond, c_ast.BinaryOp) \
                and node.cond.op in ("<", "<=", ">", ">="):
            l, r = self.bound(node.cond.left, what), self.bound(node.cond.right, what)
            t, f = self.bound(node.iftrue, what), self.bound(node.iffalse, what)
            smaller_first = node.cond.op in ("<", "<=")
            if (t, f) == (l, r):
                return MinMax("min" if smaller_first else "max", (l, r))
            if (t, f) == (r, l):
                return MinMax("max" if smaller_first else "min", (l, r))
            raise self.error(node, f"{what}: a conditional expression that is not a min or max of its "
                                   "operands")
        return self.affine(node, what)

    def condition(self, node) -> Condition:
        if isinstance(node, c_ast.BinaryOp) and node.op in ("&&", "||"):
            return Condition("and" if node.op == "&&" else "or",
                             (self.condition(node.left), self.condition(node.right)))
        if isinstance(node, c_ast.UnaryOp) and node.op == "!":
            return Condition("not", (self.condition(node.expr),))
        if isinstance(node, c_ast.BinaryOp) and node.op in COMPARE:
            what = "'if' condition (data-dependent control is outside the polyhedral subset)"
            return Condition("cmp", (self.affine(node.left, what), self.affine(node.right, what)), node.op)
        raise self.error(node, f"an 'if' condition must compare affine expressions of loop variables "
                               f"and sizes, not '{_text(node)}'")


def _assignments(nodes):
    for n in nodes:
        if isinstance(n, Assign):
            yield n
        elif isinstance(n, Loop):
            yield from _assignments(n.body)
        elif isinstance(n, Guard):
            yield from _assignments(n.then)
            yield from _assignments(n.orelse)


def _shift(b, k: int):
    if isinstance(b, MinMax):
        return MinMax(b.op, tuple(_shift(a, k) for a in b.args))
    return b + Polynomial.constant(k)


def _loop_variable(init) -> str | None:
    if isinstance(init, c_ast.Assignment) and isinstance(init.lvalue, c_ast.ID):
        return init.lvalue.name
    if isinstance(init, c_ast.DeclList) and init.decls:
        return init.decls[0].name
    return None


def _base_name(node) -> str | None:
    while isinstance(node, c_ast.ArrayRef):
        node = node.name
    return node.name if isinstance(node, c_ast.ID) else None


def _is_id(node, name: str) -> bool:
    return isinstance(node, c_ast.ID) and node.name == name


def _mentions_id(node, name: str) -> bool:
    if isinstance(node, c_ast.ID):
        return node.name == name
    return any(_mentions_id(c, name) for _, c in node.children())


def _int_value(text: str) -> int | None:
    t = text.rstrip("uUlL")
    try:
        if len(t) > 1 and t[0] == "0" and t[1] not in "xXbB":
            return int(t, 8)
        return int(t, 0)
    except ValueError:
        return None


_ESCAPES = {"n": 10, "t": 9, "r": 13, "0": 0, "\\": 92, "'": 39, '"': 34, "a": 7, "b": 8, "f": 12, "v": 11}


def _char_value(text: str, lowering: ScopLowering, node) -> int:
    body = text[1:-1] if text.startswith("'") else None
    if body is not None and len(body) == 1:
        return ord(body)
    if body is not None and len(body) == 2 and body[0] == "\\" and body[1] in _ESCAPES:
        return _ESCAPES[body[1]]
    raise lowering.error(node, f"unsupported character constant {text}")


def _spell(t: CType) -> str:
    if t.pointer:
        return f"{t.spelling} *" if t.dtype is not None else t.spelling
    if t.is_array:
        return f"{t.spelling} array"
    return t.spelling


def _describe(node) -> str:
    return type(node).__name__


def _text(node) -> str:
    """C text of an expression node (for messages)."""
    from pycparser import c_generator
    try:
        return c_generator.CGenerator().visit(node)
    except Exception:  # pragma: no cover - messages only
        return type(node).__name__
