"""A machine's measured limits on some number of threads, and where they are kept.

`looper machine` measures them (`runtime.peaks`: microbenchmarks built with the compiler); the
target a search tunes for carries them (`Target.limits`), and the analytic cost terms, the
roofline and the restraint from parallelizing short kernels read them from there.  They are kept
on disk per CPU (with its family, model and stepping), compiler and thread count: another machine
of the same name, or a new compiler, measures afresh.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from ..fileio import cache_dir, write_text
from .host import cpu_id


@dataclass(frozen=True)
class Limits:
    """What `threads` threads can do at most, and what parallelism costs them.

    `fork_seconds` is what a program pays for its first parallel region (the threads created and
    joined, in a fresh process, as a user's one-call program pays it); `region_seconds` what
    every later region costs.  A kernel shorter than a few of those gains nothing from threads
    (`search.restraint`)."""

    threads: int
    peak_double: float  # GFLOP/s of FMAs (2 flops each)
    peak_single: float
    bandwidth: float  # GB/s of a triad too large for any cache
    lanes_double: int = 0  # doubles per vector register of the FMA microkernel (8: AVX-512)
    dgemm: float | None = None  # numpy's DGEMM, GFLOP/s: a check on the peak
    dgemm_core: str | None = None  # OpenBLAS's kernel that gave it
    fork_seconds: float | None = None
    region_seconds: float | None = None

    def peak(self, precision: str | None) -> float:
        """The peak that bounds a kernel of this precision (double for None)."""
        return self.peak_single if precision == "single" else self.peak_double

    @property
    def peak_over_dgemm(self) -> float | None:
        """The microkernel's double peak over numpy's DGEMM: a little above 1 when the peak is real."""
        return self.peak_double / self.dgemm if self.dgemm else None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @staticmethod
    def from_json(d: dict) -> "Limits":
        known = {f.name for f in dataclasses.fields(Limits)}
        return Limits(**{k: v for k, v in d.items() if k in known})


def cache_path(threads: int, compiler: str) -> Path:
    """Where one thread count's limits are kept, for this CPU and `compiler`."""
    key = hashlib.sha256(f"{cpu_id()}\0{compiler}".encode()).hexdigest()[:16]
    return cache_dir() / "machine" / f"{key}-t{threads}.json"


def save_limits(limits: Limits, compiler: str) -> Path:
    """Keep one thread count's limits (atomically: a reader never sees half a file)."""
    record = {"cpu": cpu_id(), "compiler": compiler, "measured": time.time(), "limits": limits.to_json()}
    path = cache_path(limits.threads, compiler)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, json.dumps(record, indent=1))


def load_limits(threads: int, compiler: str) -> Limits | None:
    """The kept limits for `threads` threads on this CPU with `compiler`, if any."""
    try:
        record = json.loads(cache_path(threads, compiler).read_text())
        if record["cpu"] != cpu_id() or record["compiler"] != compiler:
            return None
        return Limits.from_json(record["limits"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
