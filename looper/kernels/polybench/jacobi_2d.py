"""jacobi-2d: 2-D Jacobi stencil, five-point average over two arrays (PolyBench 4.2.1, stencils)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(TSTEPS=20, N=30),
    "SMALL": dict(TSTEPS=40, N=90),
    "MEDIUM": dict(TSTEPS=100, N=250),
    "LARGE": dict(TSTEPS=500, N=1300),
    "EXTRALARGE": dict(TSTEPS=1000, N=2800),
}


def init(N: int, A: f64[N, N], B: f64[N, N]):
    for i in range(N):
        for j in range(N):
            A[i, j] = (f64(i) * (j + 2) + 2) / N
            B[i, j] = (f64(i) * (j + 3) + 3) / N


def kernel(TSTEPS: int, N: int, A: f64[N, N], B: f64[N, N]):
    for t in range(TSTEPS):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, 1 + j] + A[1 + i, j] + A[i - 1, j])
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, 1 + j] + B[1 + i, j] + B[i - 1, j])


OUTPUTS = ["A"]
