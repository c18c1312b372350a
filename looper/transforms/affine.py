"""Affine level: interchange, reversal and skewing of the loops of one band.

Each rewrites some loop rows of some statements as integer combinations of their current rows
(a unimodular change of loop basis); legal when every dependence still goes forward.  Skew
factors come from the dependence distances (a Pluto-like choice), not a fixed list.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Iterator

from ..ir.looptree import LoopNode

from ..ir.schedule import loop_label
from ..ir.schedule import Lowered, combine
from ..poly.deps import Dependences
from ..poly.legality import is_parallel, is_permutable
from .fusion import Distribute, Reordering, Stmts
from .registry import CandidateContext, Encoding, register

MAX_SKEW = 3  # largest skew factor tried


@register
@dataclass(frozen=True)
class Interchange(Reordering):
    """Swap two loop rows of some statements."""

    statements: Stmts
    row_a: int
    row_b: int
    kind: ClassVar[str] = "interchange"
    level: ClassVar[str] = "affine"
    feature_slot: ClassVar[int] = 0
    feature_flag: ClassVar[str] = "interchanged"

    def touched(self) -> frozenset[str]:
        return frozenset(self.statements)

    def apply(self, L: Lowered) -> Lowered:
        def fn(r):
            r[self.row_a], r[self.row_b] = r[self.row_b], r[self.row_a]
            return r
        return L.with_rows(self.statements, fn)

    def describe(self, L: Lowered) -> str:
        return f"interchange({loop_label(L, self.statements, self.row_a)}," \
               f"{loop_label(L, self.statements, self.row_b)})"

    def encoding(self) -> Encoding:
        return Encoding(rows=(self.row_a, self.row_b))

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator:
        """The loop with each loop of its band; and an inner loop that shares the loop with other
        statements moved out of it: the loop split around it, then interchanged (offered as one
        candidate, so that the search sees the pair's benefit at once)."""
        loop = ctx.loop
        st = loop.ref.statements
        for inner in ctx.tree.chain(loop)[1:]:
            yield Interchange(st, loop.row, inner.row)
        n = len(loop.children)
        if n > 1:
            for pos, child in enumerate(loop.children):
                if isinstance(child, LoopNode):
                    cuts = tuple(c for c in (pos, pos + 1) if 0 < c < n)
                    yield (Distribute(st, loop.row, cuts), Interchange(child.ref.statements, loop.row, child.row))


@register
@dataclass(frozen=True)
class Reverse(Reordering):
    """Run one loop row backwards."""

    statements: Stmts
    row: int
    kind: ClassVar[str] = "reverse"
    level: ClassVar[str] = "affine"
    feature_slot: ClassVar[int] = 1
    feature_flag: ClassVar[str] = "reversed"
    enabler: ClassVar[bool] = True

    def touched(self) -> frozenset[str]:
        return frozenset(self.statements)

    def apply(self, L: Lowered) -> Lowered:
        def fn(r):
            r[self.row] = combine(r, (-1,), (self.row,))
            return r
        return L.with_rows(self.statements, fn)

    def describe(self, L: Lowered) -> str:
        return f"reverse({loop_label(L, self.statements, self.row)})"

    def encoding(self) -> Encoding:
        return Encoding(rows=(self.row,))

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["Reverse"]:
        yield Reverse(ctx.loop.ref.statements, ctx.loop.row)


@register
@dataclass(frozen=True)
class Skew(Reordering):
    """A unimodular matrix over 2 or 3 loop rows of one band: new_k = sum_j matrix[k][j] * old_j."""

    statements: Stmts
    rows: tuple[int, ...]
    matrix: tuple[tuple[int, ...], ...]
    kind: ClassVar[str] = "skew"
    level: ClassVar[str] = "affine"
    feature_slot: ClassVar[int] = 2
    feature_flag: ClassVar[str] = "skewed"
    enabler: ClassVar[bool] = True

    def __post_init__(self):
        n = len(self.rows)
        if n not in (2, 3) or len(self.matrix) != n or any(len(r) != n for r in self.matrix):
            raise ValueError("skew takes a 2x2 or 3x3 matrix over 2 or 3 rows")
        if abs(_det(self.matrix)) != 1:
            raise ValueError(f"skew matrix {self.matrix} is not unimodular")

    def touched(self) -> frozenset[str]:
        return frozenset(self.statements)

    def apply(self, L: Lowered) -> Lowered:
        def fn(r):
            new = [combine(r, self.matrix[k], self.rows) for k in range(len(self.rows))]
            for k, row in enumerate(self.rows):
                r[row] = new[k]
            return r
        return L.with_rows(self.statements, fn)

    def describe(self, L: Lowered) -> str:
        names = [loop_label(L, self.statements, r) for r in self.rows]
        m = self.matrix
        if len(m) == 2 and m[0] == (1, 0) and m[1][1] == 1:
            return f"skew({names[0]},{names[1]},factor={m[1][0]})"
        if len(m) == 2 and m[1] == (0, 1) and m[0][0] == 1:
            return f"wavefront({names[0]},{names[1]},factor={m[0][1]})"
        if len(m) == 3 and m[1:] == ((0, 1, 0), (0, 0, 1)) and m[0][0] == 1:
            return f"wavefront({','.join(names)},factors={m[0][1]},{m[0][2]})"
        if len(m) == 3 and m[0] == (1, 0, 0) and m[1][1:] == (1, 0) and m[2][2] == 1:
            return f"skew({','.join(names)},factors={m[1][0]},{m[2][0]},{m[2][1]})"
        return f"skew({','.join(names)},{[list(x) for x in m]})"

    def encoding(self) -> Encoding:
        return Encoding(rows=self.rows, matrix=self.matrix)

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["Skew"]:
        chain = ctx.tree.chain(ctx.loop)
        st = ctx.loop.ref.statements
        if len(chain) >= 2:
            yield from skew_candidates(ctx.lowered, ctx.deps, st, [l.row for l in chain[:2]])
        if len(chain) >= 3:
            yield from skew_candidates(ctx.lowered, ctx.deps, st, [l.row for l in chain[:3]])


def _det(m: tuple[tuple[int, ...], ...]) -> int:
    if len(m) == 2:
        return m[0][0] * m[1][1] - m[0][1] * m[1][0]
    return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))


