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

Where a loop inside the band already runs in parallel (heat-3d's `j` once `i` and `j` are fused),
the tiles can instead run in order with that loop parallel inside each (`wavefront=False`): one
team for the whole grid at each step of a tile, no wavefront's ramp; heat-3d LARGE ran 0.67 s so
against 0.76-0.90 s with a wavefront of the same tiles.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar, Iterator

from ..ir.rows import TILE_ROWS, first_statement
from ..ir.schedule import loop_label
from ..ir.schedule import Lowered
from ..poly.deps import Dependences
from ..poly.legality import is_parallel, is_permutable, order_violation, parallel_loops_kept
from .affine import Skew, permuting_skew
from .registry import CandidateContext, Encoding, Transform, register
from .tiling import tile_band

if TYPE_CHECKING:
    from ..target import Target

# The fixed menu per band depth (time size first); `band_sizes` adds one fitted to the grid.
SIZES = {2: ((32, 256), (64, 512)), 3: ((16, 32, 64), (32, 32, 32))}
MIN_FIT = 8  # a fitted tile's smallest side: below it the tile loops cost more than reuse saves
MAX_FIT_TIME = 64  # a fitted tile's most time steps (the menu's longest)


@register
@dataclass(frozen=True)
class TimeTile(Transform):
    """Skew (by `matrix`, identity for none), tile with `sizes` and wavefront the band `rows`
    of `statements` (a root nest whose outer loop carries dependences); without `wavefront`, the
    tiles run in order and the parallel loops inside the band stay parallel."""

    statements: tuple[str, ...]
    rows: tuple[int, ...]
    matrix: tuple[tuple[int, ...], ...]
    sizes: tuple[int, ...]
    wavefront: bool = True
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
        if not self.wavefront:
            return L
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
        order = "" if self.wavefront else ",in order"
        return f"timetile({','.join(names)}{skew},{'x'.join(map(str, self.sizes))}{order})"

    def encoding(self) -> Encoding:
        return Encoding(rows=self.rows, matrix=self.matrix, sizes=self.sizes, option=int(not self.wavefront))

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        """Every dependence kept; the wavefront's tile loop carries none; without a wavefront,
        every parallel loop of the statements still carries none."""
        why = order_violation(deps, before, after, explain)
        if why is not None:
            return why
        if self.wavefront:
            if not is_parallel(deps, after, self.rows[0] + TILE_ROWS, set(self.statements)):
                return "the wavefront's tile loop carries a dependence"
            return None
        if not parallel_loops_kept(deps, after, self.statements):
            return "a parallel loop inside the tiles would carry a dependence"
        return None

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["TimeTile"]:
        """Per root nest whose outer loop carries a dependence: its 3- (or 2-) loop band, skewed
        as it must be to be tilable, at each of a few tile sizes, as a wavefront; and, when every
        statement of the nest has a parallel loop inside its first two loops, those two tiled in
        order around it."""
        if not ctx.grown:
            return
        L = ctx.lowered
        for nest in ctx.tree.nests:
            chain = ctx.tree.chain(nest)
            st = nest.ref.statements
            if len(chain) < 2 or is_parallel(ctx.deps, L, nest.row, set(st)):
                continue
            if not any((s, l.row) in L.parallel for s in st for l in chain[3:]):
                yield from cls._banded(ctx, st, [l.row for l in chain[:3]], True)
            pair = chain[1].row
            if all(any(s == p and r > pair for p, r in L.parallel) for s in st):
                yield from cls._banded(ctx, st, [l.row for l in chain[:2]], False)

    @classmethod
    def _banded(cls, ctx: CandidateContext, st: tuple[str, ...], band: list[int], wavefront: bool
                ) -> Iterator["TimeTile"]:
        """The band skewed as it must be to be tilable (none when no skew does), at each size."""
        L = ctx.lowered
        if any(L.rows[s][r].div != 1 or L.rows[s][r].extra for s in st for r in band):
            return
        matrix = _eye(len(band))
        if not is_permutable(ctx.deps, L, band, set(st)):
            matrix = permuting_skew(L, ctx.deps, st, band)
            if matrix is None:
                return
        for sizes in band_sizes(L, st, band, matrix, ctx.target):
            yield cls(st, tuple(band), matrix, sizes, wavefront)


def band_sizes(L: Lowered, statements: tuple[str, ...], band: list[int], matrix, target: Target
               ) -> tuple[tuple[int, ...], ...]:
    """The menu's sizes for a band of `band`'s depth, and a tile fitted to the grid when no entry
    of the menu gives a time tile reuse: an entry whose space tile spans the whole grid along a
    space loop (heat-3d LARGE: 64x512 of `(t, 2t+i)` over n = 120 holds every i, so the time tile
    tiles time alone) or whose points of one time step, with the data the loops inside the band
    touch for each, overflow the cache budget (`_fit_budget`).  The fitted tile is the largest
    power of two (time steps and space sides alike, at least MIN_FIT, at most MAX_FIT_TIME time
    steps) whose step fits that budget and that cuts the grid."""
    menu = SIZES[len(band)]
    shape = _band_shape(L, statements, band, matrix)
    if shape is None:
        return menu
    spans, skews, point_bytes = shape
    budget = _fit_budget(target)

    def reuses(sizes: tuple[int, ...]) -> bool:
        whole = any(s >= span + skew * sizes[0] for s, span, skew in zip(sizes[1:], spans, skews))
        return not whole and _step_bytes(sizes, spans, point_bytes) <= budget

    if any(reuses(sizes) for sizes in menu):
        return menu
    side = MIN_FIT
    while side * 2 < max(spans) and _step_bytes((0,) + (side * 2,) * len(spans), spans, point_bytes) <= budget:
        side *= 2
    fitted = (min(side, MAX_FIT_TIME),) + (side,) * len(spans)
    if side >= max(spans) or _step_bytes(fitted, spans, point_bytes) > budget or fitted in menu:
        return menu
    return menu + (fitted,)


def _fit_budget(target: Target) -> int:
    """Bytes one tile's time step may touch: half of one thread's share of the last-level cache
    (the wavefront runs a tile per thread, and the next step's halo and the other arrays need
    the rest)."""
    return target.cache_bytes(3) // max(1, target.threads) // 2


def _step_bytes(sizes: tuple[int, ...], spans: tuple[int, ...], point_bytes: int) -> int:
    """Bytes one time step of a tile of `sizes` touches: its space points (at most the grid's)
    times the bytes each point's inner loops touch."""
    points = 1
    for s, span in zip(sizes[1:], spans):
        points *= min(s, span)
    return points * point_bytes


def _band_shape(L: Lowered, statements: tuple[str, ...], band: list[int], matrix
                ) -> tuple[tuple[int, ...], tuple[int, ...], int] | None:
    """Of the band's first statement: each space loop's span over the grid (before the skew), how
    far the skew moves it per time step, and the bytes one point of the band touches through
    the loops inside it (every array the statements access, over those loops' extents).  None
    when a bound is not a constant."""
    st = L.program.statement(first_statement(statements))
    if st.domain.is_empty():
        return None
    widths = [st.width(d) for d in range(st.depth)]
    if None in widths:
        return None
    rows = [L.rows[st.name][r] for r in band]
    spans = tuple(1 + sum(abs(c) * (w - 1) for c, w in zip(r.coeffs, widths)) for r in rows[1:])
    skews = tuple(abs(m[0]) for m in matrix[1:])
    in_band = {k for r in rows for k, c in enumerate(r.coeffs) if c}
    inner = 1
    for k, w in enumerate(widths):
        if k not in in_band:
            inner *= w
    arrays = {a.array for s in statements for a in L.program.statement(s).accesses}
    element = sum(L.program.arrays[a].dtype.nbytes for a in arrays if a in L.program.arrays
                  and L.program.arrays[a].rank)
    return spans, skews, inner * max(element, 1)


def _eye(n: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(r == c) for c in range(n)) for r in range(n))


def _identity(m) -> bool:
    return m == _eye(len(m))
