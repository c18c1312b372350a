"""doitgen: A[r, q, :] = A[r, q, :]*C4 (PolyBench 4.2.1, linear-algebra/kernels)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(NQ=8, NR=10, NP=12),
    "SMALL": dict(NQ=20, NR=25, NP=30),
    "MEDIUM": dict(NQ=40, NR=50, NP=60),
    "LARGE": dict(NQ=140, NR=150, NP=160),
    "EXTRALARGE": dict(NQ=220, NR=250, NP=270),
}


def init(NR: int, NQ: int, NP: int, A: f64[NR, NQ, NP], C4: f64[NP, NP]):
    for i in range(NR):
        for j in range(NQ):
            for k in range(NP):
                A[i, j, k] = f64((i * j + k) % NP) / NP
    for i in range(NP):
        for j in range(NP):
            C4[i, j] = f64(i * j % NP) / NP


def kernel(NR: int, NQ: int, NP: int, A: f64[NR, NQ, NP], C4: f64[NP, NP], sum: f64[NP]):
    for r in range(NR):
        for q in range(NQ):
            for p in range(NP):
                sum[p] = 0.0
                for s in range(NP):
                    sum[p] += A[r, q, s] * C4[s, p]
            for p in range(NP):
                A[r, q, p] = sum[p]


OUTPUTS = ["A"]
