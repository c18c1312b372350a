"""The measuring evaluator's output check: wrong code is never scored; FMA rounding is not wrong."""
from __future__ import annotations

import pytest

from looper.lang.parse import parse_file
from looper.search.evaluators import ExecutionEvaluator
from looper.transforms import Fuse, Interchange
from looper.transforms.schedule import Schedule

from conftest import kernel_path

# The model's MEDIUM answer for gramschmidt.  Legal, but built with gcc -O3 -march=native its
# loop order contracts different a*b+c into FMAs than the original's, and the kernel is
# ill-conditioned enough that R differs far beyond rounding tolerance, already at MINI.
GRAMSCHMIDT_ANSWER = [
    {"kind": "distribute", "statements": ["S4", "S5", "S6"], "row": 3, "cuts": [1]},
    {"kind": "distribute", "statements": ["S5", "S6"], "row": 3, "cuts": [1]},
    {"kind": "interchange", "statements": ["S5"], "row_a": 3, "row_b": 5},
    {"kind": "interchange", "statements": ["S6"], "row_a": 3, "row_b": 5},
]


def _evaluate(program, schedule):
    ev = ExecutionEvaluator(program, repeats=2, threads=2, memoize=False)
    try:
        return ev.evaluate(program, [schedule])[0]
    finally:
        ev.close()


def test_fma_rounding_alone_is_not_wrong():
    p = parse_file(kernel_path("gramschmidt"), "MINI")
    score = _evaluate(p, Schedule.from_json(p, GRAMSCHMIDT_ANSWER))
    # accepted and timed ("slow" when a microsecond run at MINI happened to exceed the cutoff)
    assert score.status in ("ok", "slow") and score.speedup and score.times
    if score.status == "ok" and not score.detail:
        pytest.skip("this host's gcc contracts the answer and the original alike: no FMA difference to excuse")
    assert "FMA" in score.detail


def test_rounding_is_only_an_excuse_where_the_original_depends_on_it():
    """jacobi-1d's outputs do not change with FMA contraction: a candidate that differs from it
    under the timing flags is wrong whatever its exact build says (a miscompile, not rounding)."""
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    legal = Schedule.from_json(p, [{"kind": "parallelize", "loops": [[["S0"], 3], [["S1"], 3]]}])
    ev = ExecutionEvaluator(p, repeats=1, threads=2, memoize=False)
    try:
        ev.evaluate(p, [legal])  # writes the reference outputs
        assert ev.reference.same_without_fma(legal.lowered, 10.0) is False
        assert ev.reference.fma_sensitive is False
    finally:
        ev.close()


def test_illegal_schedule_is_wrong_and_not_scored():
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    fuse = Fuse(("S0",), ("S1",), 3, (1,))
    illegal = Schedule(p).then(fuse, Interchange(("S0", "S1"), 1, 3))  # time inside space: wrong
    score = _evaluate(p, illegal)
    assert score.status == "wrong" and score.speedup is None and "differ" in score.detail


def test_memo_only_replays_and_measures_nothing(tmp_path):
    from looper.runtime.measurements import MeasurementStore
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    s = Schedule.from_json(p, [{"kind": "parallelize", "loops": [[["S0"], 3], [["S1"], 3]]}])
    store = MeasurementStore(tmp_path / "memo.sqlite")
    first = ExecutionEvaluator(p, repeats=2, threads=2, store=store)
    measured = first.evaluate(p, [s])[0]
    first.close()
    replay = ExecutionEvaluator(p, repeats=2, threads=2, store=store, memo_only=True)
    again, missing = replay.evaluate(p, [s, Schedule(p).then(Fuse(("S0",), ("S1",), 3, (1,)))])
    replay.close()
    assert measured.times and replay.measured == 0  # "slow" too: a parallel loop at MINI costs
    assert (again.status, again.times) == (measured.status, measured.times)
    assert missing.status == "unmeasured" and missing.speedup is None


