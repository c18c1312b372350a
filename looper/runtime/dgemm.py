"""A reference for the measured peak: numpy's DGEMM (OpenBLAS) on the same number of threads.

A microkernel of independent FMA chains may beat a full matrix product a little (DGEMM also
loads, packs and stores), not a lot: the ratio checks that the peak is real.  Each measurement
runs in its own Python process, because the BLAS reads its thread count (`OPENBLAS_NUM_THREADS`,
also `OMP_NUM_THREADS` and `MKL_NUM_THREADS` for other builds) and its kernel choice
(`OPENBLAS_CORETYPE`) when it loads.

Why a kernel choice: OpenBLAS picks its kernels from the CPU's family.  0.3.31 does not know this
VM's (AMD family 26, Zen 5) and falls back to its Haswell kernels, AVX2 only: 63 GFLOP/s on one
thread where its SkylakeX (AVX-512) kernels reach 107.  On a CPU with AVX-512, the SkylakeX
kernels are measured too, and the faster of the two is the reference: the best DGEMM OpenBLAS
has for these cores, which is what "what DGEMM reaches" should mean.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

from .ompenv import TUNED_ENV
from ..target.host import cpu_flags

_SCRIPT = """
import json, sys, time
import numpy as np
n, repeats = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
a, b, c = rng.random((n, n)), rng.random((n, n)), np.empty((n, n))
np.matmul(a, b, out=c)
times = []
for _ in range(repeats):
    t = time.perf_counter(); np.matmul(a, b, out=c); times.append(time.perf_counter() - t)
print(json.dumps({"seconds": min(times)}))
"""


@dataclass(frozen=True)
class Dgemm:
    """numpy's best DGEMM rate for n x n matrices on `threads` threads."""

    threads: int
    gflops: float
    n: int
    core: str | None  # the BLAS kernels used (OpenBLAS' core type), when it says


def numpy_dgemm(threads: int, n: int = 4000, repeats: int = 3, timeout: float = 600) -> Dgemm:
    """Best of `repeats` n x n products (after one untimed, into one preallocated result: no page
    faults in the timed runs), over OpenBLAS' kernel choices."""
    runs = [_one(threads, n, repeats, core, timeout) for core in _core_types()]
    return max(runs, key=lambda d: d.gflops)


def best_core_type() -> str | None:
    """The OpenBLAS kernels to ask for by name: SkylakeX's where the CPU has AVX-512 (its own
    choice on an AVX-512 CPU it does not know is Haswell's, AVX2 only), else its own choice."""
    return "SkylakeX" if _has_avx512() else None


def _core_types() -> list[str | None]:
    """The BLAS's own choice, plus OpenBLAS' AVX-512 kernels where the CPU has AVX-512."""
    return [None, "SkylakeX"] if _has_avx512() else [None]


def _has_avx512() -> bool:
    return "avx512f" in cpu_flags()


def _one(threads: int, n: int, repeats: int, core: str | None, timeout: float) -> Dgemm:
    env = dict(TUNED_ENV.apply(os.environ), OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), OPENBLAS_VERBOSE="2")
    env.pop("OPENBLAS_CORETYPE", None)
    if core:
        env["OPENBLAS_CORETYPE"] = core
    r = subprocess.run([sys.executable, "-c", _SCRIPT, str(n), str(repeats)], capture_output=True, text=True,
                       env=env, timeout=timeout, check=True)
    seconds = next(json.loads(line) for line in r.stdout.splitlines() if line.startswith("{"))["seconds"]
    used = re.search(r"Core: (\S+)", r.stdout + r.stderr)
    return Dgemm(threads, 2.0 * n ** 3 / seconds / 1e9, n, used.group(1) if used else core)
