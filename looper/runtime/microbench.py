"""The two microkernels that bound every kernel's speed: the FMA peak and the memory bandwidth.

Both are C files shipped in `runtime/templates/` and built with the flags looper's own programs
get (`gcc -O3 -march=native -fopenmp`), so the peak is what the same compiler can reach on the
same cores.  Runs use the timing environment of every measured program (`runtime.ompenv.TUNED_ENV`:
threads pinned one per core, spinning while they wait) and `OMP_NUM_THREADS`.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import LooperError
from .compile import OPT_FLAGS, compile_c
from .ompenv import TUNED_ENV

PRECISIONS = {"double": "double", "single": "float"}


class MicrobenchError(LooperError):
    """A microkernel did not build or run (reported with its output)."""

    exit_status = 3


def template(name: str) -> str:
    """A C microkernel shipped in `runtime/templates/`."""
    return resources.files(__package__).joinpath("templates", name).read_text()


@dataclass(frozen=True)
class FmaPeak:
    """The best rate of independent vector FMA chains on `threads` threads."""

    precision: str  # "double" | "single"
    threads: int
    gflops: float
    lanes: int  # elements per vector register the compiler chose (8 doubles: 512-bit)


@dataclass(frozen=True)
class Bandwidth:
    """STREAM's triad rate on `threads` threads over arrays of `elements` doubles each."""

    threads: int
    gbytes_per_s: float
    elements: int


def fma_binary(precision: str) -> Path:
    """The FMA microkernel for `precision`, built (and cached) like any looper program."""
    return compile_c(template("fma_peak.c"), OPT_FLAGS, defines=(f"REAL={PRECISIONS[precision]}",)).path


def fma_peak(precision: str, threads: int, seconds: float = 0.5, runs: int = 1) -> FmaPeak:
    """Measure the FMA peak in GFLOP/s (2 flops per lane and FMA): the best of `runs` processes
    of about `seconds` each (`looper machine` asks for three, `peaks.Budget.peak_runs`).  A peak
    is a best case, and one short run can miss it: on a 2-vCPU VM one run measured 58.7 GFLOP/s
    on 2 threads (a core taken away for its half second), five reruns 111-116, and every cost
    term the machine's searches estimated read the halved peak."""
    best_rate, lanes = 0.0, 0
    for _ in range(runs):
        out = _run([str(fma_binary(precision)), repr(seconds)], threads, 60 + 20 * seconds)
        flops, best, ran, lanes_ = _numbers(out, 4)
        if int(ran) != threads:
            raise MicrobenchError(f"fma_peak ran {int(ran)} threads instead of {threads}")
        best_rate, lanes = max(best_rate, flops / best / 1e9), int(lanes_)
    return FmaPeak(precision, threads, best_rate, lanes)


def triad_bandwidth(threads: int, elements: int, seconds: float = 0.5) -> Bandwidth:
    """Measure STREAM's triad in GB/s (24 bytes per element, as STREAM counts)."""
    path = compile_c(template("stream_triad.c"), OPT_FLAGS, defines=()).path
    out = _run([str(path), str(elements), repr(seconds)], threads, 120 + 20 * seconds)
    nbytes, best, _ran = _numbers(out, 3)
    return Bandwidth(threads, nbytes / best / 1e9, elements)


@dataclass(frozen=True)
class ForkCost:
    """What `threads` threads cost a program, each a mean over fresh processes (a slow start in
    some processes is part of what users pay): the first parallel region (the team created),
    each later one, and a barrier."""

    threads: int
    first: float  # seconds
    region: float
    barrier: float
    processes: int


def fork_cost(threads: int, processes: int = 20, regions: int = 200, env: dict[str, str] | None = None) -> ForkCost:
    """Measure OpenMP's costs in `processes` fresh processes, in the environment users run
    programs in (`env`, default: this process's own, with OMP_NUM_THREADS set): unlike the
    peaks, nothing is pinned or spun, since that is not what a user's program gets."""
    path = compile_c(template("fork_cost.c"), OPT_FLAGS, defines=()).path
    base = dict(os.environ if env is None else env, OMP_NUM_THREADS=str(threads))
    rows = []
    for _ in range(processes):
        try:
            r = subprocess.run([str(path), str(regions)], capture_output=True, text=True, timeout=60, env=base)
        except subprocess.TimeoutExpired:
            raise MicrobenchError("fork_cost: no result within 60 s") from None
        if r.returncode != 0:
            raise MicrobenchError(f"fork_cost failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
        rows.append(_numbers(r.stdout, 3))
    mean = lambda k: sum(row[k] for row in rows) / len(rows)  # noqa: E731
    return ForkCost(threads, mean(0), mean(1), mean(2), processes)


def hot_loop(binary: Path, function: str = "chains") -> list[str]:
    """The instructions of `function` in `binary` (objdump -d): how a test checks that the
    FMA loop is vector FMAs on full-width registers and nothing else.  Empty without objdump."""
    objdump = shutil.which("objdump")
    if objdump is None:
        return []
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(binary)], capture_output=True,
                          text=True, check=True).stdout
    m = re.search(rf"<{function}(?:\.[\w.]+)?>:\n(.*?)(?:\n\n|\Z)", text, re.S)  # chains.constprop.0 too
    return [line.split("\t", 1)[-1].strip() for line in m.group(1).splitlines()] if m else []


def _run(cmd: list[str], threads: int, timeout: float) -> str:
    env = TUNED_ENV.apply(dict(os.environ, OMP_NUM_THREADS=str(threads)))
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        raise MicrobenchError(f"{Path(cmd[0]).name}: no result within {timeout:.0f} s") from None
    if r.returncode != 0:
        raise MicrobenchError(f"{Path(cmd[0]).name} failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    return r.stdout


def _numbers(stdout: str, n: int) -> list[float]:
    try:
        values = [float(x) for x in stdout.split()[:n]]
    except ValueError:
        values = []
    if len(values) < n or values[1] <= 0:
        raise MicrobenchError(f"unexpected microkernel output: {stdout.strip()[:200]!r}")
    return values
