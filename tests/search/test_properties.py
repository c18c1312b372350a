"""Property tests: random programs x random legal transformation sequences compute the original's
outputs exactly; sequences isl calls illegal are never emitted."""
from __future__ import annotations

import random

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from looper.datagen.synth import synth_program
from looper.lang.parse import parse_file, parse_source
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule, is_parallel, respects
from looper.search.beam import beam_search, check
from looper.search.policy import SearchPolicy
from looper.search.candidates import generate, level_plan
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import HashScores, differential, target_for

TINY = (2e3, 2e4)
WALKS = 12  # per PolyBench kernel in the slow walks


def _program(seed: int):
    return parse_source(synth_program(seed, target=TINY), f"synth{seed}.py", "DEFAULT")


def _walk(program, deps, skip, choose, grown: bool = False, threads: int | None = None) -> Schedule:
    """One random walk through the levels: at each, maybe one random candidate, kept when isl
    accepts every step.  A step that raises (a bug, which the search would reject as an internal
    error) fails the test; a kept schedule has aligned rows (one length for every statement)."""
    s = Schedule(program)
    for level in level_plan(2, 3, grown=grown):
        cands = generate(level, s, deps, grown=grown, target=target_for(threads))
        if not cands or skip(level):
            continue
        e = check(s, tuple(choose(cands, level)), deps, level, explain=False)
        assert not (e.rejected or "").startswith("internal error"), (e.description, e.rejected)
        if e.rejected is None:
            assert len({len(rows) for rows in e.schedule.lowered.rows.values()}) == 1, e.description
            s = e.schedule
    return s


def _walks(program, deps, data, n: int, grown: bool = False) -> list[Schedule]:
    skip = lambda level: data.draw(st.booleans(), label=f"skip {level}")  # noqa: E731
    choose = lambda cands, level: data.draw(st.sampled_from(cands), label=level)  # noqa: E731
    walks = [_walk(program, deps, skip, choose, grown, threads=2 if grown else None) for _ in range(n)]
    return [s for s in walks if s.steps]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), data=st.data())
def test_random_legal_sequences_compute_the_original(seed, data, tmp_path_factory):
    program = _program(seed)
    schedules = _walks(program, compute_dependences(program), data, 3)
    if not schedules:
        return
    bad = differential(program, schedules, tmp_path_factory.mktemp("prop"))
    assert not bad, bad


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), data=st.data())
def test_random_sequences_in_the_grown_space_compute_the_original(seed, data, tmp_path_factory):
    """The grown space's levels too (time tiles, parallel blocks, packs, register tiles)."""
    program = _program(seed)
    schedules = _walks(program, compute_dependences(program), data, 3, grown=True)
    if not schedules:
        return
    bad = differential(program, schedules, tmp_path_factory.mktemp("grown"), threads=2)
    assert not bad, bad


# PolyBench kernels where walks have found bugs or whose shapes the grown space targets: products
# (register tiles, packs, blocks), triangles, stencils (time tiles), a sequence of nests.
WALKED = [("2mm", "SMALL"), ("trmm", "SMALL"), ("symm", "MINI"), ("syr2k", "MINI"), ("atax", "MINI"),
          ("seidel-2d", "MINI"), ("jacobi-2d", "MINI"), ("lu", "MINI"), ("correlation", "MINI"),
          ("doitgen", "MINI")]


@pytest.mark.slow
@pytest.mark.parametrize("kernel,size", WALKED)
def test_random_walks_over_polybench_in_the_grown_space_stay_aligned_legal_and_exact(kernel, size, tmp_path):
    """Seeded random walks (the same every run) through every level of the grown space; a walk
    like these found the misaligned register tile of 2mm at SMALL."""
    program = parse_file(kernel_path(kernel), size)
    deps = compute_dependences(program)
    rng = random.Random(f"{kernel}/{size}")
    finals = {}
    for _ in range(WALKS):
        s = _walk(program, deps, lambda level: rng.random() < 0.2, lambda cands, level: rng.choice(cands),
                  grown=True, threads=2)
        assert check_schedule(deps, s) is None, s.describe()
        finals.setdefault(s.identity, s)
    assert differential(program, list(finals.values()), tmp_path, threads=2) == []


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_search_never_emits_an_illegal_schedule(seed):
    program = _program(seed)
    deps = compute_dependences(program)
    result = beam_search(program, deps, HashScores(seed), SearchPolicy(beam=2, max_affine=2))
    for e in result.evaluated:
        L = e.schedule.lowered
        assert respects(deps, L), e.description
        tree = L.tree
        for loop in tree.loops():
            if any((s, loop.row) in L.parallel for s in loop.statements):
                assert is_parallel(deps, L, loop.row, set(loop.statements)), e.description
    assert result.best.lowered is not None
    assert all(e.score is None for e in result.rejected)
