"""A measuring search's budgets: for choosing loop structure (SearchPolicy.structure_budget) and
in all (SearchPolicy.time_budget)."""
from __future__ import annotations

from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.search import beam
from looper.search.beam import beam_search
from looper.search.policy import SearchPolicy

from conftest import kernel_path
from helpers import HashScores


class Slow(HashScores):
    """Hash scores that take a while per candidate (like LARGE stencils' runs): on `clock`,
    which only scoring moves, so that how fast the search's own machinery runs on the test
    machine decides nothing."""

    def __init__(self, delay: float, clock: "Clock"):
        super().__init__()
        self.delay = delay
        self.clock = clock
        self.calls: list[int] = []

    def evaluate(self, program, schedules):
        self.clock.now += self.delay * len(schedules)
        self.calls.append(len(schedules))
        return super().evaluate(program, schedules)


class Clock:
    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_structure_levels_stop_scoring_when_the_budget_is_spent_and_refinements_still_run(monkeypatch):
    p = parse_file(kernel_path("jacobi_2d"), "MINI")
    d = compute_dependences(p)
    free = beam_search(p, d, HashScores(), SearchPolicy(beam=2, grown=True))
    clock = Clock()
    monkeypatch.setattr(beam, "time", clock)
    ev = Slow(0.01, clock)
    tight = beam_search(p, d, ev, SearchPolicy(beam=2, grown=True, structure_budget=0.05))
    levels = {e.level for e in tight.evaluated}
    assert {"tile", "unroll"} <= levels  # the refinement levels ran
    structure = lambda r: sum(1 for e in r.evaluated if e.level in ("fusion", "affine"))  # noqa: E731
    assert structure(tight) < structure(free)
    unscored = [e for e in tight.explored if e.score is None and e.rejected is None]
    assert unscored and all(e.level in ("fusion", "affine") for e in unscored)


def test_the_search_budget_stops_scoring_inside_a_level_and_the_answer_was_scored(monkeypatch):
    p = parse_file(kernel_path("jacobi_2d"), "MINI")
    d = compute_dependences(p)
    clock = Clock()
    monkeypatch.setattr(beam, "time", clock)
    free = beam_search(p, d, Slow(0.01, clock), SearchPolicy(beam=2, grown=True))
    clock.now = 0.0
    ev = Slow(0.01, clock)
    tight = beam_search(p, d, ev, SearchPolicy(beam=2, grown=True, time_budget=0.2))
    scored = len(tight.evaluated)
    assert scored < len(free.evaluated)
    # the root, then chunks until the budget is spent: at most one chunk past it
    assert sum(ev.calls) <= 1 + 0.2 / 0.01 + beam.SCORE_CHUNK
    assert max(ev.calls[1:]) <= beam.SCORE_CHUNK  # every level scored in chunks
    unscored = [e for e in tight.explored if e.score is None and e.rejected is None]
    assert unscored  # the level running when the budget ran out left candidates unscored
    assert tight.best_score.ok and tight.best_score.speedup >= 1.0
