"""Unroll level: `#pragma GCC unroll` on innermost sequential loops (gcc handles the remainder)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Iterator

from ..ir.looptree import LoopNode, loop_label
from ..ir.rows import LoopRef
from ..ir.schedule import Lowered
from ..poly.deps import Dependences
from .registry import CandidateContext, Encoding, Transform, loop_refs, register

UNROLL_FACTORS = (4, 8, 16)


@register
@dataclass(frozen=True)
class Unroll(Transform):
    """Unroll innermost loops by `factor` (`#pragma GCC unroll`; gcc handles the remainder)."""

    loops: tuple[LoopRef, ...]
    factor: int
    kind: ClassVar[str] = "unroll"
    level: ClassVar[str] = "unroll"
    feature_slot: ClassVar[int] = 8
    refines: ClassVar[bool] = True

    def __post_init__(self):  # accept plain tuples (JSON, tests): name them
        object.__setattr__(self, "loops", loop_refs(self.loops))

    def touched(self) -> frozenset[str]:
        return frozenset(s for loop in self.loops for s in loop.statements)

    def apply(self, L: Lowered) -> Lowered:
        extra = tuple((s, row, self.factor) for stmts, row in self.loops for s in stmts)
        return replace(L, unroll=L.unroll + extra)

    def describe(self, L: Lowered) -> str:
        return "unroll(" + ",".join(loop_label(L, st, r) for st, r in self.loops) + f",{self.factor})"

    def encoding(self) -> Encoding:
        return Encoding(factor=self.factor)

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        """Each loop is innermost and sequential (gcc takes no unroll pragma on an OpenMP loop)."""
        for stmts, row in self.loops:
            loop = after.tree.find(row, stmts)
            if loop is None or not loop.is_innermost:
                return f"loop at row {row} is not an innermost loop"
            if any((s, row) in before.parallel for s in stmts):
                return "the loop is parallel: gcc cannot unroll an OpenMP loop by pragma"
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