def skew_candidates(L: Lowered, deps: Dependences, st: tuple[str, ...], rows: list[int]) -> Iterator[Skew]:
    """Pluto-like skews of a 2- or 3-loop band: the smallest factors that make it permutable
    (tilable), and wavefronts that make the inner loops parallel."""
    stmts = set(st)
    rel = deps.restricted_to(stmts)
    if rel.is_empty():
        return
    n = len(rows)
    if not is_permutable(deps, L, rows, stmts):
        m = permuting_skew(L, deps, st, rows)
        if m is not None:
            yield Skew(st, tuple(rows), m)
        return
    # permutable band: a wavefront on the outer loop frees the inner one(s)
    if is_parallel(deps, L, rows[1], stmts):
        return
    for g in range(1, MAX_SKEW + 1):
        m = ((1, g), (0, 1)) if n == 2 else ((1, g, g), (0, 1, 0), (0, 0, 1))
        cand = Skew(st, tuple(rows), m)
        if is_parallel(deps, cand.apply(L), rows[1], stmts):
            yield cand
            break


def permuting_skew(L: Lowered, deps: Dependences, st: tuple[str, ...], rows: list[int]
                   ) -> tuple[tuple[int, ...], ...] | None:
    """The smallest lower-triangular skew of a 2- or 3-loop band that makes it permutable
    (every dependence non-negative in each of its loops: tilable), or None."""
    stmts = set(st)
    for m in _skew_matrices(len(rows)):
        if is_permutable(deps, Skew(st, tuple(rows), m).apply(L), rows, stmts):
            return m
    return None


def _skew_matrices(n: int) -> Iterator[tuple[tuple[int, ...], ...]]:
    """Lower-triangular unimodular skews, smallest total factor first."""
    if n == 2:
        for f in range(1, MAX_SKEW + 1):
            yield ((1, 0), (f, 1))
        return
    combos = [(f1, f2, f3) for f1 in range(MAX_SKEW) for f2 in range(MAX_SKEW) for f3 in range(MAX_SKEW)
              if f1 + f2 + f3 > 0]
    combos.sort(key=lambda c: (sum(c), c))
    for f1, f2, f3 in combos:  # b += f1 a ; c += f2 a + f3 b
        yield ((1, 0, 0), (f1, 1, 0), (f2, f3, 1))
