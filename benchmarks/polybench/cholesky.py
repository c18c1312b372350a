"""cholesky: Cholesky decomposition A = L*L^T (PolyBench 4.2.1, linear-algebra/solvers)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(N=40),
    "SMALL": dict(N=120),
    "MEDIUM": dict(N=400),
    "LARGE": dict(N=2000),
    "EXTRALARGE": dict(N=4000),
}


def init(N: int, A: f64[N, N], B: f64[N, N]):
    for i in range(N):
        for j in range(i + 1):
            A[i, j] = -f64(j) / N + 1
        for j in range(i + 1, N):
            A[i, j] = 0.0
        A[i, i] = 1.0
    for r in range(N):
        for s in range(N):
            B[r, s] = 0.0
    for t in range(N):
        for r in range(N):
            for s in range(N):
                B[r, s] += A[r, t] * A[s, t]
    for r in range(N):
        for s in range(N):
            A[r, s] = B[r, s]


def kernel(N: int, A: f64[N, N]):
    for i in range(N):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[j, k]
            A[i, j] /= A[j, j]
        for k in range(i):
            A[i, i] -= A[i, k] * A[i, k]
        A[i, i] = sqrt(A[i, i])


OUTPUTS = [("A", "lower")]
