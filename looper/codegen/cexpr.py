"""Printing IR expressions and assignments as C, with minimal but order-preserving parentheses."""
from __future__ import annotations

import contextlib
import contextvars

from ..ir.rows import is_iterator_name
from ..ir.program import (
    Affine, Assign, Binary, Bound, Call, Cast, Const, DType, Expr, IterRef, Load, MinMax, Select,
    SizeRef, Unary,
)

# Identifiers a C program cannot use for its own globals (keywords and what the harness' headers
# declare).  Program variables with these names get a trailing underscore in the C text.
C_TAKEN = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict",
    "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
    "unsigned", "void", "volatile", "while", "main", "kernel", "init_array", "dump_arrays",
    "floord", "min", "max", "acos", "asin", "atan", "atan2", "cos", "sin", "tan", "cosh", "sinh",
    "tanh", "exp", "log", "log10", "pow", "sqrt", "ceil", "floor", "fabs", "fmod", "frexp", "ldexp",
    "modf", "abs", "labs", "exit", "free", "malloc", "calloc", "printf", "fprintf", "stderr",
    "stdout", "time", "clock", "rand", "remove", "rename", "memcpy", "memset", "atoi", "y0", "y1",
    "yn", "j0", "j1", "jn", "gamma", "round", "trunc", "erf", "signbit", "isnan", "isinf", "NULL",
}

_PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, "<=": 4, ">": 4, ">=": 4,
         "+": 5, "-": 5, "*": 6, "/": 6, "//": 6, "%": 6}
_UNARY = 7
_ATOM = 9


_VERBATIM: contextvars.ContextVar = contextvars.ContextVar("looper_verbatim_names", default=None)
# array elements printed as the local variable that holds them (`codegen.scalars`): C text -> name
_REPLACED: contextvars.ContextVar = contextvars.ContextVar("looper_replaced_elements", default=None)


@contextlib.contextmanager
def replaced_elements(names: dict[str, str]):
    """Within this block `c_access` prints an element whose C text is a key of `names` as the
    local variable named by its value (`codegen.scalars`); an empty dict changes nothing."""
    token = _REPLACED.set({**(_REPLACED.get() or {}), **names} if names else _REPLACED.get())
    try:
        yield
    finally:
        _REPLACED.reset(token)


@contextlib.contextmanager
def verbatim_names(users: dict[str, str] | None = None, flat: dict[str, tuple[int, ...]] | None = None):
    """Within this block `c_name` prints each program variable under the user's own name (the
    name itself, or `users[name]`): code pasted into the user's C function names the variables as
    declared there (looper's iterators get a prefix instead).  An array in `flat` is the user's
    flat array (a pointer) seen in logical dimensions with these strides: `c_access` indexes the
    user's pointer through a pointer to rows of the inner extents (`((double (*)[1000])A)[i][j]`)."""
    token = _VERBATIM.set((dict(users or {}), dict(flat or {})))
    try:
        yield
    finally:
        _VERBATIM.reset(token)


def c_name(name: str) -> str:
    """The C identifier of a program variable (AST loop iterators are c0, c1, ...: never shadow them)."""
    verbatim = _VERBATIM.get()
    if verbatim is not None:
        return verbatim[0].get(name, name)
    if name in C_TAKEN or is_iterator_name(name):
        return name + "_"
    return name


def c_const(c: Const) -> str:
    if c.dtype.is_float:
        text = repr(float(c.value))
        if "inf" in text or "nan" in text:
            raise ValueError(f"constant {c.value} is not finite")
        return text + ("f" if c.dtype is DType.F32 else "")
    return str(int(c.value)) + ("L" if c.dtype is DType.I64 else "")


def c_affine(a: Affine | Bound, env: dict[str, str]) -> str:
    return a.render(env)


def c_access(load: Load, env: dict[str, str]) -> str:
    verbatim = _VERBATIM.get()
    strides = verbatim[1].get(load.array) if verbatim is not None else None
    if strides is not None:
        text = _c_flat_access(load, strides, env)
    else:
        text = c_name(load.array) + "".join(f"[{c_affine(i, env)}]" for i in load.index)
    replaced = _REPLACED.get()
    return replaced.get(text, text) if replaced else text


