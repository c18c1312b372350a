"""What became of one scored program: the statuses of measurements and predictions."""
from __future__ import annotations

import enum


class Status(str, enum.Enum):
    """A measurement's (or prediction's) outcome; the value is what memos and reports store."""

    OK = "ok"  # measured, outputs equal to the original's
    SLOW = "slow"  # first run slower than the cutoff: one time, no repeats
    TIMEOUT = "timeout"
    CRASH = "crash"
    WRONG = "wrong"  # outputs differ from the original's
    COMPILE_ERROR = "compile-error"
    PREDICTED = "predicted"  # a cost model's score, nothing measured
    UNMEASURED = "unmeasured"  # a memo-only replay found no measurement

    __str__ = str.__str__
    __format__ = str.__format__

    @property
    def timed(self) -> bool:
        """Whether the program ran to completion with the original's outputs (a time exists)."""
        return self in (Status.OK, Status.SLOW)
