"""syrk: C = alpha*A*A^T + beta*C, lower triangle (PolyBench 4.2.1, linear-algebra/blas)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(M=20, N=30),
    "SMALL": dict(M=60, N=80),
    "MEDIUM": dict(M=200, N=240),
    "LARGE": dict(M=1000, N=1200),
    "EXTRALARGE": dict(M=2000, N=2600),
}


def init(N: int, M: int, alpha: f64, beta: f64, C: f64[N, N], A: f64[N, M]):
    alpha = 1.5
    beta = 1.2
    for i in range(N):
        for j in range(M):
            A[i, j] = f64((i * j + 1) % N) / N
    for i in range(N):
        for j in range(N):
            C[i, j] = f64((i * j + 2) % M) / M


def kernel(N: int, M: int, alpha: f64, beta: f64, C: f64[N, N], A: f64[N, M]):
    for i in range(N):
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(M):
            for j in range(i + 1):
                C[i, j] += alpha * A[i, k] * A[j, k]


OUTPUTS = ["C"]