def test_interleaved_timing(tmp_path):
    from looper.codegen.harness import split_program_c
    from looper.runtime.compile import compile_split
    from looper.runtime.run import time_interleaved
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    b = compile_split(*split_program_c(p, [Schedule(p).lowered, Schedule(p).lowered]))
    false = tmp_path / "fails"
    false.write_text("#!/bin/sh\nexit 1\n")
    false.chmod(0o755)
    out = time_interleaved([(b.path, 0), (b.path, 1), (false, 0)], rounds=3, threads=1)
    assert len(out[0].times) == 3 and len(out[1].times) == 3
    assert all(t > 0 for t in out[0].times + out[1].times) and out[0].ok and out[1].ok
    assert not out[2].ok and out[2].failure.returncode == 1 and out[2].times == []
    assert out[0].why is None and out[2].why == "exit status 1"
    sleeps = tmp_path / "sleeps"
    sleeps.write_text("#!/bin/sh\nexec sleep 5\n")
    sleeps.chmod(0o755)
    (late,) = time_interleaved([(sleeps, 0)], rounds=1, threads=1, timeout=0.2)
    assert late.why == "a run timed out after 0.2 s"


def test_the_hybrid_budget_checks_then_times_as_run():
    """The flow with a real evaluator, not the machine's speed: no cutoff (slow_factor inf) and
    time limits of minutes, so that no status depends on how busy the machine is."""
    import math

    from looper.poly.deps import compute_dependences
    from looper.search.beam import beam_search
    from looper.search.budget import budgeted
    from looper.search.policy import SearchPolicy
    from helpers import HashScores
    p = parse_file(kernel_path("jacobi_1d"), "SMALL")
    d = compute_dependences(p)
    result = beam_search(p, d, HashScores(3), SearchPolicy(beam=2, max_affine=2))
    ev = ExecutionEvaluator(p, repeats=2, threads=2, memoize=False, slow_factor=math.inf, min_timeout=600.0)
    try:
        out, verified, report = budgeted(p, result, ev, rounds=1, per_round=3, confirm=2)
    finally:
        ev.close()
    assert len(verified) == 3 and report.rounds == [3]
    for v in verified:
        assert v.measured.status in ("ok", "wrong", "crash")
        if v.measured.status == "ok":
            assert len(v.measured.times) == 2  # two fresh runs each
    if out.best.steps:  # the fastest that passed the judgement of fresh interleaved runs
        assert report.judgement is not None and report.judgement.faster
        assert out.best_score.detail.startswith("confirmed: ")
        assert any(v.schedule is out.best for v in verified)


class _StructureModel:
    """A fake model: sure of a score per loop structure (`base`, of the step kinds), varying
    little within it (tiles, unrolls, parallel loops add a bit)."""
    name = "fake-model"

    def __init__(self, base):
        self.base = base

    def evaluate(self, program, schedules):
        from looper.search.scoring import Score
        out = []
        for s in schedules:
            kinds = [t.kind for t in s.steps]
            out.append(Score(self.base(kinds) + 0.1 * kinds.count("tile") + 0.05 * kinds.count("unroll")
                             + 0.2 * kinds.count("parallelize"), "predicted"))
        return out


def _likes_interchanged_tiles():
    """Sure of one structure: any interchange."""
    return _StructureModel(lambda kinds: 2.0 if "interchange" in kinds else 1.2)


def _dislikes_original_loops():
    """Sure that any restructuring beats the original loops, however refined."""
    from looper.transforms import TRANSFORMS
    return _StructureModel(lambda kinds: 1.1 if all(TRANSFORMS.by_kind(k).refines for k in kinds)
                           else 2.0 + 0.01 * len(kinds))