def _c_flat_access(load: Load, strides: tuple[int, ...], env: dict[str, str]) -> str:
    """An element of the user's flat array seen in logical dimensions of these strides (outermost
    first).  Printed through a pointer to rows, `((double (*)[1000])A)[i][j]`, rather than as
    `A[1000*i + j]`: gcc's vectorizer finds the unit stride of the inner index in the former, while
    in the latter the flat index of a skewed or tiled nest defeats it (a time-tiled Jacobi on
    `malloc`ed arrays ran 2.7x slower flat than through rows)."""
    name = c_name(load.array)
    inner = [outer // s for outer, s in zip(strides, strides[1:])]
    if len(strides) > 1 and strides[-1] == 1 and all(d * s == o for d, s, o in zip(inner, strides[1:], strides)):
        rows = "".join(f"[{d}]" for d in inner)
        return f"(({load.dtype.ctype} (*){rows}){name})" + "".join(f"[{c_affine(i, env)}]" for i in load.index)
    terms: dict[str, int] = {}
    for index, stride in zip(load.index, strides):
        for n, c in index.terms:
            terms[n] = terms.get(n, 0) + c * stride
    const = sum(index.const * stride for index, stride in zip(load.index, strides))
    flat = Affine(tuple((n, c) for n, c in terms.items() if c), const)
    return f"{name}[{c_affine(flat, env)}]"


def _c(e: Expr, env: dict[str, str]) -> tuple[str, int]:
    """C text of `e` and the precedence of its top operator."""
    if isinstance(e, Const):
        text = c_const(e)
        return text, (_UNARY if text.startswith("-") else _ATOM)
    if isinstance(e, (IterRef, SizeRef)):
        v = env.get(e.name, e.name)
        return v, (_ATOM if v.isidentifier() or v.isdigit() or v.startswith("(") else _UNARY - 2)
    if isinstance(e, Load):
        return c_access(e, env), _ATOM
    if isinstance(e, Unary):
        text, p = _c(e.operand, env)
        if p < _UNARY or (e.op == "-" and text.startswith("-")):
            text = f"({text})"
        return f"{e.op}{text}", _UNARY
    if isinstance(e, Cast):
        text, p = _c(e.operand, env)
        if p < _UNARY:
            text = f"({text})"
        return f"({e.dtype.ctype}){text}", _UNARY
    if isinstance(e, Binary):
        p = _PREC[e.op]
        lt, lp = _c(e.left, env)
        rt, rp = _c(e.right, env)
        if lp < p:
            lt = f"({lt})"
        if rp <= p:  # keep the program's association: a + (b + c) is not (a + b) + c in floating point
            rt = f"({rt})"
        op = "/" if e.op == "//" else e.op
        return f"{lt} {op} {rt}", p
    if isinstance(e, Select):
        ct, cp = _c(e.cond, env)
        at, _ = _c(e.then, env)
        bt, _ = _c(e.orelse, env)
        return f"({ct} ? {at} : {bt})", _ATOM
    if isinstance(e, Call):
        args = [_c(a, env)[0] for a in e.args]
        return f"{_c_function(e)}({', '.join(args)})", _ATOM
    raise TypeError(f"not an expression: {e!r}")


def _c_function(e: Call) -> str:
    f32 = e.dtype is DType.F32
    if e.fn in ("sqrt", "exp", "pow"):
        return e.fn + ("f" if f32 else "")
    if e.fn == "abs":
        if e.dtype.is_float:
            return "fabsf" if f32 else "fabs"
        return "labs" if e.dtype is DType.I64 else "abs"
    return e.fn  # min / max: the harness' macros


def c_expr(e: Expr, env: dict[str, str] | None = None) -> str:
    return _c(e, env or {})[0]


def c_assign(a: Assign, env: dict[str, str] | None = None) -> str:
    env = env or {}
    return f"{c_access(a.target, env)} {a.op} {c_expr(a.value, env)}"


def c_bound(b: Bound, env: dict[str, str] | None = None) -> str:
    return b.render(env or {})


__all__ = ["c_name", "verbatim_names", "replaced_elements", "c_expr", "c_assign", "c_access", "c_bound", "c_const", "MinMax"]
