"""Time limits of measured runs, relative to the fastest program seen so far.

A candidate whose first run is slower than `slow_factor` times the best time is cut off after it
("slow": one time, no repeats); a process is killed after `timeout_factor` times its expected
time plus the program's fixed cost outside the kernel (allocation, init: LARGE lu's O(N^3) init
takes longer than its kernel) plus `min_timeout`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TimeLimits:
    slow_factor: float = 2.0
    timeout_factor: float = 4.0
    min_timeout: float = 5.0
    # seconds a run of the binary spends outside the timed kernel, measured on the original's
    # reference run (None: not yet, when the baseline came from the memo)
    overhead: float | None = None
    best: float | None = None  # the fastest kernel time seen (the original's at first)

    def process(self, runs: int, per_run: float) -> float:
        """How long one process of `runs` runs of about `per_run` seconds each may take."""
        return self.min_timeout + 2 * (self.overhead or 0.0) + runs * self.timeout_factor * per_run

    def for_candidate(self, repeats: int, baseline: float | None) -> tuple[float, float]:
        """(cutoff of the first run, timeout of the process) for a candidate run `repeats` + 1 times."""
        best = self.best or baseline or 1.0
        return self.slow_factor * best, self.process(repeats + 1, best)

    def saw(self, seconds: float) -> None:
        """Record a measured kernel time (a faster one tightens the cutoffs)."""
        if self.best is None or seconds < self.best:
            self.best = seconds
