"""Tile level: strip-mine a perfectly nested, permutable band and move its tile loops outside.

A tiled loop at row r becomes a tile loop `floor(r / size)` followed by a static row, inserted at
the band's first row; the point loops keep their rows (shifted by the inserted ones).  Legal when
the band is permutable (no dependence left unsatisfied by the rows before it goes backwards in
any of its rows) and every parallel loop of the band still carries nothing once it is a tile loop.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar, Iterator

from ..ir.looptree import LoopNode, LoopTree

from ..ir.schedule import loop_label
from ..ir.rows import TILE_ROWS, BandRef, first_statement
from ..ir.schedule import Lowered, Row
from ..poly.deps import Dependences
from ..poly.legality import is_permutable, parallel_loops_kept
from .registry import CandidateContext, Encoding, Transform, band_refs, register

if TYPE_CHECKING:
    from ..target import Target

TILE_SIZES = (32, 64, 128)


@register
@dataclass(frozen=True)
class Tile(Transform):
    """Strip-mine perfectly nested bands of 2 or 3 loops and move the tile loops outside them.

    Several bands (of different nests) may be tiled in one step; each is named by its rows before
    the step, and rows inserted for an earlier band shift the later ones.
    """

    bands: tuple[BandRef, ...]
    kind: ClassVar[str] = "tile"
    level: ClassVar[str] = "tile"
    feature_slot: ClassVar[int] = 7
    refines: ClassVar[bool] = True

    def __post_init__(self):  # accept plain tuples (JSON, tests): name them
        object.__setattr__(self, "bands", band_refs(self.bands))

    def touched(self) -> frozenset[str]:
        return frozenset(s for band in self.bands for s in band.statements)

    def apply(self, L: Lowered) -> Lowered:
        inserted: list[tuple[int, int]] = []  # (position in original numbering, width)
        for stmts, rows, sizes in self.bands:
            offset = sum(w for at, w in inserted if at <= rows[0])
            L = tile_band(L, stmts, tuple(r + offset for r in rows), sizes)
            inserted.append((rows[0], TILE_ROWS * len(rows)))
        return L

    def describe(self, L: Lowered) -> str:
        parts = []
        for stmts, rows, sizes in self.bands:
            names = [loop_label(L, stmts, r) for r in rows]
            parts.append(f"{','.join(names)},{','.join(map(str, sizes))}")
        return "tile(" + " ; ".join(parts) + ")" if len(parts) > 1 else f"tile({parts[0]})"

    def encoding(self) -> Encoding:
        band = self.bands[0]
        return Encoding(rows=band.rows, sizes=band.sizes)

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        """Each band is a perfectly nested chain of loops and permutable; parallel loops of the
        tiled statements carry nothing afterwards."""
        tree_before = before.tree
        for stmts, rows, _sizes in self.bands:
            top = tree_before.find(rows[0], stmts)
            if top is None:
                return f"no loop at row {rows[0]} over {','.join(stmts)}"
            chain = [l.row for l in tree_before.chain(top)]
            if list(rows) != chain[:len(rows)]:
                return "the band is not perfectly nested"
            if not is_permutable(deps, before, list(rows), set(stmts)):
                return "the band is not permutable (a dependence goes backwards in it)"
        if not parallel_loops_kept(deps, after, self.touched()):
            return "a parallel loop of the band would carry a dependence once tiled"
        return None

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["Tile"]:
        """Per size, the first band of every nest at once (when there are several nests), then
        each band alone: the outer and inner 2 and 3 loops of every maximal chain."""
        per_nest = _bands(ctx.tree)

        def band(loops: list[LoopNode], size: int) -> BandRef:
            return BandRef(loops[0].ref.statements, tuple(l.row for l in loops), (size,) * len(loops))

        for size in TILE_SIZES:
            firsts = [b[0] for b in per_nest.values() if b]
            if len(firsts) > 1:
                yield Tile(tuple(band(b, size) for b in firsts))
            for bands in per_nest.values():
                for b in bands:
                    yield Tile((band(b, size),))
        if ctx.grown:
            for bands in per_nest.values():
                for b in bands:
                    for sizes in cache_tiles(ctx.lowered, b, ctx.target):
                        yield Tile((BandRef(b[0].ref.statements, tuple(l.row for l in b), sizes),))


# Multiples of 96 divide evenly into register tiles of 4, 6, 8, 12 rows and 16, 24, 32 columns.
TILE_GRAIN = 96


def cache_tiles(L: Lowered, band: list[LoopNode], target: "Target") -> list[tuple[int, ...]]:
    """Rectangular tile sizes for a band, sized to the target's data caches: the loop
    that moves along the rows of what the band's first statement writes (contiguous) gets the
    long side, a loop absent from it (a reduction, k of a matrix product) a panel that keeps
    a tile's operands in L1 and L2, the other one rows enough to reuse that panel.

    With several threads, each shape also comes with its tile along a non-reduction loop cut
    so that the loop's tiles split evenly among the threads (`balanced`): one of those tile
    loops is what the parallel level makes parallel, and 3 tiles of 480 columns on 2 threads
    leave one thread a third of the work (LARGE trmm: 0.027 s with 480, 0.017 s with 600)."""
    stmt = L.program.statement(first_statement(band[0].statements))
    written = stmt.body.target
    roles = []
    for loop in band:
        it = _iterator(L, stmt.name, loop.row)
        if it is None or not written.index:
            return []
        if written.index[-1].coeff(it):
            roles.append("n")
        elif all(a.coeff(it) == 0 for a in written.index):
            roles.append("k")
        else:
            roles.append("m")
    e = written.dtype.nbytes
    l1, l2 = target.cache_bytes(1), target.cache_bytes(2)
    threads = target.threads
    kc = _round(l1 // (32 * e), 32)  # a 32-column panel of the reduction in L1
    nc = _round(l2 // (2 * kc * e), TILE_GRAIN)  # a kc x nc block of the contiguous operand in L2
    shapes = [(TILE_GRAIN, kc, nc), (2 * TILE_GRAIN, kc, nc)]
    if "k" not in roles:  # a stencil's band: a few rows of the contiguous dimension's length
        shapes = [(16, kc, _round(l2 // (4 * 16 * e), TILE_GRAIN)), (64, kc, nc)]
    out = []
    for m, k, n in shapes:
        sizes = tuple({"m": m, "k": k, "n": n}[r] for r in roles)
        if sizes not in out:
            out.append(sizes)
    if threads > 1:
        for sizes in list(out):
            for pos, (loop, role) in enumerate(zip(band, roles)):
                if role == "k":
                    continue
                extent = loop_extent(L, stmt.name, loop.row)
                even = balanced(extent, sizes[pos], threads) if extent else None
                if even is not None:
                    cut = sizes[:pos] + (even,) + sizes[pos + 1:]
                    if cut not in out:
                        out.append(cut)
    return out


VECTOR_GRAIN = 8  # a balanced tile stays a multiple of the widest vector of doubles


def balanced(extent: int, size: int, threads: int) -> int | None:
    """The tile size nearest `size` whose tiles of a loop of `extent` iterations split evenly
    among `threads` (their count a multiple of it, the last one nearly full), a multiple of
    VECTOR_GRAIN; None when `size` already does, or the loop is too short to give each thread
    a tile."""
    def even(s: int) -> bool:
        n = -(-extent // s)
        return n % threads == 0 and extent - (n - 1) * s >= s * 3 // 4
    if even(size) or extent < threads * VECTOR_GRAIN:
        return None
    best = None
    for parts in range(threads, extent // VECTOR_GRAIN + 1, threads):
        s = -(-extent // parts)
        s = -(-s // VECTOR_GRAIN) * VECTOR_GRAIN
        if even(s) and (best is None or abs(s - size) < abs(best - size)):
            best = s
        if s < size // 2:
            break
    return best


def loop_extent(L: Lowered, stmt: str, row: int) -> int | None:
    """How many values the plain loop row `row` of `stmt` takes (None: not a plain row)."""
    it = _iterator(L, stmt, row)
    if it is None:
        return None
    st = L.program.statement(stmt)
    return st.width(st.iterators.index(it))


def _round(x: int, grain: int) -> int:
    return max(grain, (x // grain) * grain)


def _iterator(L: Lowered, stmt: str, row: int) -> str | None:
    """The statement iterator a plain loop row runs over (None for a skewed or tiled row)."""
    r = L.rows[stmt][row]
    nz = [k for k, c in enumerate(r.coeffs) if c]
    if len(nz) != 1 or r.div != 1:
        return None
    return L.program.statement(stmt).iterators[nz[0]]


def _bands(tree: LoopTree) -> dict[int, list[list[LoopNode]]]:
    """Candidate bands (2 or 3 perfectly nested loops) per root nest index."""
    out: dict[int, list[list[LoopNode]]] = {}
    for k, nest in enumerate(tree.nests):
        bands: list[list[LoopNode]] = []
        for loop in nest.walk():
            p = tree.parent(loop)
            if p is not None and tree.chain(p)[1:2] == [loop]:
                continue  # not the start of a maximal chain
            chain = tree.chain(loop)
            for band in (chain[:2], chain[:3], chain[-2:], chain[-3:]):
                if len(band) >= 2 and band not in bands:
                    bands.append(band)
        out[k] = bands
    return out


def tile_band(L: Lowered, statements: tuple[str, ...], band: tuple[int, ...], sizes: tuple[int, ...],
              at: int | None = None) -> Lowered:
    """One band tiled: a (tile loop, static) row pair per loop inserted at the band's first row
    (or at row `at`, above loops left untiled: `parallel_blocks`), annotations moved with their
    rows (a parallel band loop's mark moves to its tile loop)."""
    at = band[0] if at is None else at
    width = TILE_ROWS * len(band)
    mine = set(statements)
    rows = {}
    for s, r in L.rows.items():
        r = list(r)
        if s in mine:
            ins = []
            for row, size in zip(band, sizes):
                base = r[row]
                ins += [Row(base.coeffs, base.const, size), Row((0,) * len(base.coeffs))]
        else:
            ins = [Row((0,) * len(r[0].coeffs))] * width
        rows[s] = tuple(r[:at] + ins + r[at:])

    def moved(s: str, row: int) -> int:
        if s in mine and row in band:
            return at + TILE_ROWS * band.index(row)
        return row + width if row >= at else row

    parallel = frozenset((s, moved(s, r)) for s, r in L.parallel)
    unroll = tuple((s, r + width if r >= at else r, f) for s, r, f in L.unroll)
    vector = frozenset((s, r + width if r >= at else r) for s, r in L.vector)
    kernels = tuple(m.shifted(at, width) for m in L.microkernels)
    return replace(L, rows=rows, parallel=parallel, unroll=unroll, vector=vector, microkernels=kernels)
