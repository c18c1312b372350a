"""mvt: x1 = x1 + A*y_1, x2 = x2 + A^T*y_2 (PolyBench 4.2.1, linear-algebra/kernels)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(N=40),
    "SMALL": dict(N=120),
    "MEDIUM": dict(N=400),
    "LARGE": dict(N=2000),
    "EXTRALARGE": dict(N=4000),
}


def init(N: int, x1: f64[N], x2: f64[N], y_1: f64[N], y_2: f64[N], A: f64[N, N]):
    for i in range(N):
        x1[i] = f64(i % N) / N
        x2[i] = f64((i + 1) % N) / N
        y_1[i] = f64((i + 3) % N) / N
        y_2[i] = f64((i + 4) % N) / N
        for j in range(N):
            A[i, j] = f64(i * j % N) / N


def kernel(N: int, x1: f64[N], x2: f64[N], y_1: f64[N], y_2: f64[N], A: f64[N, N]):
    for i in range(N):
        for j in range(N):
            x1[i] = x1[i] + A[i, j] * y_1[j]
    for i in range(N):
        for j in range(N):
            x2[i] = x2[i] + A[j, i] * y_2[j]


OUTPUTS = ["x1", "x2"]