def test_hybrid_measures_distinct_structures_first():
    """The model's k best are one structure in k tile/unroll variants; hybrid measures the best
    of each structure before a second variant of any."""
    from looper.poly.deps import compute_dependences
    from looper.search.beam import beam_search
    from looper.search.policy import SearchPolicy
    from looper.search.hybrid import structure, top_candidates
    p = parse_file(kernel_path("gemm"), "MINI")
    d = compute_dependences(p)
    result = beam_search(p, d, _likes_interchanged_tiles(), SearchPolicy(beam=3, max_affine=1, drop_idle_enablers=True))
    naive = sorted((e for e in result.evaluated if e.schedule.steps), key=lambda e: -e.score.speedup)[:4]
    assert len({structure(e.schedule) for e in naive}) == 1  # what the old top-k measured
    cands = top_candidates(result, 4, d)
    keys = [structure(s) for s, _ in cands]
    assert len(cands) == 4 and len(set(keys)) >= 2
    assert cands[0][1] == naive[0].score.speedup  # the model's favourite still comes first
    firsts = [i for i, key in enumerate(keys) if key not in keys[:i]]
    assert firsts == list(range(len(firsts)))  # every structure's best before any second variant
    preds = [pred for _, pred in cands[:len(firsts)]]
    assert preds == sorted(preds, reverse=True)


def test_search_refines_the_original_loops_beside_its_beam():
    """The beam is all restructurings; the original loop structure's best refinement still goes
    on to the next level (it used to be the bare original: its tiling had no parallel loop)."""
    from looper.poly.deps import compute_dependences
    from looper.search.beam import beam_search, keeps_original_structure
    from looper.search.policy import SearchPolicy
    p = parse_file(kernel_path("gemm"), "MINI")
    d = compute_dependences(p)
    result = beam_search(p, d, _dislikes_original_loops(), SearchPolicy(beam=1, max_affine=1, drop_idle_enablers=True))
    assert result.best.steps and any(t.kind == "interchange" for t in result.best.steps)
    plain = [[t.kind for t in e.schedule.steps] for e in result.evaluated
             if keeps_original_structure(e.schedule)]
    assert ["parallelize", "tile"] in plain
    assert ["parallelize", "tile", "unroll"] in plain


def test_hybrid_always_measures_the_original_loops_refined():
    """Hybrid's k candidates include the original loop structure's best refinement even when k
    restructurings are predicted faster (LARGE fdtd-2d: five fusions predicted 3.9x measured
    1.5x, the parallelized original 3.6x)."""
    from looper.poly.deps import compute_dependences
    from looper.search.beam import beam_search, keeps_original_structure
    from looper.search.policy import SearchPolicy
    from looper.search.hybrid import structure, top_candidates
    p = parse_file(kernel_path("gemm"), "MINI")
    d = compute_dependences(p)
    result = beam_search(p, d, _dislikes_original_loops(), SearchPolicy(beam=3, max_affine=1, drop_idle_enablers=True))
    best_plain = max((e for e in result.evaluated if e.schedule.steps
                      and keeps_original_structure(e.schedule)), key=lambda e: e.score.speedup)
    restructured = {structure(e.schedule) for e in result.evaluated
                    if not keeps_original_structure(e.schedule)}
    assert len(restructured) > 3  # more restructurings than places: plain would have none
    cands = top_candidates(result, 3, d)
    assert len(cands) == 3
    assert [keeps_original_structure(s) for s, _ in cands] == [False, False, True]
    assert cands[-1][1] == best_plain.score.speedup
    assert len({structure(s) for s, _ in cands}) == 3


