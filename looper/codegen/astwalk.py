"""isl ASTs of schedules, and walking them: the statements, calls, loop iterators and annotations below a node."""
from __future__ import annotations

import islpy as isl

from ..caching import per_object
from ..ir.schedule import Lowered, original


# A separated AST may have at most this many times the statement calls of isl's default one;
# past that, the default is kept (separation can multiply code along every dimension).
SEPARATE_GROWTH = 4


@per_object
def schedule_ast(lowered: Lowered) -> isl.AstNode:
    """isl's AST of a lowered schedule (built once per schedule: the printer and the storage
    decisions of `codegen.private` read the same one).

    The loops inside the innermost parallel loop are *separated*: isl splits a loop wherever the
    set of statements it runs changes, so a full tile's inner loops carry no guard (Pluto's
    full/partial tiles, CLooG's default).  isl's default keeps one loop with the guard inside:
    cholesky's wavefront time tile at LARGE ran 1.56 s with `if (c11 + 1 == c9)` in its
    innermost loop and 0.60 s separated (the original 1.50 s).  The parallel loops themselves
    are not split (each piece would start a team).  Register tiles keep isl's default: their
    micro-kernels find their full tiles themselves (`codegen.microkernel`); so does the original
    schedule, whose loops are the user's."""
    plain = plain_ast(lowered)
    dims = lowered.n_rows
    first = max((r + 1 for _, r in lowered.parallel), default=0)
    if lowered.microkernels or first >= dims or lowered.rows == original(lowered.program).rows:
        return plain
    names = ", ".join(f"d{k}" for k in range(dims))
    options = isl.UnionMap(f"{{ [{names}] -> separate[x] : {first} <= x < {dims} }}")
    separated = isl.AstBuild.from_context(isl.Set("{ : }")).set_options(options) \
        .node_from_schedule_map(_instances(lowered))
    return separated if len(calls(separated)) <= SEPARATE_GROWTH * len(calls(plain)) else plain


@per_object
def plain_ast(lowered: Lowered) -> isl.AstNode:
    """isl's default AST of a lowered schedule (no loop separated)."""
    return isl.AstBuild.from_context(isl.Set("{ : }")).node_from_schedule_map(_instances(lowered))


def _instances(lowered: Lowered) -> isl.UnionMap:
    return lowered.union_map.intersect_domain(lowered.program.domains())


def printed_form(lowered: Lowered) -> tuple:
    """What the C of `lowered` is a function of, at a sixth of the cost of printing it: the
    program, isl's default AST of its schedule, and its annotations.  Schedules whose rows differ
    only in the constants that order statements give the same AST (cholesky's fuse then
    distribute gives back the original loops); printing deriche's expanded programs (47
    statements, loops separated) took 190 ms each.  Separation is a function of the schedule's
    loops, which the default AST shows."""
    return (lowered.program.content, plain_ast(lowered).to_C_str()) + lowered.annotations


def annotation(n: isl.AstNode) -> str | None:
    """Name of the id isl attached to a node while building it (None: no annotation)."""
    try:
        note = n.get_annotation()
    except isl.Error:  # islpy raises on a node without annotation
        return None
    return note.get_name() if note is not None else None


def statements(n: isl.AstNode) -> set[str]:
    """Names of the statements below an AST node."""
    names: set[str] = set()

    def visit(node):
        if node.get_type() == isl.ast_node_type.user:
            names.add(node.user_get_expr().get_op_arg(0).get_id().get_name())
        return True

    n.foreach_descendant_top_down(visit)
    return names


def calls(n: isl.AstNode) -> list[isl.AstExpr]:
    """The statement calls (user nodes) below an AST node."""
    out: list[isl.AstExpr] = []

    def visit(node):
        if node.get_type() == isl.ast_node_type.user:
            out.append(node.user_get_expr())
        return True

    n.foreach_descendant_top_down(visit)
    return out


def iterators(n: isl.AstNode) -> set[str]:
    """Iterators of the loops below an AST node (they must be private to a parallel loop)."""
    names: set[str] = set()

    def visit(node):
        if node.get_type() == isl.ast_node_type.for_:
            names.add(node.for_get_iterator().get_id().get_name())
        return True

    n.foreach_descendant_top_down(visit)
    return names


def for_loops(n: isl.AstNode) -> list[tuple[str, frozenset[str], bool]]:
    """Each `for` node at and below `n`, outer before inner: its iterator, the statements below
    it and whether it is degenerate (one iteration, printed without a loop).  Read inside the
    walk: islpy's nodes do not outlive it."""
    out: list[tuple[str, frozenset[str], bool]] = []

    def visit(node):
        if node.get_type() == isl.ast_node_type.for_:
            out.append((node.for_get_iterator().get_id().get_name(), frozenset(statements(node)),
                        node.for_is_degenerate()))
        return True

    n.foreach_descendant_top_down(visit)
    return out
