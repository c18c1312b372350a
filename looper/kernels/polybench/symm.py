"""symm: C = alpha*A*B + beta*C, A symmetric (PolyBench 4.2.1, linear-algebra/blas)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(M=20, N=30),
    "SMALL": dict(M=60, N=80),
    "MEDIUM": dict(M=200, N=240),
    "LARGE": dict(M=1000, N=1200),
    "EXTRALARGE": dict(M=2000, N=2600),
}


def init(M: int, N: int, alpha: f64, beta: f64,
         C: f64[M, N], A: f64[M, M], B: f64[M, N]):
    alpha = 1.5
    beta = 1.2
    for i in range(M):
        for j in range(N):
            C[i, j] = f64((i + j) % 100) / M
            B[i, j] = f64((N + i - j) % 100) / M
    for i in range(M):
        for j in range(i + 1):
            A[i, j] = f64((i + j) % 100) / M
        for j in range(i + 1, M):
            A[i, j] = -999.0


def kernel(M: int, N: int, alpha: f64, beta: f64,
           C: f64[M, N], A: f64[M, M], B: f64[M, N]):
    for i in range(M):
        for j in range(N):
            temp2: f64 = 0.0
            for k in range(i):
                C[k, j] += alpha * B[i, j] * A[i, k]
                temp2 += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2


OUTPUTS = ["C"]
