"""A measured schedule's neighbours (`search.neighbours`) and the budget's climb through them.

The neighbours are checked by isl and compared with the original's outputs; the budget's
measurements are fixed numbers (tests never depend on timing)."""
from __future__ import annotations

import dataclasses

import pytest

from helpers import TARGET, differential
from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule
from looper.runtime.status import Status
from looper.search.beam import beam_search
from looper.search.budget import Ranking, budgeted, climbed, ranked
from looper.search.neighbours import neighbours, sink_variants, tile_variants, unroll_variants
from looper.search.policy import policy_for
from looper.search.scoring import Explored, Score
from looper.transforms.schedule import Schedule
from looper.transforms.sink_tiling import SinkTile
from looper.transforms.tiling import Tile
from looper.transforms.unroll import Unroll

from conftest import kernel_path

TILE64 = [{"kind": "tile", "bands": [[["S0"], [3, 5], [64, 64]]]}]
UNROLL = {"kind": "unroll", "loops": [[["S0"], 9]], "factor": 4}


@pytest.fixture(scope="module")
def floyd():
    p = parse_file(kernel_path("floyd-warshall"), "MEDIUM")
    return p, compute_dependences(p)


def test_a_tile_varies_over_the_square_sizes_and_half_and_twice_its_own():
    t = Tile(((("S0",), (3, 5), (64, 256)),))
    sizes = [v.bands[0].sizes for v in tile_variants(t)]
    assert sizes == [(32, 32), (64, 64), (128, 128), (32, 128), (128, 512)]
    square = Tile(((("S0",), (3, 5), (64, 64)),))
    assert [v.bands[0].sizes for v in tile_variants(square)] == [(32, 32), (128, 128)]  # never itself
    small = Tile(((("S0",), (3, 5), (8, 8)),))
    assert (8, 8) not in [v.bands[0].sizes for v in tile_variants(small)]  # no tile under 8


def test_a_sink_tile_varies_over_the_other_sizes_of_its_generator():
    t = SinkTile((("S0", "S1"), 3), 64)
    assert [v.size for v in sink_variants(t)] == [32, 128]
    assert all(v.loop == t.loop for v in sink_variants(t))


def test_an_unroll_varies_over_the_other_factors_and_is_dropped():
    u = Unroll(((("S0",), 9),), 4)
    assert [v.factor if v else None for v in unroll_variants(u)] == [8, 16, None]


def test_a_tiles_neighbours_add_an_unroll_and_change_its_sizes(floyd):
    """floyd-warshall's leader, `tile(i,j,64,64)`: its unrolls first, then its other tile sizes,
    every one legal, none the leader."""
    p, d = floyd
    lead = Schedule.from_json(p, TILE64)
    near = neighbours(lead, d, TARGET)
    text = [s.describe() for s in near]
    assert text[:3] == [f"tile(i,j,64,64) ; unroll(j,{f})" for f in (4, 8, 16)]
    assert text[3:] == ["tile(i,j,32,32)", "tile(i,j,128,128)"]
    assert all(check_schedule(d, s) is None for s in near)
    unrolled = Schedule.from_json(p, TILE64 + [UNROLL])
    text = [s.describe() for s in neighbours(unrolled, d, TARGET)]
    assert text[:3] == ["tile(i,j,64,64) ; unroll(j,8)", "tile(i,j,64,64) ; unroll(j,16)", "tile(i,j,64,64)"]
    assert "tile(i,j,32,32) ; unroll(j,4)" in text and lead.describe() in text


def test_an_unroll_is_added_before_a_parallel_region_and_the_neighbours_compute_the_same(tmp_path):
    """2mm's two nests tiled on threads, in one region: an unroll goes before the region (where
    the beam puts it), and every neighbour computes what the original does."""
    p = parse_file(kernel_path("2mm"), "MEDIUM")
    d = compute_dependences(p)
    result = beam_search(p, d, Ranking(p, TARGET), policy_for("hybrid", target=TARGET))
    lead = next(c.schedule for c in ranked(result, regions=True)
                if c.family == "tile" and c.schedule.steps[-1].kind == "region"
                and not any(t.kind == "unroll" for t in c.schedule.steps))
    near = neighbours(lead, d, TARGET)
    assert near and all(s.steps[-1].kind == "region" for s in near)
    assert any(t.kind == "unroll" for s in near for t in s.steps)
    assert differential(p, near, tmp_path) == []


