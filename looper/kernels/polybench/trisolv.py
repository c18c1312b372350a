"""trisolv: triangular solver, forward substitution L*x = b (PolyBench 4.2.1, linear-algebra/solvers)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(N=40),
    "SMALL": dict(N=120),
    "MEDIUM": dict(N=400),
    "LARGE": dict(N=2000),
    "EXTRALARGE": dict(N=4000),
}


def init(N: int, L: f64[N, N], x: f64[N], b: f64[N]):
    for i in range(N):
        x[i] = -999.0
        b[i] = f64(i)
        for j in range(i + 1):
            L[i, j] = f64(i + N - j + 1) * 2 / N


def kernel(N: int, L: f64[N, N], x: f64[N], b: f64[N]):
    for i in range(N):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i, j] * x[j]
        x[i] = x[i] / L[i, i]


OUTPUTS = ["x"]
