"""Blocks of an inner loop hoisted above the loops around it and run in parallel
(transforms.parallel_blocks), alone and behind the distributions that free them."""
from __future__ import annotations

import pytest

from looper.lang.parse import parse_file, parse_source
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule, is_parallel
from looper.search.candidates import generate
from looper.transforms import Distribute, ParallelBlocks, Parallelize, Transform
from looper.transforms.parallel_blocks import block_sizes
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import differential, target_for

SKEWED = '''
SIZES = {"MINI": dict(N=40)}
def init(N: int, A: f64[N, N]):
    for i in range(N):
        for j in range(N):
            A[i, j] = f64((i * j + 1) % N) / N
def kernel(N: int, A: f64[N, N], y: f64[N]):
    for i in range(1, N):
        for j in range(N - 1):
            A[i, j] = A[i - 1, j + 1] * 0.5 + 1.0
    for i in range(N):
        for j in range(N):
            y[j] = y[j] + A[i, j]
OUTPUTS = ["A", "y"]
'''


def _atax(size: str):
    p = parse_file(kernel_path("atax"), size)
    return p, compute_dependences(p)


def test_atax_gets_a_parallel_product_of_column_blocks_behind_the_distribution():
    """atax's `y[j] += A[i][j] * tmp[i]` carries y along i: the parallel level offers the
    distribution that parts it from tmp's product, the products' parallel loops, and blocks of
    j above i (each thread a block of columns of every row); only in the grown space."""
    p, d = _atax("SMALL")
    s = Schedule(p)
    assert not any(isinstance(t, ParallelBlocks) for c in generate("parallel", s, d, target=target_for(2)) for t in c)
    cands = [c for c in generate("parallel", s, d, grown=True, target=target_for(2)) if isinstance(c[-1], ParallelBlocks)]
    assert cands and all(isinstance(c[0], Distribute) and isinstance(c[-2], Parallelize) for c in cands)
    assert {c[-1].size for c in cands} == set(block_sizes(124, 2))
    v = s.then(*cands[0])
    assert check_schedule(d, v) is None
    L = v.lowered
    st = p.statement("S3")
    rendered = [r.render(st.iterators) for r in L.rows["S3"] if any(r.coeffs)]
    assert rendered == [f"floor((j)/{cands[0][-1].size})", "i", "j"]  # the block loop above i
    top = cands[0][-1].top
    assert ("S3", top) in L.parallel and is_parallel(d, L, top, {"S3"})
    assert "blocks(j," in v.describe() and "above i" in v.describe()


