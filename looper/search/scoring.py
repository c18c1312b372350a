"""What a search scores and keeps: a schedule's score, the evaluator protocol, what was explored.

These are the types every part of the search and its users share (the beam, the evaluators, the
hybrid's budget, confirmation, verification and fallback, reports); the algorithm lives in
`search.beam`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from ..ir.program import Program
from ..runtime.status import Status
from ..transforms.schedule import Schedule


@dataclass
class Score:
    """An evaluator's verdict on one schedule: a speedup over the original, or why there is none."""

    speedup: float | None
    status: Status = Status.OK
    detail: str = ""
    times: list[float] = field(default_factory=list)
    predicted: float | None = None

    def __post_init__(self):
        self.status = Status(self.status)

    @property
    def ok(self) -> bool:
        return self.speedup is not None


class Evaluator(Protocol):
    """Scores schedules of one program: speedups over its original (which scores 1)."""

    name: str

    def evaluate(self, program: Program, schedules: Sequence[Schedule]) -> list[Score]:
        ...


@dataclass
class Explored:
    """One candidate the search visited: its score, or why isl rejected it."""

    schedule: Schedule
    described: str | None  # None: the schedule's own `describe()`, printed when first asked for
    level: str
    score: Score | None = None
    rejected: str | None = None  # why isl said no

    @property
    def description(self) -> str:
        """The candidate's steps as text.  Printed on demand: a search visits a thousand
        candidates and reports a few (printing every one was a tenth of symm's model search)."""
        if self.described is None:
            self.described = self.schedule.describe()
        return self.described


@dataclass
class SearchResult:
    """The answer, its score, and everything the search visited on the way."""

    best: Schedule
    best_score: Score
    explored: list[Explored]
    seconds: float
    machinery_seconds: float  # legality + lowering + candidate generation (no evaluator)
    levels: list[str]

    @property
    def evaluated(self) -> list[Explored]:
        return [e for e in self.explored if e.score is not None]

    @property
    def rejected(self) -> list[Explored]:
        return [e for e in self.explored if e.rejected is not None]

    @property
    def failed(self) -> list[Explored]:
        return [e for e in self.explored if e.score is not None and not e.score.ok]
