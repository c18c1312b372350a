"""Timing the systems that computed the right outputs, as users run them.

Each round runs every system once, in alternating order, each run a fresh process that calls the
kernel once: PolyBench's own harness does that by itself (it times one call per process, after
flushing the caches); looper's harness is asked for one cold call (`main 0 1 - 0 cold`: the OpenMP
team created inside the timed call, as in a program that calls its kernel once).  Nothing is
compiled while timing, and the OpenMP environment is the shell's (plus `OMP_NUM_THREADS`).

A system's time is the mean of its rounds: what a user's runs cost on average, slow runs
included (on this 2-vCPU VM a parallel answer can be fast in half its fresh runs and 3-5x slower
in the rest, which a median hides).  Rounds: at least `--repeat`, and enough to see a slow mode,
`runtime.run.AS_RUN.runs` of gcc's first time (8 for a program under a second, 24 under a
millisecond, where one disturbed run moves the mean by a third).  Interleaving
shares this VM's drift, which lasts minutes, among the systems.

Systems whose binaries are the same build (the same source, flags and compiler: looper's answer
when it is the original, whose file is then PolyBench's byte for byte) are timed once and share
those times: one program timed twice differs only by noise (deriche MEDIUM: 0.94x "over gcc",
its own binary, by the means of 8 runs each).
"""
from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass, field
from typing import Callable, Protocol

from ..runtime import run
from ..runtime.ompenv import DEFAULT_ENV, OmpEnv
from ..runtime.run import AS_RUN, RunResult
from .peers import Build
from .results import SystemResult


class TimingConfig(Protocol):
    """What timing needs of the bench's configuration."""

    repeat: int
    threads: int
    timeout_factor: float
    min_timeout: float
    baseline_timeout: float


@dataclass
class _Timed:
    """One system's rounds so far."""

    build: Build
    times: list[float] = field(default_factory=list)
    failure: RunResult | None = None
    limit: float = 0.0


def rounds_for(first_gcc: float | None, repeat: int) -> int:
    """Rounds to run: at least `repeat`, and as many as judging a program of gcc's time needs."""
    return max(repeat, AS_RUN.runs(first_gcc, judging=True))


def time_systems(builds: dict[str, Build], cfg: TimingConfig, log: Callable[[str], None] = lambda s: None,
                 envs: dict[str, OmpEnv] | None = None) -> dict[str, SystemResult]:
    """Time the builds that have a binary; gcc first, with a generous limit per run
    (`baseline_timeout`); every other system gets `timeout_factor` times gcc's first time.  Each
    system runs in its OpenMP environment (`envs`; default: as the shell has it)."""
    envs = envs or {}
    built = sorted((s for s, b in builds.items() if b.binary is not None), key=lambda s: s != "gcc")
    twins = same_builds(builds, built, envs)
    order = [s for s in built if s not in twins]
    state = {s: _Timed(builds[s]) for s in order}
    rounds, r = cfg.repeat, 0
    while r < rounds:
        for s in (order if r % 2 == 0 else order[::-1]):
            if state[s].failure is None:
                _one_run(state[s], _limit(state, s, cfg), cfg.threads, envs.get(s, DEFAULT_ENV))
        if r == 0:
            gcc = state.get("gcc")
            rounds = rounds_for(gcc.times[0] if gcc is not None and gcc.times else None, cfg.repeat)
        r += 1
    out = {s: _result(s, b, state.get(s)) for s, b in builds.items()}
    for s, twin in twins.items():
        out[s] = dataclasses.replace(out[twin], system=s, detail=f"{builds[s].detail}; the same build as "
                                                                 f"{twin}'s, timed once")
    for s in built:
        x = out[s]
        log(f"  time  {s:14} {x.status:8} " + (f"mean {x.mean:.6f} s over {len(x.times)} runs" if x.mean else x.detail))
    return out


def same_builds(builds: dict[str, Build], systems: list[str], envs: dict[str, OmpEnv]) -> dict[str, str]:
    """system -> the earlier system (in `systems`' order) whose binary it is, in the same OpenMP
    environment."""
    first: dict[tuple, str] = {}
    twins: dict[str, str] = {}
    for s in systems:
        key = (builds[s].binary.key, builds[s].harness, envs.get(s, DEFAULT_ENV))
        if key in first:
            twins[s] = first[key]
        else:
            first[key] = s
    return twins


def _limit(state: dict[str, _Timed], system: str, cfg: TimingConfig) -> float:
    """Seconds one process of `system` may take."""
    gcc = state.get("gcc") if "@" not in system else state.get("gcc@" + system.split("@")[1], state.get("gcc"))
    per_run = cfg.baseline_timeout if system == "gcc" or gcc is None or not gcc.times \
        else cfg.timeout_factor * gcc.times[0]
    return max(cfg.min_timeout, per_run)


def _one_run(t: _Timed, limit: float, threads: int, env: OmpEnv = DEFAULT_ENV) -> None:
    """One fresh process of one system, one call: record its time, or the failed run (it then sits out)."""
    res = run.run_binary(t.build.binary.path, 0, 1, timeout=limit, threads=threads, omp_env=env,
                         cold=t.build.harness == "looper")
    if not res.ok or not res.times:
        t.failure, t.limit = res, limit
        return
    t.times.append(res.times[0])


def _result(system: str, b: Build, t: _Timed | None) -> SystemResult:
    if t is None:
        return SystemResult(system, b.status, detail=b.detail)
    if t.failure is None and t.times:
        return SystemResult(system, "ok", statistics.median(t.times), min(t.times), max(t.times), t.times,
                            b.detail, mean=statistics.fmean(t.times))
    if t.failure is not None and t.failure.timed_out:
        return SystemResult(system, "timeout", detail=f"over {t.limit:.0f} s")
    return SystemResult(system, "crash", detail=t.failure.describe_failure() if t.failure else "no time")