def test_check_runs_each_candidate_once_and_memoizes_nothing(tmp_path, monkeypatch):
    """Hybrid's check: right and wrong told apart in one run each; the memo is left alone (its
    entries hold `repeats` runs); evaluate still measures and memoizes as before."""
    import looper.runtime.run as E
    from looper.runtime.measurements import MeasurementStore
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    fused = Schedule(p).then(Fuse(("S0",), ("S1",), 3, (1,)))
    wrong = fused.then(Interchange(("S0", "S1"), 1, 3))  # illegal: time and space swapped
    store = MeasurementStore(tmp_path / "memo.sqlite")
    ev = ExecutionEvaluator(p, repeats=3, threads=1, store=store)
    runs = []
    real = E.run_binary
    monkeypatch.setattr(E, "run_binary", lambda *a, **kw: runs.append(a[2]) or real(*a, **kw))
    try:
        original, right, bad = ev.check(p, [Schedule(p), fused, wrong])
        assert right.status in ("ok", "slow") and len(right.times) == 1
        assert bad.status == "wrong" and bad.speedup is None
        assert runs and set(runs) == {1}
        assert store.get(ev.memo_key(fused)) is None
        assert ev.repeats == 3 and ev.store is store
        measured = ev.evaluate(p, [fused])[0]
        assert measured.status in ("ok", "slow") and store.get(ev.memo_key(fused)) is not None
        if measured.status == "ok":  # as users run it: 3 fresh processes of one call each
            assert runs[-3:] == [1, 1, 1] and len(measured.times) == 3
    finally:
        ev.close()


def test_schedules_that_print_the_same_code_are_timed_once(monkeypatch):
    """time_together builds one kernel per distinct C text: the original given as an answer gets
    the original's own times (speedup exactly 1), not a second copy's alignment luck."""
    import looper.runtime.run as E
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    fused = Schedule(p).then(Fuse(("S0",), ("S1",), 3, (1,)))
    seen = []
    real = E.time_as_run
    monkeypatch.setattr(E, "time_as_run", lambda pairs, *a, **kw: seen.append(pairs) or real(pairs, *a, **kw))
    ev = ExecutionEvaluator(p, repeats=1, threads=1)
    try:
        original, timed = ev.time_together(p, [Schedule(p), fused, Schedule(p).then(Fuse(("S0",), ("S1",), 3, (1,)))], 2)
    finally:
        ev.close()
    assert [k for _path, k in seen[0]] == [0, 1]
    (same, same_times), (_s, fused_times), (_s2, fused_again) = timed
    assert same == 1.0 and same_times == original
    assert fused_times == fused_again and len(original) == 2


SLOW_INIT = '''
SIZES = {"DEFAULT": dict(N=500)}


def init(N: int, A: f64[N, N], B: f64[N, N], x: f64[N]):
    for i in range(N):
        for j in range(N):
            B[i, j] = f64((i + 2 * j) % 7)
            A[i, j] = 0.0
    for i in range(N):
        for k in range(N):
            for j in range(N):
                A[i, j] += B[i, k] * B[j, k]


def kernel(N: int, A: f64[N, N], x: f64[N]):
    for i in range(N):
        x[i] = 2.0 * A[i, i]


OUTPUTS = ['x']
'''


def test_time_limits_allow_for_setup_even_when_the_memo_answered_everything(tmp_path):
    """lu LARGE spends ~45 s in init and ~4 s in its kernel: a limit from the kernel's time alone
    kills every run.  The setup time is measured on the original's reference run; when the memo
    answered every candidate (no run yet), interleaved timing runs the original first."""
    from looper.lang.parse import parse_source
    from looper.runtime.measurements import MeasurementStore
    from looper.transforms import Parallelize

    p = parse_source(SLOW_INIT, "slow_init.py", "DEFAULT")
    par = Schedule(p).then(Parallelize(((("S0",), 1),)))
    store = MeasurementStore(tmp_path / "memo.sqlite")
    first = ExecutionEvaluator(p, repeats=1, threads=1, store=store, min_timeout=0.01)
    try:
        assert first.evaluate(p, [par])[0].status in ("ok", "slow")
        assert first.limits.overhead > 20 * first.baseline  # the O(N^3) init against an O(N) kernel
    finally:
        first.close()
    again = ExecutionEvaluator(p, repeats=1, threads=1, store=store, min_timeout=0.01)
    try:
        assert again.evaluate(p, [par])[0].status in ("ok", "slow") and again.measured == 0
        assert again.limits.overhead is None  # nothing ran: the memo had the original and the candidate
        original, [(speedup, times)] = again.time_together(p, [par], rounds=2)
        assert again.limits.overhead > 20 * again.baseline
        assert speedup is not None and len(original) == len(times) == 2
    finally:
        again.close()


