"""Facts read off the host that runs looper: its CPU, its default thread count, its load.

A measurement depends on them (each is recorded with every time), and `Target.detect` builds the
target a search tunes for from them.  Nothing outside `looper.target` reads the host.
"""
from __future__ import annotations

import functools
import os


@functools.lru_cache(maxsize=1)
def cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    out: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                out[key.strip()] = value.strip()
    except OSError:
        pass
    return out


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's marketing name ("AMD EPYC", "Intel(R) Xeon(R) Processor")."""
    name = cpuinfo().get("model name")
    if name:
        return name
    import platform
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=1)
def cpu_id() -> str:
    """The CPU's name with its family, model and stepping: machines sold under one name differ
    (two "AMD EPYC" VMs measured FMA peaks of 118 and 262 GFLOP/s on 2 threads)."""
    info = cpuinfo()
    parts = [f"{k} {info[f]}" for k, f in (("family", "cpu family"), ("model", "model"), ("stepping", "stepping"))
             if f in info]
    return cpu_model() + (f" ({', '.join(parts)})" if parts else "")


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (/proc/cpuinfo's `flags`: avx2, avx512f, ...)."""
    return frozenset(cpuinfo().get("flags", "").split())


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_threads() -> int:
    """The threads an OpenMP program runs on as the shell has it: OMP_NUM_THREADS, else every core."""
    env = os.environ.get("OMP_NUM_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return cores()


def load_average() -> float:
    """The one-minute load average (-1 where the host does not say)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return -1.0
