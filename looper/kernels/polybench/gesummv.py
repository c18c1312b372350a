"""gesummv: y = alpha*A*x + beta*B*x (PolyBench 4.2.1, linear-algebra/blas)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(N=30),
    "SMALL": dict(N=90),
    "MEDIUM": dict(N=250),
    "LARGE": dict(N=1300),
    "EXTRALARGE": dict(N=2800),
}


def init(N: int, alpha: f64, beta: f64, A: f64[N, N], B: f64[N, N], x: f64[N]):
    alpha = 1.5
    beta = 1.2
    for i in range(N):
        x[i] = f64(i % N) / N
        for j in range(N):
            A[i, j] = f64((i * j + 1) % N) / N
            B[i, j] = f64((i * j + 2) % N) / N


def kernel(N: int, alpha: f64, beta: f64, A: f64[N, N], B: f64[N, N],
           tmp: f64[N], x: f64[N], y: f64[N]):
    for i in range(N):
        tmp[i] = 0.0
        y[i] = 0.0
        for j in range(N):
            tmp[i] = A[i, j] * x[j] + tmp[i]
            y[i] = B[i, j] * x[j] + y[i]
        y[i] = alpha * tmp[i] + beta * y[i]


OUTPUTS = ["y"]
