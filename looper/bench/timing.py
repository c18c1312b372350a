"""Timing the systems that computed the right outputs: interleaved rounds, fresh processes.

Two kinds of binaries take part.  looper's harness (`gcc`, `looper` and the scop-mode peers)
runs `binary 0 1+n`: a warm-up run, then n timed ones in the same process.  PolyBench's own
harness (the native-mode peers) times one run per process (after flushing the caches) and
ignores its arguments, so n timed runs are n processes.  Either way a system gets one time per
round (the median of its n runs), n being one in the first round and then enough runs for
about 0.1 s (at most MAX_RUNS[kind]: a PolyBench process also pays its init every time).

Each round runs every system once, in alternating order, and a system's time is the median of
its rounds: this VM's speed drifts for minutes at a time, and systems timed one after the other
carried that drift into their ratios (`runtime.run.time_interleaved`, which this follows).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable, Protocol

from ..runtime import run
from ..runtime.ompenv import DEFAULT_ENV, OmpEnv
from ..runtime.run import AUTO_SECONDS, RunResult
from .peers import Build
from .results import SystemResult

MAX_RUNS = {"looper": 100, "polybench": 10}


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
    runs: int = 1  # timed runs per round after the first


def time_systems(builds: dict[str, Build], cfg: TimingConfig, log: Callable[[str], None] = lambda s: None,
                 envs: dict[str, OmpEnv] | None = None) -> dict[str, SystemResult]:
    """Time the builds that have a binary; gcc first, with a generous limit per run
    (`baseline_timeout`); every other system gets `timeout_factor` times gcc's first time.  Each
    system runs in its OpenMP environment (`envs`; default: as the shell has it)."""
    envs = envs or {}
    order = sorted((s for s, b in builds.items() if b.binary is not None), key=lambda s: s != "gcc")
    state = {s: _Timed(builds[s]) for s in order}
    for r in range(cfg.repeat):
        for s in (order if r % 2 == 0 else order[::-1]):
            if state[s].failure is None:
                _one_round(state[s], _limit(state, s, cfg), cfg.threads, first=r == 0,
                           env=envs.get(s, DEFAULT_ENV))
    out = {s: _result(s, b, state.get(s)) for s, b in builds.items()}
    for s in order:
        x = out[s]
        log(f"  time  {s:9} {x.status:8} " + (f"{x.median:.6f} s" if x.median else x.detail))
    return out


def _limit(state: dict[str, _Timed], system: str, cfg: TimingConfig) -> float:
    """Seconds one process of `system` may take this round."""
    gcc = state.get("gcc") if "@" not in system else state.get("gcc@" + system.split("@")[1], state.get("gcc"))
    per_run = cfg.baseline_timeout if system == "gcc" or gcc is None or not gcc.times \
        else cfg.timeout_factor * gcc.times[0]
    runs = state[system].runs if state[system].times else 1
    per_process = 1 + runs if state[system].build.harness == "looper" else 1
    return max(cfg.min_timeout, per_run * per_process)


def _one_round(t: _Timed, limit: float, threads: int, first: bool, env: OmpEnv = DEFAULT_ENV) -> None:
    """Run one round of one system: record its time, or the failed run (it then sits out)."""
    n = 1 if first else t.runs
    path = t.build.binary.path
    if t.build.harness == "looper":
        res = run.run_binary(path, 0, 1 + n, timeout=limit, threads=threads, omp_env=env)
        ok, times = res.ok and len(res.times) >= 1 + n, res.times[1:1 + n]
    else:
        times, res = [], RunResult(0)
        for _ in range(n):
            res = run.run_binary(path, 0, 1, timeout=limit, threads=threads, omp_env=env)
            if not res.ok or not res.times:
                break
            times.append(res.times[0])
        ok = len(times) == n
    if not ok:
        t.failure, t.limit = res, limit
        return
    t.times.append(statistics.median(times))
    if first:
        cap = MAX_RUNS[t.build.harness]
        t.runs = max(1, min(cap, math.ceil(AUTO_SECONDS / max(t.times[0], 1e-6))))


def _result(system: str, b: Build, t: _Timed | None) -> SystemResult:
    if t is None:
        return SystemResult(system, b.status, detail=b.detail)
    if t.failure is None and t.times:
        return SystemResult(system, "ok", statistics.median(t.times), min(t.times), max(t.times), t.times,
                            b.detail)
    if t.failure is not None and t.failure.timed_out:
        return SystemResult(system, "timeout", detail=f"over {t.limit:.0f} s")
    return SystemResult(system, "crash", detail=t.failure.describe_failure() if t.failure else "no time")
