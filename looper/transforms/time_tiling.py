"""Time tiling: a stencil's time loop and space loops skewed, tiled together, and the tiles run
as a parallel wavefront.

A time loop carries every dependence of a stencil (t reads what t - 1 wrote), so the nest has no
parallel outer loop, and tiling the space loops alone leaves each time step streaming the whole
grid through the caches.  Skewing the space loops by the time loop (Pluto's choice: the smallest
factors that make every dependence non-negative in each loop of the band) makes the band
permutable, hence tilable in all its loops; a tile then runs several time steps on a block that
stays in cache.  Tiles depend on their predecessors in each tile dimension only, so the tiles on
one anti-diagonal of the first two tile loops (`w = T0 + T1`) are independent: the wavefront
loop runs them in parallel (Pluto's `--tile --parallel` on seidel-2d, jacobi-2d, ...).

Lowered as: skew rows, tile the band (`tiling.tile_band`), make the first tile row the sum of
the first two (a `Row` with an extra floor term), mark the second tile loop parallel.  Legal when
the resulting schedule keeps every dependence and the parallel tile loop carries none (isl).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Iterator

from ..ir.schedule import loop_label
from ..ir.rows import TILE_ROWS
from ..ir.schedule import Lowered
from ..poly.deps import Dependences
from ..poly.legality import is_parallel, is_permutable, order_violation
from .affine import Skew, permuting_skew
from .registry import CandidateContext, Encoding, Transform, register
from .tiling import tile_band

SIZES = {2: ((32, 256), (64, 512)), 3: ((16, 32, 64), (32, 32, 32))}


@register
@dataclass(frozen=True)
class TimeTile(Transform):
    """Skew (by `matrix`, identity for none), tile with `sizes` and wavefront the band `rows`
    of `statements` (a root nest whose outer loop carries dependences)."""

    statements: tuple[str, ...]
    rows: tuple[int, ...]
    matrix: tuple[tuple[int, ...], ...]
    sizes: tuple[int, ...]
    kind: ClassVar[str] = "timetile"
    feature_slot: ClassVar[int] = 13
    level: ClassVar[str] = "tile"

    def touched(self) -> frozenset[str]:
        return frozenset(self.statements)

    def apply(self, L: Lowered) -> Lowered:
        if not _identity(self.matrix):
            L = Skew(self.statements, self.rows, self.matrix).apply(L)
        band = set(self.rows)
        L = replace(L, parallel=frozenset((s, r) for s, r in L.parallel
                                          if not (s in self.statements and r in band)))
        L = tile_band(L, self.statements, self.rows, self.sizes)
        at = self.rows[0]
        rows = dict(L.rows)
        for s in self.statements:
            r = list(rows[s])
            r[at] = replace(r[at], extra=(r[at + TILE_ROWS],))  # w = T0 + T1
            rows[s] = tuple(r)
        wave = frozenset((s, at + TILE_ROWS) for s in self.statements)
        return replace(L, rows=rows, parallel=L.parallel | wave)

    def describe(self, L: Lowered) -> str:
        names = [loop_label(L, self.statements, r) for r in self.rows]
        skew = "" if _identity(self.matrix) else f",skew={[list(m) for m in self.matrix]}"
        return f"timetile({','.join(names)}{skew},{'x'.join(map(str, self.sizes))})"

    def encoding(self) -> Encoding:
        return Encoding(rows=self.rows, matrix=self.matrix, sizes=self.sizes)

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        """Every dependence kept; the wavefront's tile loop carries none."""
        why = order_violation(deps, before, after, explain)
        if why is not None:
            return why
        if not is_parallel(deps, after, self.rows[0] + TILE_ROWS, set(self.statements)):
            return "the wavefront's tile loop carries a dependence"
        return None

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["TimeTile"]:
        """Per root nest whose outer loop carries a dependence: its 3- (or 2-) loop band, skewed
        as it must be to be tilable, at each of a few tile sizes."""
        if not ctx.grown:
            return
        L = ctx.lowered
        for nest in ctx.tree.nests:
            chain = ctx.tree.chain(nest)
            st = nest.ref.statements
            if len(chain) < 2 or is_parallel(ctx.deps, L, nest.row, set(st)):
                continue
            band = [l.row for l in chain[:3]]
            if any(L.rows[s][r].div != 1 or L.rows[s][r].extra for s in st for r in band):
                continue
            if any((s, l.row) in L.parallel for s in st for l in chain[3:]):
                continue
            matrix = _eye(len(band))
            if not is_permutable(ctx.deps, L, band, set(st)):
                matrix = permuting_skew(L, ctx.deps, st, band)
                if matrix is None:
                    continue
            for sizes in SIZES[len(band)]:
                yield cls(st, tuple(band), matrix, sizes)


def _eye(n: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(r == c) for c in range(n)) for r in range(n))


def _identity(m) -> bool:
    return m == _eye(len(m))
