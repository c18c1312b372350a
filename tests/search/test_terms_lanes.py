"""The analytic terms' second opinion: lanes of the ranking search guided by the terms alone, and
a place in round one for the structure they favour (`budget.TERMS_LANES`, `terms_favourite`).

A model that is sure and wrong (looper-v10 put adi MEDIUM's column sweeps turned into row sweeps
at 0.16x) is played here by a ranking that inverts the terms: nothing depends on a model's
opinions or on timing."""
from __future__ import annotations

import pytest

from helpers import TARGET
from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.runtime.status import Status
from looper.search.beam import beam_search
from looper.search.budget import TERMS_LANES, Ranking, first_round, ranked, terms_favourite
from looper.search.policy import policy_for, refining
from looper.search.scoring import Score
from looper.transforms.schedule import Schedule

from conftest import kernel_path


class Contrary(Ranking):
    """A ranking sure of the opposite of the terms: each schedule at the inverse of their speedup."""

    def evaluate(self, program, schedules):
        return [Score(1.0 / self.analytic(s) if s.steps else 1.0, Status.PREDICTED, "") for s in schedules]


@pytest.fixture(scope="module")
def searched():
    """gemver MEDIUM ranked by `Contrary`, without lanes and with the terms' lanes."""
    p = parse_file(kernel_path("gemver"), "MEDIUM")
    d = compute_dependences(p)
    rank = Contrary(p, TARGET)
    policy = policy_for("hybrid", target=TARGET)
    alone = beam_search(p, d, rank, policy)
    lanes = beam_search(p, d, rank, policy.with_(explore=TERMS_LANES, explore_guide=rank.by_terms()))
    return p, rank, alone, lanes


def test_the_terms_alone_rank_by_their_own_estimate(searched):
    p, rank, _, lanes = searched
    terms = rank.by_terms()
    some = [e.schedule for e in lanes.evaluated if e.schedule.steps][:20]
    assert terms.model is None and terms.estimates is rank.estimates  # the same estimates, not again
    assert [sc.speedup for sc in terms.evaluate(p, some)] == pytest.approx([rank.analytic(s) for s in some])
    assert rank.analytic(Schedule(p)) == pytest.approx(1.0)


def test_the_lanes_bring_in_what_the_terms_favour_and_round_one_measures_it(searched):
    """Without lanes the contrary ranking keeps what the terms rank low; its lanes bring in
    schedules the terms rank far higher.  Round one gives the terms' favourite among the other
    structures a place, which it would not have by the ranking's own order."""
    p, rank, alone, lanes = searched
    best = {name: max(rank.analytic(e.schedule) for e in r.evaluated if e.schedule.steps)
            for name, r in (("alone", alone), ("lanes", lanes))}
    assert best["lanes"] > 1.5 * best["alone"]
    cands = ranked(lanes, True)
    for c in cands:
        c.analytic = rank.analytic(c.schedule)
    chosen = first_round(cands, 8)
    pick = terms_favourite(cands, chosen[:4])
    assert pick is not None and pick in chosen
    others = [c for c in cands if c.structure not in {o.structure for o in chosen[:4]}]
    assert pick.analytic == max(c.analytic for c in others)
    assert cands.index(pick) > 8  # the ranking alone put it out of the round
    assert terms_favourite(cands, cands) is None  # every structure chosen: no second opinion
    unasked = [type(c)(c.schedule, c.predicted, c.structure, c.family, c.corrected) for c in cands]
    assert terms_favourite(unasked, []) is None  # no terms given: none either


def test_a_refining_search_has_no_lanes():
    policy = policy_for("hybrid", target=TARGET).with_(explore=TERMS_LANES, explore_guide=object())
    refine = refining(policy, 10.0)
    assert refine.explore == 0 and refine.explore_guide is None


def test_the_default_search_runs_the_terms_lanes_and_hands_the_budget_the_terms(monkeypatch):
    """`looper.optimize` with the hybrid: its ranking search has the terms' lanes, and the budget
    gets the ranking's analytic speedups."""
    import looper
    import looper.tune.pipeline as pipeline
    from looper.tune import HybridOptions
    seen: dict = {"policies": []}
    real_budgeted, real_beam = pipeline.budgeted, pipeline.beam_search

    def spy_budgeted(program, result, evaluator, *args, **kwargs):
        seen["analytic"], seen["evaluator"] = kwargs.get("analytic"), evaluator
        return real_budgeted(program, result, evaluator, *args, **kwargs)

    def spy_beam(program, deps, evaluator, policy=None, *args, **kwargs):
        seen["policies"].append((policy, kwargs.get("start")))
        return real_beam(program, deps, evaluator, policy, *args, **kwargs)
    monkeypatch.setattr(pipeline, "budgeted", spy_budgeted)
    monkeypatch.setattr(pipeline, "beam_search", spy_beam)
    k = looper.optimize(kernel_path("gemver"), size="MINI", evaluator="hybrid",
                        hybrid=HybridOptions(2, 2, follow=0), memo=False, verify=False)
    first, start = seen["policies"][0]
    assert start is None and first.explore == TERMS_LANES
    assert isinstance(first.explore_guide, Ranking) and first.explore_guide.model is None
    assert all(p.explore == 0 for p, s in seen["policies"][1:])  # the refining searches have none
    analytic = seen["analytic"]
    assert callable(analytic) and analytic(Schedule(k.program)) == pytest.approx(1.0)
