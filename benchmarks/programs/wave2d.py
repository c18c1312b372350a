"""wave2d: a 2-D wave equation (leapfrog, 5-point Laplacian) stepped T times in three nests."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(T=4, N=32),
    "SMALL": dict(T=10, N=200),
    "MEDIUM": dict(T=20, N=800),
    "LARGE": dict(T=40, N=3000),
}


def init(T: int, N: int, U: f64[N, N], V: f64[N, N], W: f64[N, N]):
    for i in range(N):
        for j in range(N):
            U[i, j] = f64((i * 7 + j * 3) % 11) / 11.0
            V[i, j] = f64((i + 2 * j) % 5) / 5.0
            W[i, j] = 0.0


def kernel(T: int, N: int, U: f64[N, N], V: f64[N, N], W: f64[N, N]):
    for t in range(T):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                W[i, j] = 2.0 * U[i, j] - V[i, j] + 0.1 * (U[i - 1, j] + U[i + 1, j] + U[i, j - 1] + U[i, j + 1] - 4.0 * U[i, j])
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                V[i, j] = U[i, j]
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                U[i, j] = W[i, j]


OUTPUTS = ["U", "V"]
