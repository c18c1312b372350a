"""The machine's measured limits per thread count, and their cache.

`looper machine` measures, for 1..N threads, the FMA peak (double and single), the triad
bandwidth and numpy's DGEMM as a check on the peak, and caches each thread count's numbers.
`looper bench` reads the cached numbers for its own thread count (measuring the peak and the
bandwidth once when there are none) to report each kernel's fraction of peak and to draw the
roofline without measuring again.  The cache is keyed by CPU model, compiler and thread count: a
new compiler or another machine type measures afresh.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .caches import CacheLevel, cache_levels, last_level_bytes
from .compile import cache_dir, compiler_id
from .dgemm import numpy_dgemm
from .machine import cpu_model
from .microbench import fma_peak, triad_bandwidth


@dataclass(frozen=True)
class Limits:
    """What `threads` cores can do at most: GFLOP/s of FMAs, GB/s of triad, and numpy's DGEMM."""

    threads: int
    peak_double: float
    peak_single: float
    bandwidth: float
    lanes_double: int = 0  # doubles per vector register of the microkernel (8: AVX-512)
    dgemm: float | None = None
    dgemm_core: str | None = None

    def peak(self, precision: str | None) -> float:
        """The peak that bounds a kernel of this precision (double for None)."""
        return self.peak_single if precision == "single" else self.peak_double

    @property
    def peak_over_dgemm(self) -> float | None:
        """The microkernel's double peak over numpy's DGEMM: a little above 1 when the peak is real."""
        return self.peak_double / self.dgemm if self.dgemm else None


@dataclass(frozen=True)
class Budget:
    """How long each measurement may take: `looper machine` uses the default, tests `QUICK`."""

    seconds: float = 0.5  # per FMA peak and per triad
    dgemm_n: int = 4000
    dgemm_repeats: int = 3
    triad_elements: int | None = None  # None: four times the last-level cache per array


QUICK = Budget(seconds=0.02, dgemm_n=400, dgemm_repeats=1, triad_elements=1 << 20)


def triad_elements(levels: list[CacheLevel]) -> int:
    """Doubles per triad array: four times the last-level cache (32 MiB here: 16 M doubles,
    128 MiB an array), at least 4 M, so that no cache holds a useful part of them."""
    llc = last_level_bytes(levels) or 32 << 20
    return max(4 << 20, 4 * llc // 8)


def measure_limits(threads: int, budget: Budget = Budget(), dgemm: bool = True) -> Limits:
    """Measure one thread count's limits (DGEMM too unless `dgemm` is false)."""
    d = fma_peak("double", threads, budget.seconds)
    s = fma_peak("single", threads, budget.seconds)
    n = budget.triad_elements or triad_elements(cache_levels())
    bw = triad_bandwidth(threads, n, budget.seconds)
    ref = numpy_dgemm(threads, budget.dgemm_n, budget.dgemm_repeats) if dgemm else None
    return Limits(threads, d.gflops, s.gflops, bw.gbytes_per_s, d.lanes,
                  ref.gflops if ref else None, ref.core if ref else None)


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
    return MachineReport(cpu_model(), compiler_id("gcc"), tuple(cache_levels()), tuple(limits), time.time())


# -- the cache ------------------------------------------------------------------------------------------------

def cache_path(threads: int) -> Path:
    """Where one thread count's limits are kept, for this CPU model and compiler."""
    key = hashlib.sha256(f"{cpu_model()}\0{compiler_id('gcc')}".encode()).hexdigest()[:16]
    return cache_dir() / "machine" / f"{key}-t{threads}.json"


def save_limits(limits: Limits) -> Path:
    """Cache one thread count's limits (atomically: a reader never sees half a file)."""
    path = cache_path(limits.threads)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"cpu": cpu_model(), "compiler": compiler_id("gcc"), "measured": time.time(),
              "limits": dataclasses.asdict(limits)}
    partial = path.with_suffix(f".{time.time_ns()}.tmp")
    partial.write_text(json.dumps(record, indent=1))
    partial.replace(path)
    return path


def load_limits(threads: int) -> Limits | None:
    """The cached limits for `threads` threads on this CPU with this compiler, if any."""
    path = cache_path(threads)
    try:
        record = json.loads(path.read_text())
        if record["cpu"] != cpu_model() or record["compiler"] != compiler_id("gcc"):
            return None
        return Limits(**record["limits"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def limits_for_bench(threads: int, log: Callable[[str], None] = lambda s: None) -> Limits:
    """The limits `looper bench` divides by: cached, or measured now (without DGEMM) and cached."""
    cached = load_limits(threads)
    if cached is not None:
        return cached
    log(f"measuring this machine's peak and bandwidth on {threads} threads (once; `looper machine` "
        "measures them with DGEMM as a check)")
    limits = measure_limits(threads, dgemm=False)
    save_limits(limits)
    return limits
