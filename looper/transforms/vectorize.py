"""Vector-loop choice: `#pragma omp simd` on innermost loops that carry no dependence.

gcc vectorizes an innermost loop only when it proves the iterations independent itself, and it
gives up on loops it cannot analyse: isl's `min`/`max` bounds around tiled code, a target and an
operand it cannot tell apart.  isl has already proved more: the loop carries no dependence.  The
pragma tells gcc so, and the search measures whether that pays.

Only loops that carry nothing are marked (no `reduction` clause): a vector reduction sums in a
different order, and looper's answers compute the original's results bit for bit.  A loop whose
statements write a kernel-local scalar is left alone (each lane would need a private copy).
Grown space only, at the unroll level: a loop takes either this pragma or an unroll pragma.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Iterator

from ..ir.looptree import LoopNode
from ..ir.program import Load, Statement, walk
from ..ir.schedule import Lowered
from ..poly.deps import Dependences
from ..poly.legality import is_parallel
from .registry import CandidateContext, Encoding, LoopMarks, register


@register
@dataclass(frozen=True)
class Vectorize(LoopMarks):
    """Mark innermost loops `#pragma omp simd`."""

    kind: ClassVar[str] = "vectorize"
    feature_slot: ClassVar[int] = 12
    level: ClassVar[str] = "unroll"
    mark: ClassVar[bool] = True

    def apply(self, L: Lowered) -> Lowered:
        return replace(L, vector=L.vector | self.marks())

    def describe(self, L: Lowered) -> str:
        return f"vectorize({self.labels(L)})"

    def encoding(self) -> Encoding:
        return Encoding(rows=tuple(loop.row for loop in self.loops))

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        """Each loop is innermost, not an OpenMP loop, writes no scalar and carries no dependence."""
        for ref in self.loops:
            why = self.not_innermost(after, ref) or _unmarkable(deps, after, after.tree.find(ref.row, ref.statements))
            if why:
                return why
        return None

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["Vectorize"]:
        """Every markable innermost loop at once, then each nest's alone (grown space only)."""
        L = ctx.lowered
        if not ctx.grown or L.vector:
            return
        nests = [[l for l in n.walk() if l.is_innermost and _stride_one(L, l)
                  and _unmarkable(ctx.deps, L, l) is None] for n in ctx.tree.nests]
        every = [l for group in nests for l in group]
        if not every:
            return
        yield Vectorize(tuple(l.ref for l in every))
        if sum(1 for group in nests if group) > 1:
            for group in nests:
                if group:
                    yield Vectorize(tuple(l.ref for l in group))


def _unmarkable(deps: Dependences, L: Lowered, loop: LoopNode) -> str | None:
    """Why `loop` cannot be marked simd, or None."""
    stmts = set(loop.statements)
    if any((s, loop.row) in L.parallel for s in stmts):
        return "the loop is an OpenMP parallel loop"
    if any(L.program.statement(s).body.target.array in deps.scalars for s in stmts):
        return "a statement of the loop writes a scalar (each lane would need its own)"
    if not is_parallel(deps, L, loop.row, stmts):
        return "the loop carries a dependence"
    return None


def _stride_one(L: Lowered, loop: LoopNode) -> bool:
    """Some statement of the loop walks the last subscript of an access by one per iteration
    (a loop over rows gains nothing from vectors gcc would have to gather)."""
    for s in loop.statements:
        st = L.program.statement(s)
        row = L.rows[s][loop.row]
        moved = [k for k, c in enumerate(row.coeffs) if c]
        if len(moved) != 1 or abs(row.coeffs[moved[0]]) != 1 or row.div != 1 or row.extra:
            continue
        it = st.iterators[moved[0]]
        if any(a.index and abs(a.index[-1].coeff(it)) == 1 for a in _accesses(st)):
            return True
    return False


def _accesses(st: Statement) -> list[Load]:
    return [st.body.target] + [e for e in walk(st.body.value) if isinstance(e, Load)]
