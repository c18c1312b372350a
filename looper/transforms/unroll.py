"""Unroll level: `#pragma GCC unroll` on innermost sequential loops (gcc handles the remainder)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Iterator

from ..ir.looptree import LoopNode
from ..ir.schedule import Lowered
from ..poly.deps import Dependences
from .registry import CandidateContext, Encoding, LoopMarks, register

UNROLL_FACTORS = (4, 8, 16)


@register
@dataclass(frozen=True)
class Unroll(LoopMarks):
    """Unroll innermost loops by `factor` (`#pragma GCC unroll`; gcc handles the remainder)."""

    factor: int
    kind: ClassVar[str] = "unroll"
    level: ClassVar[str] = "unroll"
    feature_slot: ClassVar[int] = 8
    mark: ClassVar[bool] = True

    def apply(self, L: Lowered) -> Lowered:
        extra = tuple((s, row, self.factor) for stmts, row in self.loops for s in stmts)
        return replace(L, unroll=L.unroll + extra)

    def describe(self, L: Lowered) -> str:
        return f"unroll({self.labels(L)},{self.factor})"

    def encoding(self) -> Encoding:
        return Encoding(factor=self.factor)

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        """Each loop is innermost and sequential (gcc takes no unroll pragma on an OpenMP loop)."""
        for ref in self.loops:
            why = self.not_innermost(after, ref)
            if why is None and any((s, ref.row) in before.parallel for s in ref.statements):
                why = "the loop is parallel: gcc cannot unroll an OpenMP loop by pragma"
            if why:
                return why
        return None

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["Unroll"]:
        """Per factor, every innermost sequential loop at once, then each nest's alone."""
        L = ctx.lowered
        if L.unroll:
            return

        def unrollable(l: LoopNode) -> bool:
            return l.is_innermost and not any((s, l.row) in L.parallel for s in l.statements)

        inner = [l for l in ctx.tree.loops() if unrollable(l)]
        if not inner:
            return
        nests = [[l for l in n.walk() if unrollable(l)] for n in ctx.tree.nests]
        for f in UNROLL_FACTORS:
            yield Unroll(tuple(l.ref for l in inner), f)
            if len(nests) > 1:
                for group in nests:
                    if group:
                        yield Unroll(tuple(l.ref for l in group), f)
