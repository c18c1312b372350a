"""seidel-2d: 2-D Gauss-Seidel stencil, in-place nine-point average (PolyBench 4.2.1, stencils)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(TSTEPS=20, N=40),
    "SMALL": dict(TSTEPS=40, N=120),
    "MEDIUM": dict(TSTEPS=100, N=400),
    "LARGE": dict(TSTEPS=500, N=2000),
    "EXTRALARGE": dict(TSTEPS=1000, N=4000),
}


def init(N: int, A: f64[N, N]):
    for i in range(N):
        for j in range(N):
            A[i, j] = (f64(i) * (j + 2) + 2) / N


def kernel(TSTEPS: int, N: int, A: f64[N, N]):
    for t in range(TSTEPS):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                           + A[i, j - 1] + A[i, j] + A[i, j + 1]
                           + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0


OUTPUTS = ["A"]
