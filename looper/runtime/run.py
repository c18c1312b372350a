"""Running generated programs: timeouts, repeated timing, and PolyBench dump parsing/comparison."""
from __future__ import annotations

import contextlib
import math
import os
import re
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..interrupts import raise_pending
from ..target.host import load_average
from .measurements import Measurement
from .ompenv import DEFAULT_ENV, OmpEnv
from .status import Status

_SECTION = re.compile(r"begin dump: (\S+)(.*?)end\s+dump: \1", re.S)


@dataclass
class RunResult:
    returncode: int
    times: list[float] = field(default_factory=list)  # seconds, one per repeat
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe_failure(self) -> str:
        if self.timed_out:
            return "timed out"
        if self.returncode < 0:
            return f"killed by signal {-self.returncode}"
        tail = self.stderr.strip().splitlines()[-3:]
        return f"exit status {self.returncode}" + (f": {' '.join(tail)}" if tail else "")


def run_binary(path: Path | str, variant: int = 0, repeats: int = 1, timeout: float | None = None,
               threads: int | None = None, extra_env: dict[str, str] | None = None,
               mode: str = "-", cutoff: float = 0.0, omp_env: OmpEnv = DEFAULT_ENV, cold: bool = False) -> RunResult:
    """Run `path VARIANT REPEATS MODE CUTOFF [cold]` in `omp_env` (the user's environment plus its
    settings; `runtime.ompenv`); parse one time per repeat.  `cold`: the first run creates the
    OpenMP team inside its timed region, as a program that calls its kernel once does."""
    env = dict(os.environ)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    env = omp_env.apply(env)
    env.update(extra_env or {})
    try:
        res = subprocess.run([str(path), str(variant), str(repeats), mode, repr(cutoff)] + (["cold"] if cold else []),
                             capture_output=True, text=True,
                             timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired as e:
        raise_pending()
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return RunResult(-9, _times(out), out, "", timed_out=True)
    raise_pending()  # an interrupt dropped while the process started (looper.interrupts)
    return RunResult(res.returncode, _times(res.stdout), res.stdout, res.stderr)


@dataclass(frozen=True)
class Protocol:
    """How a program's time is taken.

    `as-run` is how a user's program runs: a fresh process per sample, one timed call that
    creates the OpenMP team inside it, in the shell's OpenMP environment; samples are summarized
    by their mean, which counts the slow runs a user pays for (on a 2-vCPU VM a parallel program
    can be fast in half its fresh runs and 3-5x slower in the rest, which a median hides).
    Enough samples to see that: `judge_runs` for a program under a second when an answer is
    judged against the original (fewer for long ones, more for one under `short_seconds`),
    `rank_runs` when a search only ranks candidates (its finalists are judged again).

    `warm` is how looper timed before: in one process, a warm-up call, then repeats with the team
    already running, summarized by the median (the training data was taken so)."""

    name: str = "as-run"
    judge_runs: int = 8
    rank_runs: int = 3
    long_seconds: float = 1.0  # a run this long or longer needs fewer samples to average its noise
    # a run shorter than this is moved by one disturbance of its process (jacobi-1d MEDIUM: one
    # run of eight took 54 us where the others took 15, and its mean rose by 30%): `short_factor`
    # times the samples, still a fraction of a second of fresh processes
    short_seconds: float = 1e-3
    short_factor: int = 3

    @property
    def cold(self) -> bool:
        return self.name == "as-run"

    def summary(self, times: Sequence[float]) -> float:
        """The one number that stands for `times`: their mean as run, their median warm."""
        return statistics.fmean(times) if self.cold else statistics.median(times)

    def runs(self, seconds: float | None, judging: bool = True) -> int:
        """Samples to take of a program of about `seconds` a run: `judge_runs` (`rank_runs`)
        under `long_seconds`, fewer beyond, where one run averages more of the machine's noise
        (judging: half, at least 3, and 3 beyond five times as long; ranking: 2, then 1), and
        `short_factor` times as many to judge one under `short_seconds`."""
        long = seconds is not None and seconds >= self.long_seconds
        longer = seconds is not None and seconds >= 5 * self.long_seconds
        if judging and seconds is not None and seconds < self.short_seconds:
            return self.short_factor * self.judge_runs
        if judging:
            return (3 if longer else max(3, self.judge_runs // 2)) if long else self.judge_runs
        return (1 if longer else min(2, self.rank_runs)) if long else self.rank_runs


AS_RUN = Protocol("as-run")
WARM = Protocol("warm", judge_runs=3, rank_runs=3)


@dataclass
class Interleaved:
    """One (binary, variant) pair's interleaved timing."""
    times: list[float] = field(default_factory=list)  # one per round it ran in
    failure: RunResult | None = None  # the run that failed; the pair sat out the later rounds
    limit: float | None = None  # that run's time limit

    @property
    def ok(self) -> bool:
        return self.failure is None and bool(self.times)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def why(self) -> str | None:
        """Why the pair has no times, for reports (None when it has)."""
        if self.ok:
            return None
        if self.failure is None:
            return "never ran"
        if self.failure.timed_out and self.limit is not None:
            return f"a run timed out after {self.limit:.3g} s"
        return self.failure.describe_failure()


# with per_process=None, a pair's timed runs per process after its first round: enough for this
# many seconds (at most MAX_PER_PROCESS runs)
AUTO_SECONDS = 0.1
MAX_PER_PROCESS = 100

Limit = Callable[[int, int, list[Interleaved]], float | None]


def runs_per_process(seconds: float) -> int:
    """Timed runs per process for a kernel of about `seconds`: about AUTO_SECONDS of them, at
    most 50 (the fixed count of `time_interleaved`'s `per_process`, known before it starts)."""
    return max(1, min(50, int(AUTO_SECONDS / seconds)))


def time_interleaved(runs: Sequence[tuple], rounds: int, threads: int | None = None,
                     timeout: float | Limit | None = None, per_process: int | None = 1,
                     omp_env: OmpEnv = DEFAULT_ENV) -> list[Interleaved]:
    """Time several (binary, variant[, OmpEnv]) runs round-robin: each round runs every pair once, in a
    fresh process (a warm-up run, then `per_process` timed ones, whose median counts), in
    alternating order.  One time per round and pair; a pair whose run fails or times out keeps
    that run and sits out the later rounds.

    `per_process=None` picks each pair's count from its first round (one timed run then, later
    enough for AUTO_SECONDS).  `timeout` is a limit per run, or a function of (pair, timed runs in
    the process, results so far) for limits relative to another pair's time.

    This 2-vCPU VM changes speed for minutes at a time (fdtd-2d's original: 1.25 s, then 1.73 s
    five minutes later; one parallel variant 0.34 s, then 0.80 s): pairs timed one after the other
    can land in different phases, interleaved ones share them, and their ratio holds.  Kernels of
    a millisecond or less need several runs per process: single parallel runs of MEDIUM mvt took
    0.1 ms or 1.5 ms, whether the second vCPU happened to be running or not."""
    out = [Interleaved() for _ in runs]
    counts: dict[int, int] = {}
    for r in range(rounds):
        order = list(range(len(runs)))
        for k in (order if r % 2 == 0 else order[::-1]):
            if out[k].failure is not None:
                continue
            n = per_process if per_process is not None else counts.get(k, 1)
            limit = timeout(k, n, out) if callable(timeout) else timeout
            path, variant, *env = runs[k]  # a pair may bring its own environment
            res = run_binary(path, variant, 1 + n, timeout=limit, threads=threads,
                             omp_env=env[0] if env else omp_env)
            if not res.ok or len(res.times) < 1 + n:
                out[k].failure, out[k].limit = res, limit
                continue
            t = statistics.median(res.times[1:])
            out[k].times.append(t)
            counts.setdefault(k, max(1, min(MAX_PER_PROCESS, math.ceil(AUTO_SECONDS / max(t, 1e-6)))))
    return out


def time_as_run(runs: Sequence[tuple], rounds: int, threads: int | None = None,
                timeout: float | Limit | None = None, omp_env: OmpEnv = DEFAULT_ENV,
                run_one: Callable[[tuple, float | None], RunResult] | None = None) -> list[Interleaved]:
    """Time several (binary, variant[, OmpEnv]) runs as users run them (`AS_RUN`): each round runs
    every pair once, in alternating order, each run a fresh process whose one call is timed cold.
    One time per round and pair; a pair whose run fails or times out keeps that run and sits out
    the later rounds.  Interleaving shares this machine's drift among the pairs.  `run_one(pair,
    limit)`: how a pair runs, when it is not looper's harness (the user's own program,
    `runtime.userprogram`)."""
    out = [Interleaved() for _ in runs]
    for r in range(rounds):
        order = list(range(len(runs)))
        for k in (order if r % 2 == 0 else order[::-1]):
            if out[k].failure is not None:
                continue
            limit = timeout(k, 1, out) if callable(timeout) else timeout
            path, variant, *env = runs[k]
            res = run_one(runs[k], limit) if run_one is not None else \
                run_binary(path, variant, 1, timeout=limit, threads=threads, omp_env=env[0] if env else omp_env,
                           cold=True)
            if not res.ok or not res.times:
                out[k].failure, out[k].limit = res, limit
                continue
            out[k].times.append(res.times[0])
    return out


@dataclass
class Runner:
    """Runs built variants and says what became of each run (`Measurement`).  Every timed run
    holds `timing_lock` (datagen's workers share one machine: one timing at a time).  Runs are
    timed per `protocol` (`AS_RUN`: fresh processes, cold calls)."""

    threads: int | None = None
    timing_lock: Callable = contextlib.nullcontext
    omp_env: OmpEnv = DEFAULT_ENV
    protocol: Protocol = AS_RUN

    def run(self, binary: Path, variant: int, repeats: int, mode: str = "-", timeout: float | None = None,
            cutoff: float = 0.0, cold: bool = False) -> RunResult:
        """`repeats` runs of one variant in one process (no interpretation)."""
        with self.timing_lock():
            return run_binary(binary, variant, repeats, timeout=timeout, threads=self.threads,
                              mode=mode, cutoff=cutoff, omp_env=self.omp_env, cold=cold)

    def samples(self, binary: Path, variant: int, repeats: int, mode: str = "-", timeout: float | None = None,
                cutoff: float = 0.0) -> RunResult:
        """`repeats` timed samples of one variant per the protocol, the first run checking (or
        saving) outputs per `mode`: as run, `repeats` fresh processes of one cold call each (the
        first checks; a first run over `cutoff` ends it); warm, one process of a checked warm-up
        and `repeats` timed runs.  The result's times are the samples (the warm-up left out)."""
        if not self.protocol.cold:
            res = self.run(binary, variant, repeats + 1, mode, timeout, cutoff)
            res.times = res.times[1:] if len(res.times) > 1 else res.times
            return res
        first = self.run(binary, variant, 1, mode, timeout, cutoff, cold=True)
        if not first.ok or status_line(first.stdout, "CUTOFF") is not None:
            return first
        times = list(first.times)
        for _ in range(repeats - 1):
            more = self.run(binary, variant, 1, "-", timeout, cold=True)
            if not more.ok or not more.times:
                more.times = times + more.times
                return more
            times += more.times
        first.times = times
        return first

    def measure(self, binary: Path, variant: int, mode: str, cutoff: float, timeout: float,
                repeats: int) -> Measurement:
        """`repeats` samples (`samples`), the first run checking (or saving) outputs per `mode`;
        the first run alone when it is slower than `cutoff`."""
        res = self.samples(binary, variant, repeats, mode, timeout, cutoff)
        load = load_average()
        if res.timed_out:
            return Measurement(Status.TIMEOUT, res.times, timeout, f"no result within {timeout:.1f} s", load)
        if res.returncode == 4:
            bad = status_line(res.stdout, "CHECK")
            return Measurement(Status.WRONG, res.times, cutoff, f"{bad} output values differ from the original", load)
        if not res.ok:
            return Measurement(Status.CRASH, res.times, cutoff, res.describe_failure(), load)
        if status_line(res.stdout, "CUTOFF") is not None:
            return Measurement(Status.SLOW, res.times[:1], cutoff, f"first run slower than {cutoff:.3g} s", load)
        return Measurement(Status.OK, res.times, cutoff, "", load)

    def interleaved(self, runs: Sequence[tuple[Path | str, int]], rounds: int, timeout=None,
                    per_process: int | None = 1) -> list[Interleaved]:
        """Interleaved rounds under the timing lock, per the protocol (`time_as_run`, or
        `time_interleaved` with `per_process` warm runs)."""
        with self.timing_lock():
            if self.protocol.cold:
                return time_as_run(runs, rounds, threads=self.threads, timeout=timeout, omp_env=self.omp_env)
            return time_interleaved(runs, rounds, threads=self.threads, timeout=timeout, per_process=per_process,
                                    omp_env=self.omp_env)


def _times(stdout: str) -> list[float]:
    """The kernel times: stdout lines that are plain numbers (LOOPER_* lines are status)."""
    out = []
    for line in stdout.splitlines():
        try:
            out.append(float(line))
        except ValueError:
            pass
    return out


def status_line(stdout: str, tag: str) -> str | None:
    """The value after `LOOPER_<tag>` in a harness' stdout, '' for a bare tag, None if absent."""
    for line in stdout.splitlines():
        if line.startswith(f"LOOPER_{tag}"):
            return line[len(tag) + 7:].strip()
    return None


def parse_dump(text: str) -> dict[str, list[float]]:
    """Array name -> values, from PolyBench's dump format."""
    return {m.group(1): [float(x) for x in m.group(2).split()] for m in _SECTION.finditer(text)}


def compare_dumps(reference: str, got: str, abs_tol: float = 0.0, rel_tol: float = 0.0) -> str | None:
    """None when every array matches; otherwise what differs.  NaN never matches anything."""
    ref, out = parse_dump(reference), parse_dump(got)
    if not ref:
        return "reference has no dump sections"
    for name, vals in ref.items():
        g = out.get(name)
        if g is None:
            return f"array {name} missing from output"
        if len(g) != len(vals):
            return f"array {name}: {len(g)} values, reference has {len(vals)}"
        bad = [k for k, (a, b) in enumerate(zip(vals, g))
               if math.isnan(a) or math.isnan(b) or abs(a - b) > abs_tol + rel_tol * abs(a)]
        if bad:
            k = bad[0]
            return (f"array {name}: {len(bad)}/{len(vals)} values differ "
                    f"(first at {k}: expected {vals[k]!r}, got {g[k]!r})")
    return None
