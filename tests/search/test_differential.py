"""Differential tests: every transformed program computes exactly what the original computes.

For each PolyBench kernel at MINI, the beam search (driven by a hash-based stand-in evaluator so
that it wanders over many legal schedules) proposes candidates; a fixed-seed sample of them is
compiled with -ffp-contract=off next to the original and must dump bit-identical outputs.
"""
from __future__ import annotations

import random

import pytest

from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.search.beam import beam_search
from looper.search.policy import SearchPolicy

from conftest import KERNELS, kernel_path
from helpers import HashScores, differential

SAMPLE = 20


@pytest.mark.parametrize("kernel", KERNELS)
def test_search_candidates_compute_the_original(kernel, tmp_path):
    program = parse_file(kernel_path(kernel), "MINI")
    deps = compute_dependences(program)
    result = beam_search(program, deps, HashScores(seed=1), SearchPolicy(beam=3, max_affine=3))
    legal = [e.schedule for e in result.evaluated if e.schedule.steps]
    assert legal, "the search found no legal candidate at all"
    rng = random.Random(kernel)
    sample = rng.sample(legal, min(SAMPLE, len(legal)))
    # always include the deepest sequences: they combine the most transformations
    deepest = sorted(legal, key=lambda s: -len(s.steps))[:5]
    sample += [s for s in deepest if s not in sample]
    bad = differential(program, sample, tmp_path)
    assert not bad, "\n".join(f"{d}: {p}" for d, p in bad)
