"""A measured schedule's neighbours: its steps with one tile's sizes or one unroll factor changed.

The ranking's beam keeps a few refinements of each loop structure by their estimates, and the
estimates hardly tell tile sizes and unroll factors apart, so the measured leader's best variant
may never have been ranked: floyd-warshall MEDIUM's leader was `tile(i,j,64,64)` (4.4x the
original), and no tile of its loops with an unroll was among the ranking's candidates, where
`tile(i,j,32,32) ; unroll(j,4)` ran a third faster on another machine.  After its planned
rounds the budget measures the leader's neighbours and climbs to a faster one
(`budget.neighbour_round`), the local step of TVM's evolutionary search, which mutates tile sizes
and unroll factors of its measured best in the same way.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..ir.rows import BandRef
from ..poly.deps import Dependences
from ..poly.legality import check_schedule
from ..transforms.registry import CandidateContext
from ..transforms.schedule import Schedule
from ..transforms.sink_tiling import SIZES as SINK_SIZES, SinkTile
from ..transforms.tiling import TILE_SIZES, Tile
from ..transforms.unroll import UNROLL_FACTORS, Unroll

if TYPE_CHECKING:
    from ..target import Target

SMALLEST_TILE = 8  # a tile of fewer iterations per loop is mostly its loop's overhead


def tile_variants(t: Tile) -> list[Tile]:
    """`t` with every band at each square size of `TILE_SIZES`, then at half and twice its own
    sizes (a cache-sized rectangle keeps its shape), each once and never `t` itself."""
    def scaled(f) -> Tile:
        return Tile(tuple(BandRef(b.statements, b.rows, tuple(f(b.sizes))) for b in t.bands))

    out: list[Tile] = []
    options = [lambda s, n=n: (n,) * len(s) for n in TILE_SIZES]
    options += [lambda s: (max(SMALLEST_TILE, x // 2) for x in s), lambda s: (2 * x for x in s)]
    for f in options:
        v = scaled(f)
        if v != t and v not in out:
            out.append(v)
    return out


def sink_variants(t: SinkTile) -> list[SinkTile]:
    """`t` at the other sizes of its generator (multiples of every vector width: its point loop
    is the vector loop)."""
    return [replace(t, size=n) for n in SINK_SIZES if n != t.size]


def unroll_variants(u: Unroll) -> list[Unroll | None]:
    """`u` at the other factors of `UNROLL_FACTORS`, and dropped (None)."""
    return [replace(u, factor=f) for f in UNROLL_FACTORS if f != u.factor] + [None]


def added_unrolls(s: Schedule, deps: Dependences, target: "Target") -> list[tuple[int, Unroll]]:
    """Where `s` has no unroll: the unroll level's candidates on it, each with the position it
    takes (before a trailing parallel region, which the beam adds after the unroll level)."""
    if any(isinstance(t, Unroll) for t in s.steps):
        return []
    at = len(s.steps)
    while at and s.steps[at - 1].kind == "region":
        at -= 1
    base = Schedule(s.program, s.steps[:at])
    return [(at, u) for u in Unroll.candidates(CandidateContext(base.lowered, deps, target))]


def neighbours(s: Schedule, deps: Dependences, target: "Target") -> list[Schedule]:
    """`s` with one refinement changed: one tile step at another size (`tile_variants`,
    `sink_variants`), one unroll at another factor or dropped (`unroll_variants`), or an unroll
    added where it has none (`added_unrolls`).  Unroll changes come first: they keep the tiles'
    data reuse and cost the least to get wrong.  Only legal schedules, each once."""
    steps = s.steps
    out: list[Schedule] = []
    seen = {s.identity}

    def add(new_steps: tuple) -> None:
        n = Schedule(s.program, new_steps)
        if n.identity in seen:
            return
        seen.add(n.identity)
        try:
            why = check_schedule(deps, n)
        except (ValueError, KeyError, IndexError):  # a step that no longer applies
            return
        if why is None:
            out.append(n)

    for i, t in enumerate(steps):
        if isinstance(t, Unroll):
            for u in unroll_variants(t):
                add(steps[:i] + ((u,) if u is not None else ()) + steps[i + 1:])
    for at, u in added_unrolls(s, deps, target):
        add(steps[:at] + (u,) + steps[at:])
    for i, t in enumerate(steps):
        variants = tile_variants(t) if type(t) is Tile else sink_variants(t) if type(t) is SinkTile else []
        for v in variants:
            add(steps[:i] + (v,) + steps[i + 1:])
    return out
