"""gemver: vector multiply and matrix addition (PolyBench 4.2.1, linear-algebra/blas)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(N=40),
    "SMALL": dict(N=120),
    "MEDIUM": dict(N=400),
    "LARGE": dict(N=2000),
    "EXTRALARGE": dict(N=4000),
}


def init(N: int, alpha: f64, beta: f64, A: f64[N, N],
         u1: f64[N], v1: f64[N], u2: f64[N], v2: f64[N],
         w: f64[N], x: f64[N], y: f64[N], z: f64[N]):
    alpha = 1.5
    beta = 1.2
    fn: f64 = f64(N)
    for i in range(N):
        u1[i] = f64(i)
        u2[i] = ((i + 1) / fn) / 2.0
        v1[i] = ((i + 1) / fn) / 4.0
        v2[i] = ((i + 1) / fn) / 6.0
        y[i] = ((i + 1) / fn) / 8.0
        z[i] = ((i + 1) / fn) / 9.0
        x[i] = 0.0
        w[i] = 0.0
        for j in range(N):
            A[i, j] = f64(i * j % N) / N


def kernel(N: int, alpha: f64, beta: f64, A: f64[N, N],
           u1: f64[N], v1: f64[N], u2: f64[N], v2: f64[N],
           w: f64[N], x: f64[N], y: f64[N], z: f64[N]):
    for i in range(N):
        for j in range(N):
            A[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
    for i in range(N):
        for j in range(N):
            x[i] = x[i] + beta * A[j, i] * y[j]
    for i in range(N):
        x[i] = x[i] + z[i]
    for i in range(N):
        for j in range(N):
            w[i] = w[i] + alpha * A[i, j] * x[j]


OUTPUTS = ["w"]
