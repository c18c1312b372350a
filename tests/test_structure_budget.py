"""A measuring search's budget for choosing loop structure (SearchPolicy.structure_budget)."""
from __future__ import annotations

import time

from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.search.beam import beam_search
from looper.search.policy import SearchPolicy

from conftest import kernel_path
from helpers import HashScores


class Slow(HashScores):
    """Hash scores that take a while per candidate (like LARGE stencils' runs)."""

    def __init__(self, delay: float):
        super().__init__()
        self.delay = delay
        self.calls: list[int] = []

    def evaluate(self, program, schedules):
        time.sleep(self.delay * len(schedules))
        self.calls.append(len(schedules))
        return super().evaluate(program, schedules)


def test_structure_levels_stop_scoring_when_the_budget_is_spent_and_refinements_still_run():
    p = parse_file(kernel_path("jacobi_2d"), "MINI")
    d = compute_dependences(p)
    free = beam_search(p, d, HashScores(), SearchPolicy(beam=2, grown=True))
    ev = Slow(0.01)
    tight = beam_search(p, d, ev, SearchPolicy(beam=2, grown=True, structure_budget=0.05))
    levels = {e.level for e in tight.evaluated}
    assert {"tile", "unroll"} <= levels  # the refinement levels ran
    structure = lambda r: sum(1 for e in r.evaluated if e.level in ("fusion", "affine"))  # noqa: E731
    assert structure(tight) < structure(free)
    unscored = [e for e in tight.explored if e.score is None and e.rejected is None]
    assert unscored and all(e.level in ("fusion", "affine") for e in unscored)
