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
    # PolyBench's B = A * A^T runs t, r, s over the whole square.  A is lower triangular with
    # positive entries, so the terms with t > r or t > s are +0.0 and leave B bitwise as it is;
    # this order skips them and keeps t increasing for every B[r, s] (the same sums, rounded the
    # same way), in an eighth of the time (LARGE: 5 s instead of 43 s per run, paid by every check
    # and every timing process of these kernels).
    for r in range(N):
        for t in range(r + 1):
            for s in range(t, N):
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
