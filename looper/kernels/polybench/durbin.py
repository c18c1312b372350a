"""durbin: Levinson-Durbin Toeplitz system solver (PolyBench 4.2.1, linear-algebra/solvers)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(N=40),
    "SMALL": dict(N=120),
    "MEDIUM": dict(N=400),
    "LARGE": dict(N=2000),
    "EXTRALARGE": dict(N=4000),
}


def init(N: int, r: f64[N]):
    for i in range(N):
        r[i] = f64(N + 1 - i)


def kernel(N: int, r: f64[N], y: f64[N], z: f64[N]):
    y[0] = -r[0]
    beta: f64 = 1.0
    alpha: f64 = -r[0]
    for k in range(1, N):
        beta = (1 - alpha * alpha) * beta
        sum: f64 = 0.0
        for i in range(k):
            sum += r[k - i - 1] * y[i]
        alpha = -(r[k] + sum) / beta
        for i in range(k):
            z[i] = y[i] + alpha * y[k - i - 1]
        for i in range(k):
            y[i] = z[i]
        y[k] = alpha


OUTPUTS = ["y"]
