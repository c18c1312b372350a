"""jacobi-1d: 1-D Jacobi stencil, three-point average over two arrays (PolyBench 4.2.1, stencils)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(TSTEPS=20, N=30),
    "SMALL": dict(TSTEPS=40, N=120),
    "MEDIUM": dict(TSTEPS=100, N=400),
    "LARGE": dict(TSTEPS=500, N=2000),
    "EXTRALARGE": dict(TSTEPS=1000, N=4000),
}


def init(N: int, A: f64[N], B: f64[N]):
    for i in range(N):
        A[i] = (f64(i) + 2) / N
        B[i] = (f64(i) + 3) / N


def kernel(TSTEPS: int, N: int, A: f64[N], B: f64[N]):
    for t in range(TSTEPS):
        for i in range(1, N - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in range(1, N - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])


OUTPUTS = ["A"]
