"""A measuring search's answer re-timed with its runners-up (search.confirm)."""
from __future__ import annotations

from helpers import TARGET
from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.search.scoring import Explored, Score, SearchResult
from looper.search.candidates import generate
from looper.search.confirm import confirm, finalists
from looper.search.policy import policy_for
from looper.transforms.schedule import Schedule

from conftest import kernel_path


class Retimed:
    """Stands in for the measuring evaluator's interleaved timing: fixed speedups per schedule."""

    def __init__(self, speedups: dict[str, float]):
        self.speedups = speedups
        self.timed: list[str] = []

    judged_in = "in looper's harness"

    def times_in_program(self, program):
        return False

    def time_together(self, program, schedules, rounds=None):
        rounds = rounds or 8
        self.timed = [s.describe() for s in schedules]
        return [1.0] * rounds, [(self.speedups[s.describe()], [1.0 / self.speedups[s.describe()]] * rounds)
                                for s in schedules]


def _result(scores: dict[str, float]):
    p = parse_file(kernel_path("gemm"), "MINI")
    d = compute_dependences(p)
    s = Schedule(p)
    cands = {s.then(*c).describe(): s.then(*c) for c in generate("parallel", s, d, target=TARGET) + generate("tile", s, d, target=TARGET)}
    explored = [Explored(s, "original", "root", Score(1.0))]
    chosen = {}
    for (name, sched), speedup in zip(cands.items(), scores.values()):
        chosen[name] = sched
        explored.append(Explored(sched, name, "tile", Score(speedup)))
    best = max(explored[1:], key=lambda e: e.score.speedup)
    return p, SearchResult(best.schedule, best.score, explored, 1.0, 0.1, ["tile"]), list(chosen)


def test_the_lucky_answer_loses_to_a_runner_up_that_is_faster_when_timed_together():
    p, result, names = _result({"a": 3.0, "b": 2.9, "c": 2.5, "d": 1.2, "e": 1.1})
    ev = Retimed({names[0]: 1.5, names[1]: 2.8, names[2]: 2.4, names[3]: 1.1})
    out = confirm(p, result, ev, k=4)
    assert ev.timed == names[:4]  # the four best by their search scores
    assert out.best.describe() == names[1] and out.best_score.speedup == 2.8
    assert "confirmed" in out.best_score.detail
    assert out.explored is result.explored


def test_the_original_wins_when_every_finalist_is_slower_together():
    p, result, names = _result({"a": 1.3, "b": 1.2})
    out = confirm(p, result, Retimed({names[0]: 0.9, names[1]: 0.95}), k=4)
    assert not out.best.steps


def test_finalists_are_distinct_programs_and_only_measuring_searches_confirm():
    p, result, names = _result({"a": 3.0, "b": 2.0})
    assert [s.describe() for s in finalists(result, 4)] == names[:2]
    assert policy_for("measure").confirm_top > 1 and policy_for("model").confirm_top == 0
