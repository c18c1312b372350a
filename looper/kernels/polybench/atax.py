"""atax: y = A^T*(A*x) (PolyBench 4.2.1, linear-algebra/kernels)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(M=38, N=42),
    "SMALL": dict(M=116, N=124),
    "MEDIUM": dict(M=390, N=410),
    "LARGE": dict(M=1900, N=2100),
    "EXTRALARGE": dict(M=1800, N=2200),
}


def init(M: int, N: int, A: f64[M, N], x: f64[N]):
    fn: f64 = f64(N)
    for i in range(N):
        x[i] = 1 + (i / fn)
    for i in range(M):
        for j in range(N):
            A[i, j] = f64((i + j) % N) / (5 * M)


def kernel(M: int, N: int, A: f64[M, N], x: f64[N], y: f64[N], tmp: f64[M]):
    for i in range(N):
        y[i] = 0.0
    for i in range(M):
        tmp[i] = 0.0
        for j in range(N):
            tmp[i] = tmp[i] + A[i, j] * x[j]
        for j in range(N):
            y[j] = y[j] + A[i, j] * tmp[i]


OUTPUTS = ["y"]
