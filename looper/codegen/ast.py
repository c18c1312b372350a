"""isl AST -> cgen nodes: loops, guards, OpenMP and unroll pragmas, statement bodies.

isl builds the loop structure from the lowered schedule; this module only prints it.  A `for`
implements the schedule row its iterator is named after (`ir.rows.row_of_iterator`), which is
how annotations find their loops.
"""
from __future__ import annotations

import cgen
import islpy as isl

from ..ir.program import Program
from ..poly.legality import privatizable
from ..poly.privatize import scalar_flows
from ..ir.rows import row_of_iterator
from ..ir.schedule import Lowered, original
from .balance import cyclic_chunk
from .cexpr import c_assign, c_name

_OP = isl.ast_expr_op_type
_BIN = {
    _OP.add: ("+", 5), _OP.sub: ("-", 5), _OP.mul: ("*", 6), _OP.div: ("/", 6),
    _OP.pdiv_q: ("/", 6), _OP.pdiv_r: ("%", 6), _OP.zdiv_r: ("%", 6),
    _OP.eq: ("==", 3), _OP.le: ("<=", 4), _OP.lt: ("<", 4), _OP.ge: (">=", 4), _OP.gt: (">", 4),
    _OP.and_: ("&&", 2), _OP.and_then: ("&&", 2), _OP.or_: ("||", 1), _OP.or_else: ("||", 1),
}
_ATOM = 9
PARALLEL_LOOP = "looper_parallel"  # annotation of a `for` node that may run in parallel


def _same(name: str) -> str:
    return name


def _expr(e: isl.AstExpr, rename=_same) -> tuple[str, int]:
    t = e.get_type()
    if t == isl.ast_expr_type.id:
        return rename(e.get_id().get_name()), _ATOM
    if t == isl.ast_expr_type.int:
        v = e.get_val().to_python()
        return str(v), (_ATOM if v >= 0 else 7)
    op = e.get_op_type()
    args = [e.get_op_arg(k) for k in range(e.get_op_n_arg())]
    if op in _BIN:
        sym, p = _BIN[op]
        lt, lp = _expr(args[0], rename)
        rt, rp = _expr(args[1], rename)
        if lp < p:
            lt = f"({lt})"
        if rp <= p:
            rt = f"({rt})"
        return f"{lt} {sym} {rt}", p
    if op == _OP.minus:
        t0, p0 = _expr(args[0], rename)
        return (f"-({t0})" if p0 < _ATOM else f"-{t0}"), 7
    if op in (_OP.min, _OP.max):
        name = "min" if op == _OP.min else "max"
        out = _expr(args[0], rename)[0]
        for a in args[1:]:
            out = f"{name}({out}, {_expr(a, rename)[0]})"
        return out, _ATOM
    if op == _OP.fdiv_q:
        return f"floord({_expr(args[0], rename)[0]}, {_expr(args[1], rename)[0]})", _ATOM
    if op in (_OP.cond, _OP.select):
        return (f"({_expr(args[0], rename)[0]} ? {_expr(args[1], rename)[0]} : "
                f"{_expr(args[2], rename)[0]})"), _ATOM
    if op == _OP.call:
        return f"{_expr(args[0], rename)[0]}({', '.join(_expr(a, rename)[0] for a in args[1:])})", _ATOM
    raise NotImplementedError(f"isl AST operator {op}")


def isl_c(e: isl.AstExpr, rename=_same) -> str:
    """C text of an isl AST expression (`rename` maps loop iterator names to C names)."""
    return _expr(e, rename)[0]


