"""Candidate transformations per search level, read off the current loop tree.

Levels follow LOOPer's order: fusion (fuse with shifting, distribute) -> affine x N (interchange,
reversal, skew) -> parallelization -> tiling -> unrolling.  Generators propose; the isl legality
check (`looper.poly.legality.check_step`) disposes.  Skew factors come from the dependence
distances (a Pluto-like choice), not a fixed list.
"""
from __future__ import annotations

from typing import Iterator

from ..poly.deps import Dependences
from ..poly.legality import is_parallel, is_permutable, min_distance
from ..poly.reuse import shares_data
from ..transforms.primitives import (
    Distribute, Fuse, Interchange, Parallelize, Reverse, Skew, Tile, Transform, Unroll,
)
from ..transforms.schedule import Lowered, Schedule
from ..transforms.tree import LoopNode, LoopTree, loop_tree

TILE_SIZES = (32, 64, 128)
UNROLL_FACTORS = (4, 8, 16)
MAX_FUSION_DEPTH = 3
MAX_SHIFT = 16
MAX_SKEW = 3


def level_plan(max_fusion: int = 2, max_affine: int = 4) -> list[str]:
    return ["fusion"] * max_fusion + ["affine"] * max_affine + ["parallel", "tile", "unroll"]


def _st(loop: LoopNode) -> tuple[str, ...]:
    return tuple(sorted(loop.statements, key=lambda s: int(s[1:])))


def generate(level: str, schedule: Schedule, deps: Dependences) -> list[Transform]:
    L = schedule.lowered
    tree = loop_tree(L)
    gen = {"fusion": _fusion, "affine": _affine, "parallel": _parallel, "tile": _tile,
           "unroll": _unroll}[level]
    out: list[Transform] = []
    seen: set = set()
    for t in gen(L, tree, deps):
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


# -- fusion level ---------------------------------------------------------------------------------

def _containers(tree: LoopTree) -> Iterator[tuple]:
    yield tree.roots
    for loop in tree.loops():
        yield loop.children


def fusion_shifts(L: Lowered, deps: Dependences, a: LoopNode, b: LoopNode, depth: int
                  ) -> tuple[int, ...] | None:
    """Per-level shifts of `b` that keep every dependence a -> b non-negative once fused."""
    involved = deps.restricted_to(set(a.statements) | set(b.statements))
    shifts: list[int] = []
    for k in range(depth):
        trial = Fuse(_st(a), _st(b), a.row, tuple(shifts) + (0,)).apply(L)
        m = min_distance(involved, trial, a.row + 2 * k)
        if m is None or -m > MAX_SHIFT:
            return None
        shifts.append(max(0, -m))
    return tuple(shifts)


def _fusion(L: Lowered, tree: LoopTree, deps: Dependences) -> Iterator[Transform]:
    for children in _containers(tree):
        for a, b in zip(children, children[1:]):
            if not (isinstance(a, LoopNode) and isinstance(b, LoopNode)):
                continue
            ca, cb = tree.chain(a), tree.chain(b)
            for depth in range(1, min(len(ca), len(cb), MAX_FUSION_DEPTH) + 1):
                shifts = fusion_shifts(L, deps, a, b, depth)
                if shifts is None:
                    break
                fuse = Fuse(_st(a), _st(b), a.row, shifts)
                # no data in common at this depth: none deeper either (poly.reuse says why)
                if not shares_data(fuse.apply(L), fuse.first, fuse.second, fuse.innermost_row):
                    break
                yield fuse
    for loop in tree.loops():
        n = len(loop.children)
        if n >= 2:
            yield Distribute(_st(loop), loop.row, tuple(range(1, n)))
            if n >= 3:
                for p in range(1, n):
                    yield Distribute(_st(loop), loop.row, (p,))


# -- affine level -----------------------------------------------------------------------------------

def _affine(L: Lowered, tree: LoopTree, deps: Dependences) -> Iterator:
    for loop in tree.loops():
        chain = tree.chain(loop)
        st = _st(loop)
        for inner in chain[1:]:
            yield Interchange(st, loop.row, inner.row)
        # an inner loop that shares its parent with other statements: split the parent around it,
        # then interchange (one candidate, so that the search sees the pair's benefit at once)
        if len(loop.children) > 1:
            n = len(loop.children)
            for pos, child in enumerate(loop.children):
                if isinstance(child, LoopNode):
                    cuts = tuple(c for c in (pos, pos + 1) if 0 < c < n)
                    yield (Distribute(st, loop.row, cuts), Interchange(_st(child), loop.row, child.row))
        yield Reverse(st, loop.row)
        if len(chain) >= 2:
            yield from skew_candidates(L, deps, st, [l.row for l in chain[:2]])
        if len(chain) >= 3:
            yield from skew_candidates(L, deps, st, [l.row for l in chain[:3]])


