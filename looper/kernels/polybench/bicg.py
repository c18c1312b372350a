"""bicg: BiCG sub-kernel s = A^T*r, q = A*p (PolyBench 4.2.1, linear-algebra/kernels)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(M=38, N=42),
    "SMALL": dict(M=116, N=124),
    "MEDIUM": dict(M=390, N=410),
    "LARGE": dict(M=1900, N=2100),
    "EXTRALARGE": dict(M=1800, N=2200),
}


def init(M: int, N: int, A: f64[N, M], r: f64[N], p: f64[M]):
    for i in range(M):
        p[i] = f64(i % M) / M
    for i in range(N):
        r[i] = f64(i % N) / N
        for j in range(M):
            A[i, j] = f64(i * (j + 1) % N) / N


def kernel(M: int, N: int, A: f64[N, M], s: f64[M], q: f64[N], p: f64[M], r: f64[N]):
    for i in range(M):
        s[i] = 0.0
    for i in range(N):
        q[i] = 0.0
        for j in range(M):
            s[j] = s[j] + r[i] * A[i, j]
            q[i] = q[i] + A[i, j] * p[j]


OUTPUTS = ["s", "q"]