class KernelPrinter:
    """Prints one lowered schedule of a program as a list of cgen statements."""

    def __init__(self, lowered: Lowered, balance: bool = True, rename=_same):
        self.lowered = lowered
        self.balance = balance  # deal uneven parallel loops cyclically (`balance.cyclic_chunk`)
        # C name of each loop iterator (`c{row}` is the isl name; code pasted into a user's
        # function gets a prefix no user name has)
        self.rename = rename
        self.program: Program = lowered.program
        self.parallel_dims: dict[str, set[int]] = {}
        for s, k in lowered.parallel:
            self.parallel_dims.setdefault(s, set()).add(k)
        self.in_parallel = 0
        self.iterators: set[str] = set()  # declared once at the top of the kernel function
        self.private = _private_scalars(lowered)

    def ast(self) -> isl.AstNode:
        sched = self.lowered.union_map.intersect_domain(self.program.domains())
        build = isl.AstBuild.from_context(isl.Set("{ : }"))
        return build.node_from_schedule_map(sched)

    def body(self) -> list[cgen.Generable]:
        return self.node(self.ast())

    # -- nodes -----------------------------------------------------------------------------------
    def node(self, n: isl.AstNode) -> list[cgen.Generable]:
        t = n.get_type()
        if t == isl.ast_node_type.block:
            out: list[cgen.Generable] = []
            children = n.block_get_children()
            for k in range(children.n_ast_node()):
                out.extend(self.node(children.get_at(k)))
            return out
        if t == isl.ast_node_type.for_:
            return self.loop(n)
        if t == isl.ast_node_type.if_:
            then = cgen.Block(self.node(n.if_get_then_node()))
            orelse = cgen.Block(self.node(n.if_get_else_node())) if n.if_has_else_node() else None
            return [cgen.If(isl_c(n.if_get_cond(), self.rename), then, orelse)]
        if t == isl.ast_node_type.mark:
            return self.node(n.mark_get_node())
        if t == isl.ast_node_type.user:
            return [self.user(n.user_get_expr())]
        raise NotImplementedError(f"isl AST node {t}")

    def loop(self, n: isl.AstNode) -> list[cgen.Generable]:
        it = n.for_get_iterator().get_id().get_name()
        init = isl_c(n.for_get_init(), self.rename)
        self.iterators.add(it)
        if n.for_is_degenerate():
            return [cgen.Statement(f"{self.rename(it)} = {init}")] + self.node(n.for_get_body())
        row = row_of_iterator(it)
        stmts = _statements(n)
        pragmas: list[cgen.Generable] = []
        # rows name this schedule's loops only (an annotated AST of isl's scheduler has others)
        ours = any(row in self.parallel_dims.get(s, ()) for s in stmts)
        parallel = self.in_parallel == 0 and (_annotation(n) == PARALLEL_LOOP or ours)
        if parallel:
            inner = [self.rename(x) for x in sorted(_iterators(n.for_get_body()), key=row_of_iterator)]
            for (r, loop_stmts), scalars in self.private.items():
                if r == row and stmts <= loop_stmts:
                    inner += [c_name(x) for x in sorted(scalars)]
            private = f" private({', '.join(inner)})" if inner else ""
            chunk = cyclic_chunk(self.lowered, row, stmts) if ours and self.balance else None
            cyclic = f" schedule(static, {chunk})" if chunk else ""
            pragmas.append(cgen.Pragma(f"omp parallel for{cyclic}{private}"))
        factor = max((self.lowered.unroll_factor(s, row) for s in stmts), default=0)
        if factor > 1 and not parallel:  # gcc accepts no unroll pragma on an OpenMP loop
            pragmas.append(cgen.Pragma(f"GCC unroll {factor}"))
        if any((s, row) in self.lowered.vector for s in stmts):
            pragmas.append(cgen.Pragma("GCC ivdep"))
        self.in_parallel += parallel
        try:
            body = cgen.Block(self.node(n.for_get_body()))
        finally:
            self.in_parallel -= parallel
        inc = isl_c(n.for_get_inc(), self.rename)
        name = self.rename(it)
        step = f"{name}++" if inc == "1" else f"{name} += {inc}"
        return pragmas + [cgen.For(f"{name} = {init}", isl_c(n.for_get_cond(), self.rename), step, body)]

    def user(self, call: isl.AstExpr) -> cgen.Generable:
        name = call.get_op_arg(0).get_id().get_name()
        st = self.program.statement(name)
        env = {}
        for k, var in enumerate(st.iterators):
            text, prec = _expr(call.get_op_arg(k + 1), self.rename)
            env[var] = text if prec == _ATOM else f"({text})"
        return cgen.Statement(c_assign(st.body, env))


def _private_scalars(lowered: Lowered) -> dict[tuple[int, frozenset[str]], set[str]]:
    """Per parallel loop of the schedule (row, statements), the scalars it privatizes: every
    kernel-local scalar it may (`legality.privatizable`), which is what the legality check
    of the parallel step assumed."""
    if not lowered.parallel:
        return {}
    scalars = scalar_flows(lowered.program)
    if not scalars:
        return {}
    out = {}
    for loop in lowered.tree.loops():
        if any((s, loop.row) in lowered.parallel for s in loop.statements):
            found = privatizable(scalars, lowered, loop.row, loop.statements)
            if found:
                out[(loop.row, loop.statements)] = found
    return out


def _annotation(n: isl.AstNode) -> str | None:
    """Name of the id isl attached to a node while building it (None: no annotation)."""
    try:
        note = n.get_annotation()
    except isl.Error:  # islpy raises on a node without annotation
        return None
    return note.get_name() if note is not None else None


def _statements(n: isl.AstNode) -> set[str]:
    """Names of the statements below an AST node."""
    names: set[str] = set()

    def visit(node):
        if node.get_type() == isl.ast_node_type.user:
            names.add(node.user_get_expr().get_op_arg(0).get_id().get_name())
        return True

    n.foreach_descendant_top_down(visit)
    return names


def _iterators(n: isl.AstNode) -> set[str]:
    """Iterators of the loops below an AST node (they must be private to a parallel loop)."""
    names: set[str] = set()

    def visit(node):
        if node.get_type() == isl.ast_node_type.for_:
            names.add(node.for_get_iterator().get_id().get_name())
        return True

    n.foreach_descendant_top_down(visit)
    return names


def kernel_body_from_ast(program: Program, ast: isl.AstNode) -> tuple[list[cgen.Generable], list[str]]:
    """Print an AST that isl built from a schedule tree (`for` nodes annotated `PARALLEL_LOOP` get
    `omp parallel for`, unless inside another parallel loop); used for isl's scheduler as a peer."""
    p = KernelPrinter(original(program))
    body = p.node(ast)
    return body, sorted(p.iterators, key=row_of_iterator)


def kernel_body(lowered: Lowered, balance: bool = True, rename=_same) -> tuple[list[cgen.Generable], list[str]]:
    """The kernel's loop nest and the loop iterators it needs declared (`balance=False`: every
    parallel loop with plain `static`, for measuring what balancing gains; `rename`: the C name
    of each iterator, which the returned list uses too)."""
    p = KernelPrinter(lowered, balance, rename)
    body = p.body()
    return body, [rename(it) for it in sorted(p.iterators, key=row_of_iterator)]
