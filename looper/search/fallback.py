"""The answers a search would have given next: what is written when its answer may not be.

An answer that computes wrong outputs when the user's compiler builds it, or runs slower than
the original, is never written (`search.verify`); the next-best candidate is tried instead, and
the original last.  "Next-best" is each evaluator's own ranking, finished as its answer was:

- measure: the measured candidates, fastest first (only those measured correct and faster than
  the original by the policy's margin);
- hybrid: the model's candidates that were measured (`search.hybrid.Verified`), fastest first;
- model: the candidates by predicted speedup, each simplified and given its parallel region as
  the answer was (`beam.answer`), above the policy's margin over the original.

Each is yielded once per distinct lowered schedule, never the answer itself.
"""
from __future__ import annotations

from typing import Iterator, Sequence

from ..poly.deps import Dependences
from ..runtime.status import Status
from ..transforms.schedule import Schedule
from .scoring import Score, SearchResult
from .hybrid import Verified, with_region
from .policy import SearchPolicy
from .simplify import drop_idle_enablers


def alternatives(result: SearchResult, kind: str, policy: SearchPolicy, deps: Dependences,
                 verified: Sequence[Verified] = ()) -> Iterator[tuple[Schedule, Score]]:
    """The candidates after `result.best`, best first (see the module docstring)."""
    seen = {result.best.identity}
    margin = 1 + policy.min_answer_gain
    for schedule, score in _ranked(result, kind, verified):
        if kind == "model":
            schedule = _finished(schedule, policy, deps)
        if not schedule.steps or schedule.identity in seen or not score.speedup > margin:
            continue
        seen.add(schedule.identity)
        yield schedule, score


def _ranked(result: SearchResult, kind: str, verified: Sequence[Verified]) -> list[tuple[Schedule, Score]]:
    """The evaluator's candidates with their scores, best first."""
    if kind == "hybrid":
        pairs = [(v.schedule, v.measured) for v in verified
                 if v.measured.ok and v.measured.status == Status.OK]
    else:
        wanted = Status.PREDICTED if kind == "model" else Status.OK
        pairs = [(e.schedule, e.score) for e in result.evaluated
                 if e.schedule.steps and e.score.ok and e.score.status == wanted]
    return sorted(pairs, key=lambda p: -p[1].speedup)


def _finished(schedule: Schedule, policy: SearchPolicy, deps: Dependences) -> Schedule:
    """A model-ranked candidate as the search would have answered it."""
    if policy.drop_idle_enablers:
        schedule = drop_idle_enablers(deps, schedule)
    return with_region(schedule) if policy.regions else schedule
