"""Parallel level: blocks of an inner loop, their loop hoisted above the loops around it and run
in parallel.

atax's second product, `y[j] += A[i][j] * tmp[i]`, carries y along i; only j is parallel, and
`parallel for` on j forks a team for every row of A.  Strip-mining j and hoisting its block loop
above i,

    parallel for jb { for i { for j in block jb: y[j] += A[i][j] * tmp[i] } }

gives each thread a block of columns of every row (stride 1 innermost, its block of y in L1) and
forks once.  Pluto's `--tile --parallel` reaches the same schedule as a tile of (i, j) whose
parallel tile loop is outermost; the tile level here keeps the tile loops in the band's order.

Rows: for the statements under the strip-mined loop (row b), a (floor(row b / size), static)
pair inserted at the row of the loop it goes above (`top`); every other statement gets two
padding rows there (`tiling.tile_band`).  Legal when every dependence is kept (isl) and the block
loop carries none.

The module also offers what a distribution frees for the parallel level (`after_distribution`):
the fusion levels score a distribution by itself, serial, and drop the one that splits atax's
products (it reads A twice), before the level at which both halves would run in parallel.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Iterator

from ..ir.looptree import LoopNode

from ..ir.schedule import loop_label
from ..ir.rows import TILE_ROWS, LoopRef
from ..ir.schedule import Lowered
from ..poly.deps import Dependences
from ..poly.legality import is_parallel, order_violation
from .fusion import freeing_distributions
from .parallel import Parallelize
from .registry import CandidateContext, Encoding, Transform, loop_refs, register
from .tiling import VECTOR_GRAIN, balanced, loop_extent, tile_band

L1_BLOCK = 256  # columns: a block of a vector of doubles (2 KiB) and of each row stays in L1


@register
@dataclass(frozen=True)
class ParallelBlocks(Transform):
    """Strip-mine `loop` by `size` and hoist its block loop to row `top` (a loop of the same
    perfect nest around it), marked parallel."""

    loop: LoopRef
    top: int
    size: int
    kind: ClassVar[str] = "blocks"
    feature_slot: ClassVar[int] = 16
    level: ClassVar[str] = "parallel"
    refines: ClassVar[bool] = True

    def __post_init__(self):  # accept a plain (statements, row) pair (JSON, tests)
        object.__setattr__(self, "loop", loop_refs((self.loop,))[0])

    def touched(self) -> frozenset[str]:
        return frozenset(self.loop.statements)

    def apply(self, L: Lowered) -> Lowered:
        stmts = self.loop.statements
        after = tile_band(L, stmts, (self.loop.row,), (self.size,), at=self.top)
        return replace(after, parallel=after.parallel | frozenset((s, self.top) for s in stmts))

    def describe(self, L: Lowered) -> str:
        stmts, row = self.loop
        return f"blocks({loop_label(L, stmts, row)},{self.size},above {loop_label(L, stmts, self.top)})"

    def encoding(self) -> Encoding:
        return Encoding(rows=(self.top, self.loop.row), sizes=(self.size,))

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        """The loop and `top` are one perfect nest, with no parallel loop in or around it; every
        dependence is kept and the block loop carries none."""
        tree = before.tree
        loop = tree.find(self.loop.row, self.loop.statements)
        if loop is None:
            return f"no loop at row {self.loop.row} over {','.join(self.loop.statements)}"
        top = next((l for l in tree.enclosing(loop) if l.row == self.top), None)
        if top is None or loop not in tree.chain(top):
            return "the block loop must go above loops perfectly nested around the loop"
        around = tree.enclosing(top) + list(top.walk())
        if any((s, l.row) in before.parallel for l in around for s in l.statements):
            return "nested inside (or around) a loop that is already parallel"
        why = order_violation(deps, before, after, explain)
        if why is not None:
            return why
        if not is_parallel(deps, after, self.top, set(self.loop.statements)):
            return "the block loop carries a dependence"
        return None

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator[tuple]:
        """In the grown space, on a schedule with no parallel loop: every nest's outermost
        parallel loop, and blocks for the nests that have none but an inner loop that can be
        hoisted (one candidate per block size); then the same after each distribution (up to
        MAX_DISTRIBUTIONS) that gives more statements a parallel loop at their nest's top."""
        if not ctx.grown or ctx.lowered.parallel:
            return
        for plan in parallel_plans(ctx.lowered, ctx):
            if any(isinstance(t, ParallelBlocks) for t in plan):
                yield plan
        yield from after_distribution(ctx)


