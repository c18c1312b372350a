"""What `looper bench` records per kernel and system, and how it is saved (JSON, CSV).

A `KernelResult` is one (kernel, size, input mode): every system's status and times, looper's
sequence (as text, and as JSON that replays), and the kernel's work (exact flops, compulsory bytes, precision) from which each
system's GFLOP/s and fraction of the machine's peak follow.
"""
from __future__ import annotations

import csv
import math
import statistics
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from ..fileio import atomic_path

INPUTS = ("scop", "native")
BLAS_REFERENCE = "openblas"  # `bench.blas`: a rate to compare with, never a competitor


@dataclass
class SystemResult:
    """One system on one kernel: `ok` (timed), `checked` (outputs right, not timed), or why not."""

    system: str
    status: str  # ok | checked | WRONG | crash | timeout | failed | unavailable | unchecked
    median: float | None = None
    min: float | None = None
    max: float | None = None
    times: list[float] = field(default_factory=list)  # one per fresh process, one call each
    detail: str = ""
    gflops: float | None = None  # the kernel's flops / mean time
    fraction_of_peak: float | None = None  # gflops / the machine's peak for the kernel's precision
    mean: float | None = None  # what a user's runs cost on average: what speedups compare
    sequence: str = ""  # a looper system's answer
    sequence_json: list | None = None  # ... as JSON (`Schedule.to_json`, of the program it searched)
    evaluator: str = ""  # ... and what scored its search
    search_seconds: float | None = None  # ... and how long finding and checking it took
    check_seconds: float | None = None  # ... of which verification and the speed guard (None: not split)
    measured: int | None = None  # ... and how many candidates its search ran
    notes: list[str] = field(default_factory=list)  # ... and what its search and checks reported
    rewritten: bool = False  # ... and whether it is the original loops in looper's code (`Schedule.rewrite`)
    # the system's rate at 2 flops per multiply-add of the kernel's products over the BLAS
    # reference's rate in the same rounds (`bench.blas`; dense products with `--compare openblas`)
    of_blas: float | None = None

    @property
    def seconds(self) -> float | None:
        """The time speedups compare: the mean (the median in files from before means)."""
        return self.mean if self.mean is not None else self.median


@dataclass
class KernelResult:
    """One kernel at one size in one input mode: every system's outcome, looper's answer, the work."""

    kernel: str
    size: str
    sequence: str
    evaluator: str
    search_seconds: float
    systems: dict[str, SystemResult]
    input: str = "scop"  # scop: every system compiles looper's C; native: PolyBench's own C
    flops: int | None = None
    bytes: int | None = None
    precision: str | None = None  # "double" | "single" | None (no flops)
    environments: list[str] = field(default_factory=list)  # OpenMP environments timed in (the first: the table's)
    # looper's answer as JSON (`Schedule.to_json`): it replays on the kernel (`looper apply`,
    # `bench --records`); None in files written before it was kept, and for a run that failed
    sequence_json: list | None = None
    record: str = ""  # FILE:LINE of the tuning record replayed instead of a search ("" when searched)
    multiply_adds: int | None = None  # of its products (`bench.blas.multiply_adds`), when it has a BLAS reference
    blas_flops: int | None = None  # what the BLAS reference computes (2 per multiply-add of its products)

    def environment_flags(self) -> list[str]:
        """looper's answer faster than gcc in one environment and slower in another: code whose
        speed depends on settings the user may not have."""
        names = {"": self.speedup("looper", "gcc")}
        for key in self.systems:
            if key.startswith("looper@"):
                env = key.split("@", 1)[1]
                names[env] = self.speedup(key, "gcc@" + env)
        faster = [e or "default" for e, v in names.items() if v and v > 1.0]
        slower = [e or "default" for e, v in names.items() if v and v < 1.0]
        if faster and slower:
            return [f"looper faster than gcc in {', '.join(faster)}, slower in {', '.join(slower)}"]
        return []

    @property
    def key(self) -> tuple[str, str, str]:
        """What a resumed run matches finished results on."""
        return self.kernel, self.size, self.input

    def speedup(self, system: str, over: str = "gcc") -> float | None:
        """How many times faster `system` ran than `over` (None unless both were timed; None
        for the BLAS reference, which computes another thing: it has a rate, not a speedup)."""
        if BLAS_REFERENCE in (system, over):
            return None
        a, b = self.systems.get(over), self.systems.get(system)
        if a and b and a.status == "ok" and b.status == "ok" and a.seconds and b.seconds:
            return a.seconds / b.seconds
        return None

    @property
    def intensity(self) -> float | None:
        """Flops per compulsory byte (the roofline's x)."""
        return self.flops / self.bytes if self.flops and self.bytes else None

    def rate(self, peak: float | None) -> None:
        """Fill every timed system's GFLOP/s and its fraction of `peak` (GFLOP/s); the BLAS
        reference's from what it computes, and every other system's rate against it."""
        for s, r in self.systems.items():
            flops = self.blas_flops if s == BLAS_REFERENCE else self.flops
            if r.status == "ok" and r.seconds and flops:
                r.gflops = flops / r.seconds / 1e9
                r.fraction_of_peak = r.gflops / peak if peak else None
        ref = self.systems.get(BLAS_REFERENCE)
        if ref is None or not ref.gflops or not self.multiply_adds:
            return
        for s, r in self.systems.items():
            if s != BLAS_REFERENCE and r.status == "ok" and r.seconds:
                r.of_blas = 2 * self.multiply_adds / r.seconds / 1e9 / ref.gflops


