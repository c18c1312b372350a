"""correlation: correlation matrix of the columns of a data matrix (PolyBench 4.2.1, datamining)."""
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
            data[i, j] = f64(i * j) / M + i


def kernel(M: int, N: int, float_n: f64, data: f64[N, M], corr: f64[M, M],
           mean: f64[M], stddev: f64[M]):
    eps: f64 = 0.1
    for j in range(M):
        mean[j] = 0.0
        for i in range(N):
            mean[j] += data[i, j]
        mean[j] /= float_n
    for j in range(M):
        stddev[j] = 0.0
        for i in range(N):
            stddev[j] += (data[i, j] - mean[j]) * (data[i, j] - mean[j])
        stddev[j] /= float_n
        stddev[j] = sqrt(stddev[j])
        stddev[j] = 1.0 if stddev[j] <= eps else stddev[j]
    for i in range(N):
        for j in range(M):
            data[i, j] -= mean[j]
            data[i, j] /= sqrt(float_n) * stddev[j]
    for i in range(M - 1):
        corr[i, i] = 1.0
        for j in range(i + 1, M):
            corr[i, j] = 0.0
            for k in range(N):
                corr[i, j] += data[k, i] * data[k, j]
            corr[j, i] = corr[i, j]
    corr[M - 1, M - 1] = 1.0


OUTPUTS = ["corr"]
