"""blur2: a separable 3x3 box blur in two nests (rows, then columns), repeated T times."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(T=2, N=32),
    "SMALL": dict(T=4, N=256),
    "MEDIUM": dict(T=10, N=1000),
    "LARGE": dict(T=20, N=4000),
}


def init(T: int, N: int, A: f64[N, N], B: f64[N, N]):
    for i in range(N):
        for j in range(N):
            A[i, j] = f64((i * 7 + j * 13) % 101) / 101.0
            B[i, j] = 0.0


def kernel(T: int, N: int, A: f64[N, N], B: f64[N, N]):
    for t in range(T):
        for i in range(N):
            for j in range(1, N - 1):
                B[i, j] = (A[i, j - 1] + A[i, j] + A[i, j + 1]) / 3.0
        for i in range(1, N - 1):
            for j in range(N):
                A[i, j] = (B[i - 1, j] + B[i, j] + B[i + 1, j]) / 3.0


OUTPUTS = ["A", "B"]
