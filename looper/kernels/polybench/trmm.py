"""trmm: B = alpha*A^T*B with A unit lower triangular (PolyBench 4.2.1, linear-algebra/blas)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(M=20, N=30),
    "SMALL": dict(M=60, N=80),
    "MEDIUM": dict(M=200, N=240),
    "LARGE": dict(M=1000, N=1200),
    "EXTRALARGE": dict(M=2000, N=2600),
}


def init(M: int, N: int, alpha: f64, A: f64[M, M], B: f64[M, N]):
    alpha = 1.5
    for i in range(M):
        for j in range(i):
            A[i, j] = f64((i + j) % M) / M
        A[i, i] = 1.0
        for j in range(N):
            B[i, j] = f64((N + (i - j)) % N) / N


def kernel(M: int, N: int, alpha: f64, A: f64[M, M], B: f64[M, N]):
    for i in range(M):
        for j in range(N):
            for k in range(i + 1, M):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = alpha * B[i, j]


OUTPUTS = ["B"]
