"""3mm: G = (A*B)*(C*D) (PolyBench 4.2.1, linear-algebra/kernels)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(NI=16, NJ=18, NK=20, NL=22, NM=24),
    "SMALL": dict(NI=40, NJ=50, NK=60, NL=70, NM=80),
    "MEDIUM": dict(NI=180, NJ=190, NK=200, NL=210, NM=220),
    "LARGE": dict(NI=800, NJ=900, NK=1000, NL=1100, NM=1200),
    "EXTRALARGE": dict(NI=1600, NJ=1800, NK=2000, NL=2200, NM=2400),
}


def init(NI: int, NJ: int, NK: int, NL: int, NM: int,
         A: f64[NI, NK], B: f64[NK, NJ], C: f64[NJ, NM], D: f64[NM, NL]):
    for i in range(NI):
        for j in range(NK):
            A[i, j] = f64((i * j + 1) % NI) / (5 * NI)
    for i in range(NK):
        for j in range(NJ):
            B[i, j] = f64((i * (j + 1) + 2) % NJ) / (5 * NJ)
    for i in range(NJ):
        for j in range(NM):
            C[i, j] = f64(i * (j + 3) % NL) / (5 * NL)
    for i in range(NM):
        for j in range(NL):
            D[i, j] = f64((i * (j + 2) + 2) % NK) / (5 * NK)


def kernel(NI: int, NJ: int, NK: int, NL: int, NM: int,
           E: f64[NI, NJ], A: f64[NI, NK], B: f64[NK, NJ], F: f64[NJ, NL],
           C: f64[NJ, NM], D: f64[NM, NL], G: f64[NI, NL]):
    for i in range(NI):
        for j in range(NJ):
            E[i, j] = 0.0
            for k in range(NK):
                E[i, j] += A[i, k] * B[k, j]
    for i in range(NJ):
        for j in range(NL):
            F[i, j] = 0.0
            for k in range(NM):
                F[i, j] += C[i, k] * D[k, j]
    for i in range(NI):
        for j in range(NL):
            G[i, j] = 0.0
            for k in range(NJ):
                G[i, j] += E[i, k] * F[k, j]


OUTPUTS = ["G"]
