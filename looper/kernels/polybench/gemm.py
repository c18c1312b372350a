"""gemm: C = alpha*A*B + beta*C (PolyBench 4.2.1, linear-algebra/blas)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(NI=20, NJ=25, NK=30),
    "SMALL": dict(NI=60, NJ=70, NK=80),
    "MEDIUM": dict(NI=200, NJ=220, NK=240),
    "LARGE": dict(NI=1000, NJ=1100, NK=1200),
    "EXTRALARGE": dict(NI=2000, NJ=2300, NK=2600),
}


def init(NI: int, NJ: int, NK: int, alpha: f64, beta: f64,
         C: f64[NI, NJ], A: f64[NI, NK], B: f64[NK, NJ]):
    alpha = 1.5
    beta = 1.2
    for i in range(NI):
        for j in range(NJ):
            C[i, j] = f64((i * j + 1) % NI) / NI
    for i in range(NI):
        for j in range(NK):
            A[i, j] = f64(i * (j + 1) % NK) / NK
    for i in range(NK):
        for j in range(NJ):
            B[i, j] = f64(i * (j + 2) % NJ) / NJ


def kernel(NI: int, NJ: int, NK: int, alpha: f64, beta: f64,
           C: f64[NI, NJ], A: f64[NI, NK], B: f64[NK, NJ]):
    for i in range(NI):
        for j in range(NJ):
            C[i, j] *= beta
        for k in range(NK):
            for j in range(NJ):
                C[i, j] += alpha * A[i, k] * B[k, j]


OUTPUTS = ["C"]
