"""heat-3d: 3-D heat equation, Jacobi-style stencil over two arrays (PolyBench 4.2.1, stencils)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(TSTEPS=20, N=10),
    "SMALL": dict(TSTEPS=40, N=20),
    "MEDIUM": dict(TSTEPS=100, N=40),
    "LARGE": dict(TSTEPS=500, N=120),
    "EXTRALARGE": dict(TSTEPS=1000, N=200),
}


def init(N: int, A: f64[N, N, N], B: f64[N, N, N]):
    for i in range(N):
        for j in range(N):
            for k in range(N):
                B[i, j, k] = f64(i + j + (N - k)) * 10 / N
                A[i, j, k] = B[i, j, k]


def kernel(TSTEPS: int, N: int, A: f64[N, N, N], B: f64[N, N, N]):
    for t in range(1, TSTEPS + 1):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                for k in range(1, N - 1):
                    B[i, j, k] = (0.125 * (A[i + 1, j, k] - 2.0 * A[i, j, k] + A[i - 1, j, k])
                                  + 0.125 * (A[i, j + 1, k] - 2.0 * A[i, j, k] + A[i, j - 1, k])
                                  + 0.125 * (A[i, j, k + 1] - 2.0 * A[i, j, k] + A[i, j, k - 1])
                                  + A[i, j, k])
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                for k in range(1, N - 1):
                    A[i, j, k] = (0.125 * (B[i + 1, j, k] - 2.0 * B[i, j, k] + B[i - 1, j, k])
                                  + 0.125 * (B[i, j + 1, k] - 2.0 * B[i, j, k] + B[i, j - 1, k])
                                  + 0.125 * (B[i, j, k + 1] - 2.0 * B[i, j, k] + B[i, j, k - 1])
                                  + B[i, j, k])


OUTPUTS = ["A"]