@pytest.mark.parametrize("kernel", ["atax", "bicg"])
def test_blocked_schedules_compute_what_the_original_does(kernel, tmp_path):
    p = parse_file(kernel_path(kernel), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    variants = [s.then(*c) for c in generate("parallel", s, d, grown=True, target=target_for(2))
                if any(isinstance(t, ParallelBlocks) for t in c)]
    assert variants and all(check_schedule(d, v) is None for v in variants)
    assert differential(p, variants, tmp_path, threads=2) == []
    (tmp_path / "one").mkdir()
    assert differential(p, variants, tmp_path / "one", threads=1) == []
    (tmp_path / "three").mkdir()
    assert differential(p, variants, tmp_path / "three", threads=3) == []


def test_blocks_that_would_reverse_a_dependence_are_rejected_and_not_offered(tmp_path):
    """`A[i][j] = A[i-1][j+1]`: j carries nothing inside i, but its blocks above i would run a
    block before the block to its right has produced what it reads.  The second nest's j blocks
    are fine."""
    p = parse_source(SKEWED, "skewed.py", "MINI")
    d = compute_dependences(p)
    s = Schedule(p)
    bad = ParallelBlocks((("S0",), 3), 1, 16)
    assert "breaks" in (check_schedule(d, s.then(bad)) or "")
    cands = generate("parallel", s, d, grown=True, target=target_for(2))
    blocks = [t for c in cands for t in c if isinstance(t, ParallelBlocks)]
    assert blocks and all(b.loop.statements == ("S1",) for b in blocks)
    variants = [s.then(*c) for c in cands if any(isinstance(t, ParallelBlocks) for t in c)]
    assert all(check_schedule(d, v) is None for v in variants)
    assert differential(p, variants, tmp_path, threads=2) == []


def test_a_parallel_or_missing_loop_is_refused():
    p, d = _atax("MINI")
    s = Schedule(p).then(Distribute(("S1", "S2", "S3"), 1, (1, 2)))
    L = s.lowered
    inner = next(l for l in L.tree.loops() if l.statements == {"S3"} and l.is_innermost)
    outer = L.tree.parent(inner)
    marked = s.then(Parallelize((inner.ref,)))
    assert "already parallel" in check_schedule(d, marked.then(ParallelBlocks(inner.ref, outer.row, 16)))
    assert "no loop" in check_schedule(d, s.then(ParallelBlocks((("S3",), 2), outer.row, 16)))


def test_block_sizes_split_among_the_threads():
    assert block_sizes(2100, 2) == [1056, 264]  # one per thread; about 256, 8 blocks
    assert all(s % 8 == 0 for s in block_sizes(2100, 64))
    assert block_sizes(10, 2) == []  # no vector's worth per thread
    assert block_sizes(124, 1) == []  # one thread: one block, the whole loop


def test_json_round_trip():
    step = ParallelBlocks((("S3",), 3), 1, 264)
    assert Transform.from_json(step.to_json()) == step


def test_the_distributions_of_a_schedule_are_walked_once_and_replayed():
    """The packs, register tiles and parallel blocks all walk the distributions of the schedules
    they are offered (`fusion.distributions`): the second walk replays the first, as far as it
    went and on from there, with what a fresh walk finds; a walk an exception cut short (an
    interrupt) is not replayed as complete."""
    from looper.ir.schedule import original
    from looper.transforms import fusion
    from looper.transforms.registry import CandidateContext
    from helpers import TARGET
    p = parse_file(kernel_path("3mm"), "SMALL")
    L = original(p)
    ctx = CandidateContext(L, compute_dependences(p), TARGET, grown=True)
    first = next(fusion.distributions(L, ctx, 2))
    walked = list(fusion.distributions(L, ctx, 2))
    assert walked[0] is first and len(walked) > 3
    again = list(fusion.distributions(L, ctx, 2))
    assert all(a is b for a, b in zip(again, walked)) and len(again) == len(walked)
    fresh = list(fusion._distributions(L, ctx, 2))
    assert [(s, M.rows) for s, M in fresh] == [(s, M.rows) for s, M in walked]

    def cut_short():
        yield 1
        raise KeyboardInterrupt

    walk = fusion._Walk(L, cut_short())
    items = iter(walk)
    assert next(items) == 1
    with pytest.raises(KeyboardInterrupt):
        next(items)
    assert walk.broken


def test_distributions_that_split_only_settled_loops_free_nothing_new():
    """`freeing_distributions` splits no loop whose statements are all free already, or out of
    the register tiles' reach (`out_of_reach`): what it frees is what the legal distributions of
    the whole walk free, for the register tiles' `free` and the parallel blocks' alike, from
    schedules with some statements free and some not, and each freed set comes with legal steps
    (an illegal distribution seen first hid a legal one that freed the same)."""
    from looper.ir.schedule import original
    from looper.poly.legality import order_violation
    from looper.transforms import fusion, parallel_blocks, register_tiling
    from looper.transforms.registry import CandidateContext
    from helpers import TARGET
    pruned = illegal = 0
    for kernel in ("3mm", "deriche", "symm", "adi"):
        p = parse_file(kernel_path(kernel), "MINI")
        deps = compute_dependences(p)
        top = CandidateContext(original(p), deps, TARGET, grown=True)
        for L in [original(p)] + [M for _s, M in fusion._distributions(original(p), top, 1)][:4]:
            ctx = CandidateContext(L, deps, TARGET, grown=True)
            frees = {"register": (lambda M: register_tiling._freed(M, ctx, frozenset()),
                                  register_tiling.out_of_reach(L)),
                     "parallel": (lambda M: parallel_blocks._parallel_at_top(M, ctx, {}), frozenset())}
            for name, (free, unreachable) in frees.items():
                before = free(L)
                walk = list(fusion._distributions(L, ctx, fusion.MAX_DISTRIBUTIONS))
                legal = [M for _s, M in walk if order_violation(deps, L, M) is None]
                illegal += len(walk) - len(legal)
                whole = {free(M) - before for M in legal} - {frozenset()}
                found = list(fusion.freeing_distributions(L, ctx, free, unreachable=unreachable))
                assert {new for _s, _M, new in found} == whole and len(found) == len(whole), (kernel, name)
                assert all(order_violation(deps, L, M) is None for _s, M, _new in found), (kernel, name)
                settled = before | unreachable
                pruned += len(walk) - len(list(fusion._distributions(L, ctx, fusion.MAX_DISTRIBUTIONS, settled)))
    assert pruned  # the walks it spared
    assert illegal  # distributions the walk may not offer