class ByTiles:
    """An ExecutionEvaluator stand-in for floyd-warshall: the tile at 64 runs 4x, unrolled 4.5x,
    the tile at 32 unrolled 5.5x, anything else 1.5x; the confirmation's fresh 'runs' follow them
    (the original at 1.0 s)."""

    def __init__(self):
        self.evaluated: list[str] = []

    @staticmethod
    def speedup(s: Schedule) -> float:
        text = s.describe()
        unrolled = "unroll" in text
        if text.startswith("tile(i,j,64,64)"):
            return 4.5 if unrolled else 4.0
        return 5.5 if text.startswith("tile(i,j,32,32)") and unrolled else 1.5

    def evaluate(self, program, schedules):
        self.evaluated += [s.describe() for s in schedules]
        return [Score(self.speedup(s), Status.OK, "", [1.0 / self.speedup(s)]) for s in schedules]

    judged_in = "in looper's harness"
    failed = ()

    def times_in_program(self, program):
        return False

    def time_together(self, program, schedules, rounds=None):
        return [1.0] * 8, [(self.speedup(s), [1.0 / self.speedup(s)] * 8) for s in schedules]


def test_the_budget_climbs_from_the_leader_to_a_neighbour_the_ranking_never_held(floyd):
    """The ranking holds floyd-warshall's tile at 64 and none of its unrolls or other sizes; the
    fastest program is two changes away (the tile at 32 and an unroll).  With neighbours, a round
    after the planned ones measures the leader's, an unroll of it wins by over 5%, and one more
    climbs from it to the tile at 32 unrolled; without them the tile at 64 is the answer."""
    p, d = floyd
    lead = Schedule.from_json(p, TILE64)
    result = beam_search(p, d, Ranking(p, TARGET), policy_for("hybrid", target=TARGET))

    def explored(s, predicted):
        return Explored(s, s.describe(), "x", Score(predicted, Status.PREDICTED, "", predicted=predicted))
    others = [e for e in result.explored if e.schedule.steps and e.score and e.score.ok
              and not e.schedule.describe().startswith("tile(i,j,")][:12]
    small = dataclasses.replace(result, explored=[explored(Schedule(p), 1.0), explored(lead, 9.0), *others])
    ranking = Ranking(p, TARGET)

    def vary(s):
        found = neighbours(s, d, TARGET)
        return [(n, sc.speedup) for n, sc in zip(found, ranking.evaluate(p, found))]
    ev = ByTiles()
    best, _, report = budgeted(p, small, ev, rounds=3, per_round=4, confirm=2, follow=2, vary=vary)
    assert report.rounds[:3] == [4, 4, 4] and len(report.rounds) == 5 and report.followed == 2
    assert best.best.describe().startswith("tile(i,j,32,32) ; unroll(j,")
    assert best.best_score.speedup == pytest.approx(5.5)
    assert report.varied > 0 and lead.describe() in ev.evaluated[:4]
    assert any(e.startswith("tile(i,j,64,64) ; unroll(j,") for e in ev.evaluated[12:16])
    ev = ByTiles()
    best, _, report = budgeted(p, small, ev, rounds=3, per_round=4, confirm=2, follow=2)
    assert report.rounds == [4, 4, 4] and report.varied == 0
    assert best.best.describe() == "tile(i,j,64,64)"


def test_a_climb_needs_a_clear_gain(floyd):
    """A neighbour within a few percent of the leader is noise: no round climbs from it."""
    p, _ = floyd
    lead = Schedule.from_json(p, TILE64)
    near = Schedule.from_json(p, TILE64 + [UNROLL])
    cands = ranked(dataclasses.replace(
        beam_search(p, compute_dependences(p), Ranking(p, TARGET), policy_for("hybrid", target=TARGET, max_affine=0,
                                                                              max_fusion=0)),
        explored=[Explored(s, s.describe(), "x", Score(1.0, Status.PREDICTED, "", predicted=1.0)) for s in (lead, near)]),
        regions=True)
    a, b = cands
    a.measured = Score(4.40, Status.OK)
    b.measured = Score(4.41, Status.OK)
    assert not climbed(cands, [b])
    b.measured = Score(4.80, Status.OK)
    assert climbed(cands, [b]) and not climbed(cands, [a])


def test_the_default_search_hands_the_budget_scored_legal_neighbours(monkeypatch):
    """`looper.optimize` with the hybrid gives the budget a `vary` that returns the neighbours of
    a schedule (legal, scored by the ranking), so neighbour rounds run in the product."""
    import looper
    import looper.tune.pipeline as pipeline
    from looper.tune import HybridOptions
    seen = {}
    real = pipeline.budgeted

    def spy(program, result, evaluator, *args, **kwargs):
        seen["program"], seen["vary"] = program, kwargs.get("vary")
        return real(program, result, evaluator, *args, **kwargs)
    monkeypatch.setattr(pipeline, "budgeted", spy)
    looper.optimize(kernel_path("floyd-warshall"), size="MINI", evaluator="hybrid",
                    hybrid=HybridOptions(2, 2, follow=0), memo=False, verify=False)
    vary, p = seen["vary"], seen["program"]
    assert callable(vary)
    found = vary(Schedule.from_json(p, TILE64))
    d = compute_dependences(p)
    assert [s.describe() for s, _ in found][:3] == [f"tile(i,j,64,64) ; unroll(j,{f})" for f in (4, 8, 16)]
    assert all(score > 0 and check_schedule(d, s) is None for s, score in found)
