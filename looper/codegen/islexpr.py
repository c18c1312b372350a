"""isl AST expressions printed as C, with minimal parentheses."""
from __future__ import annotations

import islpy as isl

_OP = isl.ast_expr_op_type
_BIN = {
    _OP.add: ("+", 5), _OP.sub: ("-", 5), _OP.mul: ("*", 6), _OP.div: ("/", 6),
    _OP.pdiv_q: ("/", 6), _OP.pdiv_r: ("%", 6), _OP.zdiv_r: ("%", 6),
    _OP.eq: ("==", 3), _OP.le: ("<=", 4), _OP.lt: ("<", 4), _OP.ge: (">=", 4), _OP.gt: (">", 4),
    _OP.and_: ("&&", 2), _OP.and_then: ("&&", 2), _OP.or_: ("||", 1), _OP.or_else: ("||", 1),
}
ATOM = 9


def _same(name: str) -> str:
    return name


def isl_expr(e: isl.AstExpr, rename=_same) -> tuple[str, int]:
    """C text of an isl AST expression and the precedence of its top operator (`rename` maps
    loop iterator names to the C names they are printed with)."""
    t = e.get_type()
    if t == isl.ast_expr_type.id:
        return rename(e.get_id().get_name()), ATOM
    if t == isl.ast_expr_type.int:
        v = e.get_val().to_python()
        return str(v), (ATOM if v >= 0 else 7)
    op = e.get_op_type()
    args = [e.get_op_arg(k) for k in range(e.get_op_n_arg())]
    if op in _BIN:
        sym, p = _BIN[op]
        lt, lp = isl_expr(args[0], rename)
        rt, rp = isl_expr(args[1], rename)
        if lp < p:
            lt = f"({lt})"
        if rp <= p:
            rt = f"({rt})"
        return f"{lt} {sym} {rt}", p
    if op == _OP.minus:
        t0, p0 = isl_expr(args[0], rename)
        return (f"-({t0})" if p0 < ATOM else f"-{t0}"), 7
    if op in (_OP.min, _OP.max):
        name = "min" if op == _OP.min else "max"
        out = isl_expr(args[0], rename)[0]
        for a in args[1:]:
            out = f"{name}({out}, {isl_expr(a, rename)[0]})"
        return out, ATOM
    if op == _OP.fdiv_q:
        return f"floord({isl_expr(args[0], rename)[0]}, {isl_expr(args[1], rename)[0]})", ATOM
    if op in (_OP.cond, _OP.select):
        return f"({isl_expr(args[0], rename)[0]} ? {isl_expr(args[1], rename)[0]} : {isl_expr(args[2], rename)[0]})", ATOM
    if op == _OP.call:
        return f"{isl_expr(args[0], rename)[0]}({', '.join(isl_expr(a, rename)[0] for a in args[1:])})", ATOM
    raise NotImplementedError(f"isl AST operator {op}")


def isl_c(e: isl.AstExpr, rename=_same) -> str:
    """C text of an isl AST expression (`rename`: see `isl_expr`)."""
    return isl_expr(e, rename)[0]
