"""2mm: D = alpha*A*B*C + beta*D (PolyBench 4.2.1, linear-algebra/kernels)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(NI=16, NJ=18, NK=22, NL=24),
    "SMALL": dict(NI=40, NJ=50, NK=70, NL=80),
    "MEDIUM": dict(NI=180, NJ=190, NK=210, NL=220),
    "LARGE": dict(NI=800, NJ=900, NK=1100, NL=1200),
    "EXTRALARGE": dict(NI=1600, NJ=1800, NK=2200, NL=2400),
}


def init(NI: int, NJ: int, NK: int, NL: int, alpha: f64, beta: f64,
         A: f64[NI, NK], B: f64[NK, NJ], C: f64[NJ, NL], D: f64[NI, NL]):
    alpha = 1.5
    beta = 1.2
    for i in range(NI):
        for j in range(NK):
            A[i, j] = f64((i * j + 1) % NI) / NI
    for i in range(NK):
        for j in range(NJ):
            B[i, j] = f64(i * (j + 1) % NJ) / NJ
    for i in range(NJ):
        for j in range(NL):
            C[i, j] = f64((i * (j + 3) + 1) % NL) / NL
    for i in range(NI):
        for j in range(NL):
            D[i, j] = f64(i * (j + 2) % NK) / NK


def kernel(NI: int, NJ: int, NK: int, NL: int, alpha: f64, beta: f64,
           tmp: f64[NI, NJ], A: f64[NI, NK], B: f64[NK, NJ], C: f64[NJ, NL], D: f64[NI, NL]):
    for i in range(NI):
        for j in range(NJ):
            tmp[i, j] = 0.0
            for k in range(NK):
                tmp[i, j] += alpha * A[i, k] * B[k, j]
    for i in range(NI):
        for j in range(NL):
            D[i, j] *= beta
            for k in range(NJ):
                D[i, j] += tmp[i, k] * C[k, j]


OUTPUTS = ["D"]