def geomean(xs: list[float]) -> float | None:
    """Geometric mean of the positive values (speedups are ratios), None when there are none."""
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def summary(results: list[KernelResult], systems: list[str]) -> dict:
    """Geometric mean and median of looper's speedup over gcc and over each other system, and
    of every system's speedup over gcc."""
    out = {}
    for over in [s for s in systems if s not in ("looper", "original", BLAS_REFERENCE)]:
        out[over] = _stats([r.speedup("looper", over) for r in results])
    for s in systems:
        if s not in ("gcc", BLAS_REFERENCE):
            out[f"{s}_over_gcc"] = _stats([r.speedup(s, "gcc") for r in results])
        shares = [r.systems[s].of_blas for r in results if s in r.systems and r.systems[s].of_blas]
        if shares:
            out[f"{s}_of_blas"] = _stats(shares)
    return out


def _stats(values: list[float | None]) -> dict:
    xs = [x for x in values if x]
    return {"geomean": geomean(xs), "median": statistics.median(xs) if xs else None, "n": len(xs)}


def systems_of(results: list[KernelResult]) -> list[str]:
    """Every system that appears, in first-seen order (gcc first)."""
    seen: dict[str, None] = {"gcc": None}
    for r in results:
        seen.update(dict.fromkeys(r.systems))
    return list(seen)


def from_json(data: dict) -> list[KernelResult]:
    """The results of a JSON file `to_json` wrote (earlier files lack the newer fields)."""
    known = {f.name for f in fields(SystemResult)}
    out = []
    for r in data.get("results", []):
        systems = {k: SystemResult(**{a: b for a, b in v.items() if a in known}) for k, v in r["systems"].items()}
        out.append(KernelResult(r["kernel"], r["size"], r["sequence"], r["evaluator"], r["search_seconds"],
                                systems, r.get("input", "scop"), r.get("flops"), r.get("bytes"),
                                r.get("precision"), r.get("environments", []), r.get("sequence_json"),
                                r.get("record", ""), r.get("multiply_adds"), r.get("blas_flops")))
    return out


def to_json(results: list[KernelResult], meta: dict) -> dict:
    """The file `--json` writes: the run's meta, every result, a summary per input mode."""
    by_mode = {m: [r for r in results if r.input == m] for m in INPUTS}
    return {"meta": meta, "results": [asdict(r) for r in results],
            "summary": {m: summary(rs, systems_of(rs)) for m, rs in by_mode.items() if rs}}


CSV_COLUMNS = ["kernel", "size", "input", "system", "status", "mean_s", "median_s", "min_s", "max_s", "runs",
               "speedup_over_gcc", "gflops", "fraction_of_peak", "flops", "bytes", "intensity", "precision",
               "detail", "sequence", "search_s", "of_blas"]


def write_csv(results: list[KernelResult], path: str | Path) -> None:
    """One row per (kernel, size, input, system); the file is written whole or not at all."""
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in results:
            for s, x in r.systems.items():
                w.writerow([r.kernel, r.size, r.input, s, x.status, x.mean, x.median, x.min, x.max, len(x.times),
                            r.speedup(s, "gcc"), x.gflops, x.fraction_of_peak, r.flops, r.bytes, r.intensity,
                            r.precision, x.detail, x.sequence, x.search_seconds, x.of_blas])
