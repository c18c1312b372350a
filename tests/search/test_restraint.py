"""Restraint: a kernel shorter than what starting a thread team costs gets no parallel candidate.
The threshold comes from the target's measured limits (tests pin them; nothing is timed)."""
from __future__ import annotations

import dataclasses

import pytest

from helpers import TARGET, HashScores
from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.search.beam import beam_search
from looper.search.policy import SearchPolicy
from looper.search.restraint import MARGIN, restraint, threshold
from looper.target import Limits

from conftest import kernel_path

FORK = 3e-3  # a team of 2 costs 3 ms to start: as measured on a 2-vCPU VM


def _target(threads: int, fork: float | None):
    limits = Limits(threads, 100.0, 200.0, 30.0, 8, None, None, fork, 1e-6) if fork is not None else None
    return dataclasses.replace(TARGET, threads=threads, limits=limits)


def test_the_threshold_follows_the_measured_team_cost_and_the_threads():
    assert threshold(_target(2, FORK)) == MARGIN * FORK * 2  # T/2 + fork < T needs T > 2 fork
    assert threshold(_target(4, FORK)) == MARGIN * FORK * 4 / 3
    assert threshold(_target(1, FORK)) is None  # one thread: nothing to restrain
    assert threshold(_target(2, None)) is None  # never measured: no guess


def test_short_kernels_stay_sequential_and_the_report_says_why():
    why = restraint(5e-3, _target(2, FORK))
    assert why is not None and why.startswith("kept sequential: the original runs 5000 us, under 12000 us")
    assert restraint(20e-3, _target(2, FORK)) is None
    assert restraint(None, _target(2, FORK)) is None


def test_a_restrained_search_offers_no_parallel_candidate():
    p = parse_file(kernel_path("gemm"), "MINI")
    d = compute_dependences(p)
    why = restraint(1e-4, _target(2, FORK))
    free = beam_search(p, d, HashScores(1), SearchPolicy(beam=2, max_affine=1, target=TARGET))
    kept = beam_search(p, d, HashScores(1), SearchPolicy(beam=2, max_affine=1, target=TARGET, sequential=why))
    assert any(e.schedule.lowered.parallel for e in free.evaluated)
    assert not any(e.schedule.lowered.parallel for e in kept.evaluated)
    assert any(e.rejected == why for e in kept.explored)


def test_the_model_alone_restrains_by_the_terms_estimate_of_the_original():
    """`--evaluator model` measures nothing, so the analytic terms' estimate of the original's time
    stands in for it: gemm at MINI (microseconds) stays sequential where a team costs 3 ms, and is
    free where that cost was never measured."""
    from looper.costmodel.store import load_model
    from looper.search.restraint import estimated_seconds
    from looper.tune.options import Evaluator, TuneOptions
    from looper.tune.pipeline import prepare
    p = parse_file(kernel_path("gemm"), "MINI")
    assert 0 < estimated_seconds(p, _target(2, FORK)) < 1e-3
    model = load_model()
    options = TuneOptions(evaluator=Evaluator.MODEL, memo=False)
    kept = prepare(p, options, _target(2, FORK), model=model)
    assert kept.policy.sequential.startswith("kept sequential: the original is estimated to run")
    assert kept.policy.sequential in kept.notes
    assert prepare(p, options, _target(2, None), model=model).policy.sequential is None


def test_the_model_charges_a_parallel_candidate_the_teams_start():
    """The model's labels were timed warm, after the team had started; a parallel candidate's
    predicted time gains the target's first-region cost, a sequential one's does not."""
    from looper.costmodel.store import load_model
    from looper.search.evaluators import ModelEvaluator
    from looper.transforms import Distribute, Parallelize
    from looper.transforms.schedule import Schedule
    p = parse_file(kernel_path("gemm"), "MEDIUM")
    net, meta = load_model()
    split = Schedule(p).then(Distribute(("S0", "S1"), 1, (1,)))
    par = split.then(Parallelize(((("S1",), 1),)))
    free = ModelEvaluator(p, net, meta, TARGET)
    charged = ModelEvaluator(p, net, meta, TARGET, first_region=1e-3, original_seconds=1e-3)
    assert charged.as_run(par, 4.0) == 1e-3 / (1e-3 / 4.0 + 1e-3)
    assert charged.as_run(split, 4.0) == 4.0
    (s0, p0), (s1, p1) = (free.evaluate(p, [split, par]), charged.evaluate(p, [split, par]))
    assert s1.speedup == s0.speedup
    assert p1.speedup == pytest.approx(1 / (1 / p0.speedup + 1.0))
    assert ModelEvaluator(p, net, meta, TARGET, first_region=1e-3).as_run(par, 4.0) == 4.0  # no time: no charge


def test_the_terms_estimate_lets_a_long_integer_kernel_have_threads():
    """floyd-warshall at MEDIUM runs 82 ms as gcc compiles it; the terms once estimated 7 ms (its
    j loop at vector speed, one operation a point), so the model alone kept it sequential where a
    team costs 5 ms (threshold 20 ms).  Counted as gcc runs it, it clears the threshold."""
    from looper.search.restraint import estimated_seconds
    fork = 5e-3
    p = parse_file(kernel_path("floyd-warshall"), "MEDIUM")
    assert restraint(estimated_seconds(p, _target(2, fork)), _target(2, fork), estimated=True) is None