def test_exploring_search_refines_orders_the_beam_drops():
    """Data collection's `explore`: lanes beside the beam walk through structures the beam drops
    and are then refined, so a poor loop order gets parallelized and tiled and measured (what a
    model-guided search visits); the walk is seeded, so a rerun explores the same candidates."""
    from looper.poly.deps import compute_dependences
    from looper.search.beam import beam_search
    from looper.search.policy import SearchPolicy
    p = parse_file(kernel_path("gemm"), "MINI")
    d = compute_dependences(p)
    dislikes = _StructureModel(lambda kinds: 0.5 if "interchange" in kinds else 1.5)

    def search(explore, seed=0):
        return beam_search(p, d, dislikes, SearchPolicy(beam=1, max_affine=2, explore=explore, seed=seed))

    def refined_interchanges(result):
        return [e.description for e in result.evaluated
                if {"interchange", "tile"} <= {t.kind for t in e.schedule.steps}]

    plain = search(0)
    assert refined_interchanges(plain) == []  # the beam alone never refines an interchange
    assert not any(t.kind == "interchange" for t in plain.best.steps)
    runs = [search(2, seed) for seed in range(4)]
    assert any(refined_interchanges(r) for r in runs)
    for r in runs:
        assert len(r.explored) > len(plain.explored)
        # a lane takes its best refinement: an interchanged schedule tiled but left unparallelized
        # would mean the lane skipped the parallel level's best child (the fake model likes it)
        for e in r.evaluated:
            kinds = [t.kind for t in e.schedule.steps]
            if "interchange" in kinds and "tile" in kinds:
                assert "parallelize" in kinds, e.description
    again = search(2, 1)
    assert [e.description for e in again.explored] == [e.description for e in runs[1].explored]


def test_guided_exploration_measures_what_the_guide_would_choose():
    """With a guide, the lanes are the guide's own beam: here a guide sure of interchanges beside a
    measurement that dislikes them, so the interchanges the beam drops are refined and measured
    (the gap a model-guided search falls into), and the search's answer stays the measured best."""
    from looper.poly.deps import compute_dependences
    from looper.search.beam import beam_search
    from looper.search.policy import SearchPolicy
    p = parse_file(kernel_path("gemm"), "MINI")
    d = compute_dependences(p)
    dislikes = _StructureModel(lambda kinds: 0.5 if "interchange" in kinds else 1.5)
    likes = _StructureModel(lambda kinds: 2.0 if "interchange" in kinds else 1.0)
    base = beam_search(p, d, dislikes, SearchPolicy(beam=1, max_affine=1, drop_idle_enablers=True))
    guided = beam_search(p, d, dislikes, SearchPolicy(beam=1, max_affine=1, explore=2, explore_guide=likes))
    refined = [e for e in guided.evaluated
               if {"interchange", "parallelize", "tile", "unroll"} <= {t.kind for t in e.schedule.steps}]
    assert refined
    assert all(e.score.speedup < 1.5 for e in refined)  # measured by the search's evaluator
    assert guided.best_score.speedup == base.best_score.speedup
    assert not any(t.kind == "interchange" for t in guided.best.steps)


