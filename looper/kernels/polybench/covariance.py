"""covariance: covariance matrix of the columns of a data matrix (PolyBench 4.2.1, datamining)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(M=28, N=32),
    "SMALL": dict(M=80, N=100),
    "MEDIUM": dict(M=240, N=260),
    "LARGE": dict(M=1200, N=1400),
    "EXTRALARGE": dict(M=2600, N=3000),
}


def init(M: int, N: int, float_n: f64, data: f64[N, M]):
    float_n = f64(N)
    for i in range(N):
        for j in range(M):
            data[i, j] = f64(i) * j / M


def kernel(M: int, N: int, float_n: f64, data: f64[N, M], cov: f64[M, M], mean: f64[M]):
    for j in range(M):
        mean[j] = 0.0
        for i in range(N):
            mean[j] += data[i, j]
        mean[j] /= float_n
    for i in range(N):
        for j in range(M):
            data[i, j] -= mean[j]
    for i in range(M):
        for j in range(i, M):
            cov[i, j] = 0.0
            for k in range(N):
                cov[i, j] += data[k, i] * data[k, j]
            cov[i, j] /= (float_n - 1.0)
            cov[j, i] = cov[i, j]


OUTPUTS = ["cov"]
