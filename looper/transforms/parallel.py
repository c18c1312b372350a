"""Parallel level: `#pragma omp parallel for` on loops that carry no dependence.

A parallel loop may not sit inside or around another one (OpenMP would nest teams), and must
carry no dependence except through kernel-local scalars it privatizes (`poly.privatize`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Iterator

from ..ir.looptree import LoopNode
from ..ir.schedule import Lowered
from ..poly.deps import Dependences
from ..poly.legality import is_parallel
from .registry import CandidateContext, Encoding, LoopMarks, Transform, register


@register
@dataclass(frozen=True)
class Parallelize(LoopMarks):
    """`#pragma omp parallel for` on each named loop."""

    kind: ClassVar[str] = "parallelize"
    level: ClassVar[str] = "parallel"
    feature_slot: ClassVar[int] = 6
    threads: ClassVar[bool] = True

    def apply(self, L: Lowered) -> Lowered:
        return replace(L, parallel=L.parallel | self.marks())

    def describe(self, L: Lowered) -> str:
        return f"parallelize({self.labels(L)})"

    def encoding(self) -> Encoding:
        return Encoding(rows=(self.loops[0].row,))

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        """Each loop exists, nests with no other parallel loop, and carries no dependence."""
        tree = after.tree
        marked = set(before.parallel)
        for stmts, row in self.loops:
            loop = tree.find(row, stmts)
            if loop is None:
                return f"no loop at row {row} over {','.join(stmts)}"
            around = tree.enclosing(loop) + [l for l in loop.walk() if l is not loop]
            if any((s, l.row) in marked for l in around for s in l.statements):
                return "nested inside (or around) a loop that is already parallel"
            if not is_parallel(deps, after, row, set(stmts)):
                return f"loop at row {row} carries a dependence"
            marked |= {(s, row) for s in stmts}
        return None

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["Parallelize"]:
        """The outermost parallel loops of every nest together; of each nest alone (when there
        are several); and the outermost parallel loops inside those (a parallel loop that is too
        short to pay for its threads may hide a long one)."""
        L = ctx.lowered
        if L.parallel:
            return
        cache: dict = {}

        def legal(loop: LoopNode) -> bool:
            k = loop.key()
            if k not in cache:
                cache[k] = is_parallel(ctx.deps, L, loop.row, set(loop.statements))
            return cache[k]

        def outermost(loop: LoopNode) -> list[LoopNode]:
            if legal(loop):
                return [loop]
            return [x for c in loop.loops for x in outermost(c)]

        per_nest = [outermost(n) for n in ctx.tree.nests]
        everything = [l for group in per_nest for l in group]

        def make(loops: list[LoopNode]) -> Parallelize:
            return Parallelize(tuple(l.ref for l in loops))

        if everything:
            yield make(everything)
        if len([g for g in per_nest if g]) > 1:
            for group in per_nest:
                if group:
                    yield make(group)
        deeper = [x for l in everything for c in l.loops for x in outermost(c)]
        if deeper:
            yield make(deeper)


@register
@dataclass(frozen=True)
class ParallelRegion(Transform):
    """All parallel loops of the kernel work-shared in one OpenMP parallel region
    (`codegen.region`): threads are forked once, not per loop, and barriers between loops are
    kept only where isl shows a dependence needs them."""

    kind: ClassVar[str] = "region"
    feature_slot: ClassVar[int] = 10
    level: ClassVar[str] = "unroll"
    refines: ClassVar[bool] = True
    threads: ClassVar[bool] = True
    mark: ClassVar[bool] = True

    def touched(self) -> frozenset[str]:
        return frozenset()

    def apply(self, L: Lowered) -> Lowered:
        return replace(L, region=True)

    def describe(self, L: Lowered) -> str:
        return "region()"

    def encoding(self) -> Encoding:
        return Encoding()

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        """Always legal: the same loops run in parallel; only the team's lifetime changes."""
        return None

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["ParallelRegion"]:
        """Offered (in the grown space) when the schedule runs a parallel loop more than once:
        several parallel nests, or a parallel loop inside a sequential one."""
        if ctx.grown and forks_more_than_once(ctx.lowered):
            yield cls()


def forks_more_than_once(L: Lowered) -> bool:
    """Whether `omp parallel for` per loop would fork a team more than once per kernel run."""
    if L.region or not L.parallel:
        return False
    tree = L.tree
    marked = [l for l in tree.loops() if any((s, l.row) in L.parallel for s in l.statements)]
    outermost = [l for l in marked if not any(e in marked for e in tree.enclosing(l))]
    return len(outermost) >= 2 or any(tree.enclosing(l) for l in outermost)