def test_a_variant_gcc_refuses_does_not_take_its_batch_with_it(monkeypatch):
    """Candidates are compiled in batches; a batch gcc refuses is halved until the refused
    variant is alone, and the others are measured as usual."""
    from looper.runtime.compile import CompileError
    from looper.transforms import Parallelize
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    good = Schedule.from_json(p, [{"kind": "parallelize", "loops": [[["S0"], 3], [["S1"], 3]]}])
    others = [Schedule(p).then(Parallelize(((("S0",), 3),))), Schedule(p).then(Parallelize(((("S1",), 3),)))]
    bad = Schedule(p).then(Interchange(("S0",), 1, 3))
    ev = ExecutionEvaluator(p, repeats=1, threads=2, memoize=False)
    real = ev.builder.build
    builds = []

    def build(variants, exact=False):
        builds.append(len(variants))
        if any(v is bad.lowered for v in variants):
            raise CompileError("error: gcc refused it")
        return real(variants, exact)

    monkeypatch.setattr(ev.builder, "build", build)
    try:
        scores = ev.evaluate(p, [good, bad] + others)
    finally:
        ev.close()
    assert [s.status for s in scores][1] == "compile-error"
    assert all(s.status != "compile-error" and s.times for k, s in enumerate(scores) if k != 1)
    assert 4 in builds and 2 in builds  # the batch, then its halves (after the original's build)


def test_no_slow_cutoff_below_the_floor():
    """The first-run cutoff is never below the floor of the clock's resolution and the jitter of
    the original's own runs (synthetic times: nothing here is timed)."""
    import math

    import pytest

    from looper.runtime.limits import JITTER_MULTIPLE, RESOLUTION_MULTIPLE, TimeLimits, slow_floor

    ns = 1e-9
    assert slow_floor(ns, [2e-6]) == math.inf  # one run: no jitter measured
    assert slow_floor(ns, [3e-6, 2e-6, 2.1e-6]) == pytest.approx(JITTER_MULTIPLE * 1e-6)  # cold run, warm ones
    assert slow_floor(1e-6, [2e-9, 1e-9]) == pytest.approx(RESOLUTION_MULTIPLE * 1e-6)  # a coarse clock
    limits = TimeLimits(slow_factor=2.0)
    assert limits.for_candidate(3, 2e-6)[0] == 0.0  # not calibrated: no cutoff
    limits.best = 2e-6
    limits.floor = slow_floor(ns, [3e-6, 2e-6, 2.1e-6])
    assert limits.for_candidate(3, 2e-6)[0] == pytest.approx(4e-6)  # twice the best, above the floor
    limits.best = 0.2
    limits.floor = slow_floor(ns, [0.5, 0.2, 0.21])  # a noisy original: its runs spread 0.3 s
    cutoff, timeout = limits.for_candidate(3, 0.2)
    assert cutoff == pytest.approx(JITTER_MULTIPLE * 0.3) and timeout == limits.process(4, 0.2)
    limits.calibrate([1e-3, 1e-3])  # no spread: the clock's resolution decides
    assert limits.floor >= RESOLUTION_MULTIPLE * 1e-9 and limits.for_candidate(3, 0.2)[0] == pytest.approx(0.4)


def test_the_model_scores_the_same_when_forked_processes_featurize(monkeypatch):
    """The model evaluator featurizes a level's candidates on `jobs` processes (`looper.forked`):
    the scores are those of one process, in the same order, and children did take a share."""
    import looper.forked as forked
    from helpers import HashScores
    from looper.poly.deps import compute_dependences
    from looper.search.beam import beam_search
    from looper.search.evaluators import ModelEvaluator
    from looper.search.policy import SearchPolicy
    p = parse_file(kernel_path("2mm"), "MINI")
    result = beam_search(p, compute_dependences(p), HashScores(1), SearchPolicy(beam=2, max_affine=1, grown=True))
    cands = [e.schedule for e in result.explored if e.rejected is None and e.schedule.steps][:240]
    assert len(cands) >= 2 * forked.LEAST_SHARE
    one = [s.speedup for s in ModelEvaluator(p, jobs=1).evaluate(p, cands)]
    started = []
    real = forked.multiprocessing.get_context
    monkeypatch.setattr(forked.multiprocessing, "get_context", lambda kind: started.append(kind) or real(kind))
    two = [s.speedup for s in ModelEvaluator(p, jobs=2).evaluate(p, cands)]
    assert started == ["fork"]
    assert two == one and len(set(one)) > 10
