"""Restraint: a kernel shorter than what starting a thread team costs gets no parallel candidate.
The threshold comes from the target's measured limits (tests pin them; nothing is timed)."""
from __future__ import annotations

import dataclasses

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
