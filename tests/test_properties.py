"""Property tests: random programs x random legal transformation sequences compute the original's
outputs exactly; sequences isl calls illegal are never emitted."""
from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

from looper.datagen.synth import synth_program
from looper.lang.parse import parse_source
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_step, is_parallel, respects
from looper.search.beam import beam_search
from looper.search.policy import SearchPolicy
from looper.search.candidates import generate, level_plan
from looper.transforms.schedule import Schedule

from helpers import HashScores, differential

TINY = (2e3, 2e4)


def _program(seed: int):
    return parse_source(synth_program(seed, target=TINY), f"synth{seed}.py", "DEFAULT")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), data=st.data())
def test_random_legal_sequences_compute_the_original(seed, data, tmp_path_factory):
    program = _program(seed)
    deps = compute_dependences(program)
    schedules = []
    for _ in range(3):  # three random walks through the levels
        s = Schedule(program)
        for level in level_plan(2, 3):
            cands = generate(level, s, deps)
            if not cands or data.draw(st.booleans(), label=f"skip {level}"):
                continue
            steps = data.draw(st.sampled_from(cands), label=level)
            nxt, ok = s, True
            for step in steps:
                after = nxt.then(step)
                if check_step(deps, nxt.lowered, step, after.lowered) is not None:
                    ok = False
                    break
                nxt = after
            if ok:
                s = nxt
        if s.steps:
            schedules.append(s)
    if not schedules:
        return
    bad = differential(program, schedules, tmp_path_factory.mktemp("prop"))
    assert not bad, bad


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
