"""ludcmp: LU decomposition, then forward and back substitution for A*x = b (PolyBench 4.2.1, linear-algebra/solvers)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(N=40),
    "SMALL": dict(N=120),
    "MEDIUM": dict(N=400),
    "LARGE": dict(N=2000),
    "EXTRALARGE": dict(N=4000),
}


def init(N: int, A: f64[N, N], b: f64[N], x: f64[N], y: f64[N], B: f64[N, N]):
    fn: f64 = f64(N)
    for i in range(N):
        x[i] = 0.0
        y[i] = 0.0
        b[i] = (i + 1) / fn / 2.0 + 4
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


def kernel(N: int, A: f64[N, N], b: f64[N], x: f64[N], y: f64[N]):
    for i in range(N):
        for j in range(i):
            w: f64 = A[i, j]
            for k in range(j):
                w -= A[i, k] * A[k, j]
            A[i, j] = w / A[j, j]
        for j in range(i, N):
            w = A[i, j]
            for k in range(i):
                w -= A[i, k] * A[k, j]
            A[i, j] = w
    for i in range(N):
        w = b[i]
        for j in range(i):
            w -= A[i, j] * y[j]
        y[i] = w
    for i in range(N - 1, -1, -1):
        w = y[i]
        for j in range(i + 1, N):
            w -= A[i, j] * x[j]
        x[i] = w / A[i, i]


OUTPUTS = ["x"]
