"""The machine's measured limits per thread count, and their cache.

`looper machine` measures, for 1..N threads, the FMA peak (double and single), the triad
bandwidth, numpy's DGEMM as a check on the peak, and what OpenMP's parallel regions cost a
program in fresh processes, and keeps each thread count's numbers (`target.limits`): the target
a search tunes for carries them.  `looper bench` reads them for its own thread count (measuring
them once when there are none) to report each kernel's fraction of peak and to draw the
roofline.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable

from ..target.caches import CacheLevel, cache_levels, last_level_bytes
from ..target.host import cpu_id
from ..target.isa import compiler_id
from ..target.limits import Limits, load_limits, save_limits
from ..target.target import Target
from .dgemm import numpy_dgemm
from .microbench import fma_peak, fork_cost, triad_bandwidth


@dataclass(frozen=True)
class Budget:
    """How long each measurement may take: `looper machine` uses the default, tests `QUICK`."""

    seconds: float = 0.5  # per FMA peak and per triad
    peak_runs: int = 3  # processes per FMA peak, the best kept (`microbench.fma_peak`)
    dgemm_n: int = 4000
    dgemm_repeats: int = 3
    triad_elements: int | None = None  # None: four times the last-level cache per array
    fork_processes: int = 20  # fresh processes that time OpenMP's first region, regions, barriers


QUICK = Budget(seconds=0.02, peak_runs=1, dgemm_n=400, dgemm_repeats=1, triad_elements=1 << 20, fork_processes=2)


def triad_elements(levels: list[CacheLevel]) -> int:
    """Doubles per triad array: four times the last-level cache (32 MiB here: 16 M doubles,
    128 MiB an array), at least 4 M, so that no cache holds a useful part of them."""
    llc = last_level_bytes(levels) or 32 << 20
    return max(4 << 20, 4 * llc // 8)


def measure_limits(threads: int, budget: Budget = Budget(), dgemm: bool = True) -> Limits:
    """Measure one thread count's limits (DGEMM too unless `dgemm` is false)."""
    d = fma_peak("double", threads, budget.seconds, budget.peak_runs)
    s = fma_peak("single", threads, budget.seconds, budget.peak_runs)
    n = budget.triad_elements or triad_elements(cache_levels())
    bw = triad_bandwidth(threads, n, budget.seconds)
    ref = numpy_dgemm(threads, budget.dgemm_n, budget.dgemm_repeats) if dgemm else None
    fork = fork_cost(threads, budget.fork_processes)
    return Limits(threads, d.gflops, s.gflops, bw.gbytes_per_s, d.lanes,
                  ref.gflops if ref else None, ref.core if ref else None, fork.first, fork.region)


@dataclass(frozen=True)
class MachineReport:
    """Everything `looper machine` prints: the machine, its caches, its limits per thread count."""

    cpu: str
    compiler: str
    caches: tuple[CacheLevel, ...]
    limits: tuple[Limits, ...]
    measured: float  # time.time() of the measurement

    def to_json(self) -> dict:
        """Everything, as plain JSON values (`looper machine --json`)."""
        return dataclasses.asdict(self)


def measure_machine(threads: int, budget: Budget = Budget(), dgemm: bool = True,
                    log: Callable[[str], None] = lambda s: None) -> MachineReport:
    """Measure 1..`threads` threads, one after the other."""
    limits = []
    for t in range(1, threads + 1):
        log(f"measuring {t} thread{'s' if t > 1 else ''}")
        limits.append(measure_limits(t, budget, dgemm))
    return MachineReport(cpu_id(), compiler_id("gcc"), tuple(cache_levels()), tuple(limits), time.time())


def limits_for_bench(threads: int, log: Callable[[str], None] = lambda s: None) -> Limits:
    """The limits `looper bench` divides by: cached, or measured now (without DGEMM) and cached."""
    cached = load_limits(threads, compiler_id("gcc"))
    if cached is not None:
        return cached
    log(f"measuring this machine's peak and bandwidth on {threads} threads (once; `looper machine` "
        "measures them with DGEMM as a check)")
    limits = measure_limits(threads, dgemm=False)
    save_limits(limits, compiler_id("gcc"))
    return limits


def measured_target(target: Target) -> Target:
    """`target` (this machine) with what its first parallel region costs, which the restraint and
    the cost terms need: from `looper machine`'s kept limits, else measured now (a fraction of a
    second; the peaks and bandwidth stay unmeasured, and the cost terms assume typical ones)."""
    limits = target.limits
    if limits is not None and limits.fork_seconds is not None:
        return target
    fork = fork_cost(target.threads)
    base = limits if limits is not None else Limits(target.threads, 0.0, 0.0, 0.0)
    return target.with_limits(dataclasses.replace(base, fork_seconds=fork.first, region_seconds=fork.region))