def after_distribution(ctx: CandidateContext) -> Iterator[tuple]:
    """The fewest distributions that give more statements a parallel loop at the top of their
    nest (directly or as blocks), each followed by the parallel plans of its result."""
    memo: dict = {}
    for steps, after, _new in freeing_distributions(ctx.lowered, ctx, lambda M: _parallel_at_top(M, ctx, memo)):
        inner = CandidateContext(after, ctx.deps.of(after.program), ctx.target, grown=True)
        for plan in parallel_plans(after, inner):
            yield steps + plan


def parallel_plans(L: Lowered, ctx: CandidateContext) -> Iterator[tuple]:
    """Parallel loops for every nest of `L` at once: its outermost loop when that carries
    nothing, else blocks of the outermost hoistable inner loop, one plan per block size."""
    direct: list[LoopNode] = []
    blocked: list[tuple[LoopNode, LoopNode, list[int]]] = []
    for nest in L.tree.nests:
        if is_parallel(ctx.deps, L, nest.row, set(nest.statements)):
            direct.append(nest)
            continue
        found = _hoistable(L, ctx, nest)
        if found is not None:
            blocked.append(found)
    if not blocked:
        if direct:
            yield (Parallelize(tuple(l.ref for l in direct)),)
        return
    head = (Parallelize(tuple(l.ref for l in direct)),) if direct else ()
    for choice in range(max(len(sizes) for _t, _l, sizes in blocked)):
        steps: list[Transform] = []
        inserted: list[int] = []  # rows where earlier blocks inserted theirs (in L's numbering)
        for top, loop, sizes in blocked:
            shift = TILE_ROWS * sum(1 for at in inserted if at <= top.row)
            ref = LoopRef(loop.ref.statements, loop.row + shift)
            steps.append(ParallelBlocks(ref, top.row + shift, sizes[min(choice, len(sizes) - 1)]))
            inserted.append(top.row)
        yield head + tuple(steps)


def _hoistable(L: Lowered, ctx: CandidateContext, nest: LoopNode) -> tuple[LoopNode, LoopNode, list[int]] | None:
    """(top, loop, block sizes): the outermost loop of the nest's perfect chain whose blocks can
    go above the outermost loop possible; None when there is none."""
    chain = L.tree.chain(nest)
    stmts = set(nest.statements)
    for k, loop in enumerate(chain[1:], start=1):
        if not is_parallel(ctx.deps, L, loop.row, stmts):
            continue
        extent = loop_extent(L, min(stmts), loop.row)
        sizes = block_sizes(extent, ctx.thread_count) if extent else []
        if not sizes:
            continue
        for top in chain[:k]:
            step = ParallelBlocks(loop.ref, top.row, sizes[0])
            if step.check(ctx.deps, L, step.apply(L)) is None:
                return top, loop, sizes
    return None


def block_sizes(extent: int, threads: int) -> list[int]:
    """Block sizes for a loop of `extent` iterations on `threads`: one block per thread, and
    blocks of about L1_BLOCK (when smaller), their count a multiple of the thread count
    (`tiling.balanced`); multiples of VECTOR_GRAIN, shorter than the loop.  None fit a loop too
    short to give every thread a vector's worth."""
    if extent < max(threads, 2) * VECTOR_GRAIN:
        return []
    per_thread = -(-extent // threads)
    out = [-(-per_thread // VECTOR_GRAIN) * VECTOR_GRAIN]
    small = balanced(extent, L1_BLOCK, threads) or L1_BLOCK
    if small < out[0]:
        out.append(small)
    return [s for s in out if s < extent]


def _parallel_at_top(L: Lowered, ctx: CandidateContext, memo: dict) -> frozenset[str]:
    """Statements whose nest's top loop is parallel, directly or as blocks.  A nest's answer
    depends only on its statements' rows (`memo`: deriche's 1293 distributions change one nest
    each, 20 s -> under 1 s)."""
    out: set[str] = set()
    for nest in L.tree.nests:
        key = tuple((s, L.rows[s]) for s in sorted(nest.statements))
        if key not in memo:
            memo[key] = is_parallel(ctx.deps, L, nest.row, set(nest.statements)) or \
                _hoistable(L, ctx, nest) is not None
        if memo[key]:
            out |= nest.statements
    return frozenset(out)
