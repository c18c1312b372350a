"""Model-guided answers: only the reversals a later step needs, and only a clear predicted gain."""
from __future__ import annotations

from typing import Sequence

from looper.ir.program import Program
from looper.lang.parse import parse_source
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule
from looper.search.beam import beam_search
from looper.search.scoring import Score
from looper.search.policy import SearchPolicy, policy_for
from looper.search.simplify import drop_idle_enablers
from looper.transforms import Interchange, Parallelize, Reverse, Skew, Tile, Unroll
from looper.transforms.schedule import Schedule

from helpers import differential

# S0 has the dependence distance (1, -1): interchanging i and j is illegal as written, legal once
# j is reversed (the distance becomes (1, 1)).  S1 has no dependence at all.
ANTIDIAGONAL = '''
SIZES = {"MINI": dict(N=24)}
def init(N: int, A: f64[N, N], B: f64[N, N]):
    for i in range(N):
        for j in range(N):
            A[i, j] = f64((3 * i + j) % 11) / 11
def kernel(N: int, A: f64[N, N], B: f64[N, N]):
    for i in range(1, N):
        for j in range(N - 1):
            A[i, j] = A[i - 1, j + 1] * 0.5 + 1.0
    for i in range(N):
        for j in range(N):
            B[i, j] = A[i, j] * 2.0
OUTPUTS = ["A", "B"]
'''


def _program():
    p = parse_source(ANTIDIAGONAL, "antidiagonal.py", "MINI")
    return p, compute_dependences(p)


def test_an_enabling_reversal_stays():
    p, d = _program()
    s = Schedule(p, (Reverse(("S0",), 3), Interchange(("S0",), 1, 3)))
    assert check_schedule(d, s) is None
    assert check_schedule(d, Schedule(p, s.steps[1:])) is not None  # the interchange needs it
    assert drop_idle_enablers(d, s).steps == s.steps


def test_idle_reversals_go_and_the_rest_stays():
    p, d = _program()
    s = Schedule(p, (Reverse(("S1",), 1), Reverse(("S0",), 3), Interchange(("S0",), 1, 3),
                     Reverse(("S0",), 3), Parallelize(((("S1",), 1),)), Unroll(((("S1",), 3),), 4)))
    assert check_schedule(d, s) is None
    simple = drop_idle_enablers(d, s)
    # the first reversal of S0's j enables the interchange; the second one (of the new inner
    # loop, i) and S1's reversal of its parallel loop enable nothing
    assert [t.kind for t in simple.steps] == ["reverse", "interchange", "parallelize", "unroll"]
    assert simple.steps[0] == Reverse(("S0",), 3)
    assert check_schedule(d, simple) is None


def test_a_skew_stays_when_a_tiling_needs_it_and_goes_when_nothing_does(tmp_path):
    p, d = _program()
    skew = Skew(("S0",), (1, 3), ((1, 0), (1, 1)))  # j' = i + j: distance (1, -1) -> (1, 0)
    tile = Tile(((("S0",), (1, 3), (8, 8)),))
    s = Schedule(p, (Skew(("S1",), (1, 3), ((1, 0), (2, 1))), skew, tile))
    assert check_schedule(d, s) is None
    assert check_schedule(d, Schedule(p, (tile,))) is not None  # not permutable as written
    simple = drop_idle_enablers(d, s)
    assert simple.steps == (skew, tile)
    assert differential(p, [s, simple], tmp_path) == []


class LikesReversals:
    """A 'model' that credits every reversal with a 10% gain, as the cost model sometimes does."""

    name = "model"

    def evaluate(self, program: Program, schedules: Sequence[Schedule]) -> list[Score]:
        return [Score(1.1 ** sum(isinstance(t, Reverse) for t in s.steps)
                      * (1.5 if any(isinstance(t, Interchange) for t in s.steps) else 1.0))
                for s in schedules]


def test_model_guided_answer_drops_idle_reversals(tmp_path):
    p, d = _program()
    cfg = dict(beam=3, max_affine=3, max_fusion=0)
    kept = beam_search(p, d, LikesReversals(), SearchPolicy(**cfg, drop_idle_enablers=False)).best
    assert sum(isinstance(t, Reverse) for t in kept.steps) >= 2
    best = beam_search(p, d, LikesReversals(), policy_for("model", **cfg)).best
    assert check_schedule(d, best) is None
    assert best.steps and len(best.steps) < len(kept.steps)
    for k, t in enumerate(best.steps):  # every reversal left is needed by what follows it
        if isinstance(t, Reverse):
            assert check_schedule(d, Schedule(p, best.steps[:k] + best.steps[k + 1:])) is not None
    assert differential(p, [kept, best], tmp_path) == []


class SlightlyBetter:
    """A 'model' that predicts every transformed schedule 1-4% faster than the original."""

    name = "model"

    def evaluate(self, program: Program, schedules: Sequence[Schedule]) -> list[Score]:
        return [Score(1.0 + 0.01 * min(len(s.steps), 4)) for s in schedules]


def test_model_answer_must_beat_the_original_by_its_margin():
    p, d = _program()
    cfg = policy_for("model", beam=2, max_affine=2, max_fusion=0)
    assert cfg.min_answer_gain == 0.05
    assert not beam_search(p, d, SlightlyBetter(), cfg).best.steps
    assert len(beam_search(p, d, SlightlyBetter(), cfg.with_(min_answer_gain=0.02)).best.steps) >= 3
