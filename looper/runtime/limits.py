"""Time limits of measured runs, relative to the fastest program seen so far.

A candidate whose first run is slower than `slow_factor` times the best time is cut off after it
("slow": one time, no repeats); a process is killed after `timeout_factor` times its expected
time plus the program's fixed cost outside the kernel (allocation, init: LARGE lu's O(N^3) init
takes longer than its kernel) plus `min_timeout`.

One run says little when it is short: the cutoff is never below a floor (`slow_floor`) of
RESOLUTION_MULTIPLE ticks of the harness' clock and JITTER_MULTIPLE times the spread of the
original's own runs in one process (its cold first run among them).  A MINI kernel of 2 us had a
cutoff of 3.85 us, and one run of a candidate that took 0.3 s on a busy machine was called slow.
Before the original has run twice in one process there is no measured jitter, and no cutoff.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Sequence

RESOLUTION_MULTIPLE = 1000  # below a thousand ticks, a time is mostly the clock's granularity
JITTER_MULTIPLE = 3.0  # within three spreads of the original's runs, a first run is noise


def timer_resolution() -> float:
    """The resolution of the harness' clock (CLOCK_MONOTONIC, printed to the nanosecond)."""
    return max(time.clock_getres(time.CLOCK_MONOTONIC), 1e-9)


def slow_floor(resolution: float, times: Sequence[float]) -> float:
    """The shortest first run that may be judged slow, from the clock's `resolution` and the
    original's run `times` (one process, the cold first run included); inf when fewer than two
    runs measured no jitter."""
    if len(times) < 2:
        return math.inf
    return max(RESOLUTION_MULTIPLE * resolution, JITTER_MULTIPLE * (max(times) - min(times)))


@dataclass
class TimeLimits:
    slow_factor: float = 2.0
    timeout_factor: float = 4.0
    min_timeout: float = 5.0
    # seconds a run of the binary spends outside the timed kernel, measured on the original's
    # reference run (None: not yet, when the baseline came from the memo)
    overhead: float | None = None
    best: float | None = None  # the fastest kernel time seen (the original's at first)
    floor: float = math.inf  # no cutoff below it (`slow_floor`; inf: not measured yet)

    def process(self, runs: int, per_run: float) -> float:
        """How long one process of `runs` runs of about `per_run` seconds each may take."""
        return self.min_timeout + 2 * (self.overhead or 0.0) + runs * self.timeout_factor * per_run

    def for_candidate(self, repeats: int, baseline: float | None) -> tuple[float, float]:
        """(cutoff of the first run, 0.0 for none; timeout of the process) for a candidate run
        `repeats` + 1 times."""
        best = self.best or baseline or 1.0
        cutoff = max(self.slow_factor * best, self.floor)
        return (0.0 if math.isinf(cutoff) else cutoff), self.process(repeats + 1, best)

    def calibrate(self, times: Sequence[float]) -> None:
        """Set the floor from the original's run times in one process (`slow_floor`)."""
        self.floor = slow_floor(timer_resolution(), times)

    def saw(self, seconds: float) -> None:
        """Record a measured kernel time (a faster one tightens the cutoffs)."""
        if self.best is None or seconds < self.best:
            self.best = seconds
