"""Tile level: tile one loop of an imperfect nest, its point loop sunk innermost (Pluto's tiling of
imperfectly nested loops; "strip-mine and sink").

`Tile` needs a perfectly nested band.  Many nests are not perfect: gramschmidt's

    for k { ...; for j { R[k][j] = 0; for i R[k][j] += Q[i][k] * A[i][j];
                                     for i A[i][j] -= Q[i][k] * R[k][j]; } }

has a column loop `j` around a statement and two row loops.  Strip-mining `j` and sinking its
point loop below every loop inside it gives

    for k { ...; for jt { for j in jt: R[k][j] = 0;
                          for i: for j in jt: R[k][j] += ...;
                          for i: for j in jt: A[i][j] -= ...; } }

where each statement walks a block of columns row by row (stride 1 innermost), both sweeps over
a block of A run while it is in L2, and the blocks are independent (`jt` is parallel).  Pluto's
`--tile --parallel` finds this schedule; looper's levels could not express it: the point loop
would have to be distributed and interchanged after tiling.

Rows, for a statement under the tiled loop at row `a`, whose innermost loop is at row `last`:
`[.., a: floor(j / size), a+1: its position among the loop's children, a+2..last+1: the loops
inside (unchanged rows), last+2: j, last+3: 0]`.  Every other statement gets two padding rows
at `a`.  Legal when every dependence is kept (isl) and the loops marked parallel still carry none.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Iterator

from ..ir.looptree import LoopNode

from ..ir.schedule import loop_label
from ..ir.rows import TILE_ROWS, LoopRef
from ..ir.schedule import Lowered, Row
from ..poly.deps import Dependences
from ..poly.legality import is_parallel, order_violation, parallel_loops_kept
from .parallel import Parallelize
from .registry import CandidateContext, Encoding, Transform, loop_refs, register

SIZES = (32, 64, 128)  # multiples of every vector width: the point loop is the vector loop


@register
@dataclass(frozen=True)
class SinkTile(Transform):
    """Strip-mine `loop` by `size` (tile loop in its place) and sink the point loop below every
    loop inside it, for each statement."""

    loop: LoopRef
    size: int
    kind: ClassVar[str] = "sinktile"
    feature_slot: ClassVar[int] = 18
    level: ClassVar[str] = "tile"

    def __post_init__(self):  # accept a plain (statements, row) pair (JSON, tests)
        object.__setattr__(self, "loop", loop_refs((self.loop,))[0])

    def touched(self) -> frozenset[str]:
        return frozenset(self.loop.statements)

    def apply(self, L: Lowered) -> Lowered:
        return sink_tile(L, self.loop.statements, self.loop.row, self.size)

    def describe(self, L: Lowered) -> str:
        return f"sinktile({loop_label(L, self.loop.statements, self.loop.row)},{self.size})"

    def encoding(self) -> Encoding:
        return Encoding(rows=(self.loop.row,), sizes=(self.size,))

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        """Every dependence kept; every parallel loop of the tiled statements still parallel."""
        if any(m.stmt in self.touched() for m in before.microkernels):
            return "a register tile inside the loop"
        why = order_violation(deps, before, after, explain)
        if why is not None:
            return why
        if not parallel_loops_kept(deps, after, self.touched()):
            return "a parallel loop would carry a dependence once the point loop is sunk"
        return None

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator[tuple]:
        """Every loop over an imperfect nest (a statement beside a loop, or two loops), plainly
        scheduled, at each size; followed by making its tile loop parallel when it carries
        nothing and nothing around or inside it is parallel already (the parallel level ran
        before the tile loop existed)."""
        if not ctx.grown:
            return
        L = ctx.lowered
        tree = ctx.tree
        for loop in tree.loops():
            if not _imperfect(loop) or any(m.stmt in loop.statements for m in L.microkernels):
                continue
            if any(L.rows[s][loop.row].div != 1 or L.rows[s][loop.row].extra for s in loop.statements):
                continue
            around = tree.enclosing(loop) + list(loop.walk())
            free = not any((s, l.row) in L.parallel for l in around for s in l.statements)
            for size in SIZES:
                step = cls(loop.ref, size)
                yield (step,)
                if free:
                    after = step.apply(L)
                    if is_parallel(ctx.deps, after, loop.row, set(loop.statements)):
                        yield (step, Parallelize((loop.ref,)))


def _imperfect(loop: LoopNode) -> bool:
    return len(loop.loops) >= 1 and len(loop.children) >= 2


def sink_tile(L: Lowered, statements: tuple[str, ...], a: int, size: int) -> Lowered:
    """The rows of `sink_tile`'s docstring; annotations follow their loops (a parallel mark on
    the tiled loop goes to its tile loop, marks inside keep their rows)."""
    mine = set(statements)
    rows: dict[str, tuple[Row, ...]] = {}
    point_at: dict[str, int] = {}
    for s, r in L.rows.items():
        r = list(r)
        n = len(r)
        if s not in mine:
            rows[s] = tuple(r[:a] + [Row((0,) * len(r[0].coeffs))] * TILE_ROWS + r[a:])
            continue
        zero = Row((0,) * len(r[0].coeffs))
        last = max(k for k in range(a, n) if not r[k].is_constant)
        base = r[a]
        new = r[:a] + [Row(base.coeffs, base.const, size), r[a + 1]] + r[a + 2:last + 2] + [base, zero]
        new += [zero] * (n + TILE_ROWS - len(new))
        rows[s] = tuple(new)
        point_at[s] = last + 2

    def moved(s: str, row: int) -> int | None:
        if s not in mine:
            return row + TILE_ROWS if row >= a else row
        if row == a:
            return a  # the tile loop takes the loop's place
        return row  # the loops inside keep their rows

    def keep(marks):
        return [(s, moved(s, r)) + tuple(rest) for s, r, *rest in marks if not (s in mine and r == a)]

    parallel = frozenset((s, moved(s, r)) for s, r in L.parallel)
    unroll = tuple(keep(L.unroll))
    vector = frozenset(keep(L.vector))
    kernels = tuple(m.shifted(a, TILE_ROWS) for m in L.microkernels)
    return replace(L, rows=rows, parallel=parallel, unroll=unroll, vector=vector, microkernels=kernels)
