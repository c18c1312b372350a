"""gramschmidt: A = Q*R by modified Gram-Schmidt (PolyBench 4.2.1, linear-algebra/solvers)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(M=20, N=30),
    "SMALL": dict(M=60, N=80),
    "MEDIUM": dict(M=200, N=240),
    "LARGE": dict(M=1000, N=1200),
    "EXTRALARGE": dict(M=2000, N=2600),
}


def init(M: int, N: int, A: f64[M, N], R: f64[N, N], Q: f64[M, N]):
    for i in range(M):
        for j in range(N):
            A[i, j] = ((f64(i * j % M) / M) * 100) + 10
            Q[i, j] = 0.0
    for i in range(N):
        for j in range(N):
            R[i, j] = 0.0


def kernel(M: int, N: int, A: f64[M, N], R: f64[N, N], Q: f64[M, N]):
    for k in range(N):
        nrm: f64 = 0.0
        for i in range(M):
            nrm += A[i, k] * A[i, k]
        R[k, k] = sqrt(nrm)
        for i in range(M):
            Q[i, k] = A[i, k] / R[k, k]
        for j in range(k + 1, N):
            R[k, j] = 0.0
            for i in range(M):
                R[k, j] += Q[i, k] * A[i, j]
            for i in range(M):
                A[i, j] = A[i, j] - Q[i, k] * R[k, j]


OUTPUTS = ["R", "Q"]