def skew_candidates(L: Lowered, deps: Dependences, st: tuple[str, ...], rows: list[int]
                    ) -> Iterator[Skew]:
    """Pluto-like skews of a 2- or 3-loop band: the smallest factors that make it permutable
    (tilable), and wavefronts that make the inner loops parallel."""
    stmts = set(st)
    rel = deps.restricted_to(stmts)
    if rel.is_empty():
        return
    permutable = is_permutable(deps, L, rows, stmts)
    n = len(rows)
    if not permutable:
        for m in _skew_matrices(n):
            cand = Skew(st, tuple(rows), m)
            if is_permutable(deps, cand.apply(L), rows, stmts):
                yield cand
                break
        return
    # permutable band: a wavefront on the outer loop frees the inner one(s)
    if is_parallel(deps, L, rows[1], stmts):
        return
    for g in range(1, MAX_SKEW + 1):
        if n == 2:
            m = ((1, g), (0, 1))
        else:
            m = ((1, g, g), (0, 1, 0), (0, 0, 1))
        cand = Skew(st, tuple(rows), m)
        if is_parallel(deps, cand.apply(L), rows[1], stmts):
            yield cand
            break


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


# -- parallel level ---------------------------------------------------------------------------------

def _parallel(L: Lowered, tree: LoopTree, deps: Dependences) -> Iterator[Transform]:
    if L.parallel:
        return
    cache: dict = {}

    def legal(loop: LoopNode) -> bool:
        k = loop.key()
        if k not in cache:
            cache[k] = is_parallel(deps, L, loop.row, set(loop.statements))
        return cache[k]

    def outermost(loop: LoopNode) -> list[LoopNode]:
        if legal(loop):
            return [loop]
        return [x for c in loop.loops for x in outermost(c)]

    per_nest = [outermost(n) for n in tree.nests]
    everything = [l for group in per_nest for l in group]

    def make(loops: list[LoopNode]) -> Parallelize:
        return Parallelize(tuple((_st(l), l.row) for l in loops))

    if everything:
        yield make(everything)
    if len([g for g in per_nest if g]) > 1:
        for group in per_nest:
            if group:
                yield make(group)
    deeper = [x for l in everything for c in l.loops for x in outermost(c)]
    if deeper:
        yield make(deeper)


# -- tile level -------------------------------------------------------------------------------------

def _bands(tree: LoopTree) -> dict[int, list[list[LoopNode]]]:
    """Candidate bands (2 or 3 perfectly nested loops) per root nest index."""
    out: dict[int, list[list[LoopNode]]] = {}
    for k, nest in enumerate(tree.nests):
        bands: list[list[LoopNode]] = []
        for loop in nest.walk():
            p = loop.parent
            if p is not None and tree.chain(p)[1:2] == [loop]:
                continue  # not the start of a maximal chain
            chain = tree.chain(loop)
            for band in (chain[:2], chain[:3], chain[-2:], chain[-3:]):
                if len(band) >= 2 and band not in bands:
                    bands.append(band)
        out[k] = bands
    return out


def _tile(L: Lowered, tree: LoopTree, deps: Dependences) -> Iterator[Transform]:
    per_nest = _bands(tree)

    def band(loops: list[LoopNode], size: int):
        return (_st(loops[0]), tuple(l.row for l in loops), (size,) * len(loops))

    for size in TILE_SIZES:
        firsts = [b[0] for b in per_nest.values() if b]
        if len(firsts) > 1:
            yield Tile(tuple(band(b, size) for b in firsts))
        for bands in per_nest.values():
            for b in bands:
                yield Tile((band(b, size),))


# -- unroll level -----------------------------------------------------------------------------------

def _unroll(L: Lowered, tree: LoopTree, deps: Dependences) -> Iterator[Transform]:
    if L.unroll:
        return
    def unrollable(l: LoopNode) -> bool:
        return l.is_innermost and not any((s, l.row) in L.parallel for s in l.statements)

    inner = [l for l in tree.loops() if unrollable(l)]
    if not inner:
        return
    nests = [[l for l in n.walk() if unrollable(l)] for n in tree.nests]
    for f in UNROLL_FACTORS:
        yield Unroll(tuple((_st(l), l.row) for l in inner), f)
        if len(nests) > 1:
            for group in nests:
                if group:
                    yield Unroll(tuple((_st(l), l.row) for l in group), f)
