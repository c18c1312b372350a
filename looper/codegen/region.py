"""One OpenMP parallel region around a kernel's parallel loops, instead of one per loop.

`#pragma omp parallel for` forks and joins a team at every loop.  Inside a time loop, or for
several nests in a row, that is a fork/join per loop execution, and on a machine where idle
threads sleep (libgomp's default when nothing sets OMP_WAIT_POLICY) each one costs a wake-up:
fdtd-2d's answer ran from 0.33x to 1.99x the original from one run to the next.  Here the whole
kernel body is one region:

    #pragma omp parallel private(<loop iterators>)
    {
      for (t ...)                      every thread runs the sequential loops around parallel ones
        #pragma omp for [nowait]       the parallel loops are work-shared
        ...
        #pragma omp single [nowait]    code outside parallel loops runs once
        ...
    }

Each work-shared loop or single block ends with a barrier unless isl shows that nothing up to
the next barrier depends on it in the same iteration of the loops around (`nowait`).  Every
thread evaluates the same sequential loop bounds and conditions (they depend only on loop
variables all threads share the values of), so all of them meet every barrier.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import cgen
import islpy as isl

from ..ir.rows import row_of_iterator
from ..poly.deps import dependences_of
from ..poly.legality import same_iteration_dependence
from .astwalk import iterators, statements
from .storage import own_slices
from .islexpr import isl_c


@dataclass
class Piece:
    """Printed code at one level of the region; a work-sharing construct (`omp for`, `omp
    single`) may drop its barrier."""

    code: list[cgen.Generable]
    statements: set[str] = field(default_factory=set)
    construct: bool = False
    nowait: bool = False

    def render(self) -> list[cgen.Generable]:
        if self.construct and self.nowait:
            pragma = self.code[0]
            return [cgen.Pragma(pragma.value + " nowait")] + self.code[1:]
        return self.code


class RegionPrinter:
    """Prints a kernel's AST as one parallel region (see the module docstring)."""

    def __init__(self, printer):
        self.p = printer

    # -- decisions ---------------------------------------------------------------------------------
    def parallel_loops(self, n: isl.AstNode) -> list[isl.AstNode]:
        """The outermost parallel loops at or below `n`."""
        out: list[isl.AstNode] = []

        def visit(node: isl.AstNode) -> bool:
            if node.get_type() == isl.ast_node_type.for_ and self.p.is_parallel_node(node):
                out.append(node)
                return False
            return True

        n.foreach_descendant_top_down(visit)
        return out

    def worth(self, root: isl.AstNode) -> bool:
        """Whether a region saves fork/joins: at least two parallel loop executions."""
        loops = self.parallel_loops(root)
        if len(loops) >= 2:
            return True
        return bool(loops) and self._under_sequential_loop(root, loops[0])

    def _under_sequential_loop(self, root: isl.AstNode, target: isl.AstNode) -> bool:
        found = [False]

        def visit(node: isl.AstNode) -> bool:
            if node.get_type() == isl.ast_node_type.for_ and not node.for_is_degenerate() \
                    and not self.p.is_parallel_node(node) and self.parallel_loops(node.for_get_body()):
                found[0] = True
            return not found[0]

        root.foreach_descendant_top_down(visit)
        return found[0]

    # -- printing ----------------------------------------------------------------------------------
    def print(self, root: isl.AstNode) -> list[cgen.Generable]:
        body = self.block(root)
        # the iterators printed (a micro-kernel prints no point loops where every tile is full)
        names = [x for x in sorted(iterators(root), key=row_of_iterator) if x in self.p.iterators]
        private = f" private({', '.join(self.p.rename(x) for x in names)})" if names else ""
        # every thread's slices of the temporaries its work-shared loops keep per thread
        allocate, free = own_slices(list(self.p.slices.values()))
        return [cgen.Pragma(f"omp parallel{private}"), cgen.Block(allocate + body + free)]

    def block(self, n: isl.AstNode) -> list[cgen.Generable]:
        pieces = self.pieces(n)
        self.decide_barriers(pieces)
        return [g for piece in pieces for g in piece.render()]

    def pieces(self, n: isl.AstNode) -> list[Piece]:
        t = n.get_type()
        if t == isl.ast_node_type.block:
            children = n.block_get_children()
            return [p for k in range(children.n_ast_node()) for p in self.pieces(children.get_at(k))]
        if t == isl.ast_node_type.mark:
            return self.pieces(n.mark_get_node())
        stmts = statements(n)
        if not self.parallel_loops(n):
            return [Piece([cgen.Pragma("omp single"), cgen.Block(self.p.node(n))], stmts, construct=True)]
        if t == isl.ast_node_type.for_ and self.p.is_parallel_node(n):
            code = self.p.loop(n, worksharing=True)
            return [Piece(code, stmts, construct=True)]
        if t == isl.ast_node_type.if_:
            then = cgen.Block(self.block(n.if_get_then_node()))
            orelse = cgen.Block(self.block(n.if_get_else_node())) if n.if_has_else_node() else None
            return [Piece([cgen.If(isl_c(n.if_get_cond(), self.p.rename), then, orelse)], stmts)]
        assert t == isl.ast_node_type.for_
        return [Piece(self.sequential_loop(n), stmts)]

    def sequential_loop(self, n: isl.AstNode) -> list[cgen.Generable]:
        """A loop around parallel loops: every thread runs it (its iterator is private)."""
        it = n.for_get_iterator().get_id().get_name()
        row = row_of_iterator(it)
        self.p.iterators.add(it)
        name = self.p.rename(it)
        init = isl_c(n.for_get_init(), self.p.rename)
        self.p.printed.append(row)
        try:
            body = self.block(n.for_get_body())
        finally:
            self.p.printed.pop()
        if n.for_is_degenerate():
            return [cgen.Statement(f"{name} = {init}")] + body
        inc = isl_c(n.for_get_inc(), self.p.rename)
        step = f"{name}++" if inc == "1" else f"{name} += {inc}"
        return [cgen.For(f"{name} = {init}", isl_c(n.for_get_cond(), self.p.rename), step, cgen.Block(body))]

    def decide_barriers(self, pieces: list[Piece]) -> None:
        """`nowait` on a construct when no construct after it, up to the next barrier, depends on
        it in the same iteration of the loops around; the last construct before anything else
        (and the last of the block) keeps its barrier."""
        pending: list[Piece] = []
        for k, piece in enumerate(pieces):
            if not piece.construct:
                pending = []
                continue
            if pending and self._depends(pending, piece):
                pending[-1].nowait = False
                pending = []
            later = pieces[k + 1] if k + 1 < len(pieces) else None
            piece.nowait = later is not None and later.construct
            pending.append(piece)

    def _depends(self, earlier: list[Piece], piece: Piece) -> bool:
        sources = set().union(*(e.statements for e in earlier))
        depth = (max(self.p.printed) + 1) if self.p.printed else 0
        deps = dependences_of(self.p.program)
        return same_iteration_dependence(deps, self.p.lowered, sources, piece.statements, depth)
