"""adi: alternating direction implicit solver for 2-D heat diffusion (PolyBench 4.2.1, stencils)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(TSTEPS=20, N=20),
    "SMALL": dict(TSTEPS=40, N=60),
    "MEDIUM": dict(TSTEPS=100, N=200),
    "LARGE": dict(TSTEPS=500, N=1000),
    "EXTRALARGE": dict(TSTEPS=1000, N=2000),
}


def init(N: int, u: f64[N, N]):
    for i in range(N):
        for j in range(N):
            u[i, j] = f64(i + N - j) / N


def kernel(TSTEPS: int, N: int, u: f64[N, N], v: f64[N, N], p: f64[N, N], q: f64[N, N]):
    DX: f64 = 1.0 / f64(N)
    DY: f64 = 1.0 / f64(N)
    DT: f64 = 1.0 / f64(TSTEPS)
    B1: f64 = 2.0
    B2: f64 = 1.0
    mul1: f64 = B1 * DT / (DX * DX)
    mul2: f64 = B2 * DT / (DY * DY)

    a: f64 = -mul1 / 2.0
    b: f64 = 1.0 + mul1
    c: f64 = a
    d: f64 = -mul2 / 2.0
    e: f64 = 1.0 + mul2
    f: f64 = d

    for t in range(1, TSTEPS + 1):
        # Column Sweep
        for i in range(1, N - 1):
            v[0, i] = 1.0
            p[i, 0] = 0.0
            q[i, 0] = v[0, i]
            for j in range(1, N - 1):
                p[i, j] = -c / (a * p[i, j - 1] + b)
                q[i, j] = (-d * u[j, i - 1] + (1.0 + 2.0 * d) * u[j, i] - f * u[j, i + 1] - a * q[i, j - 1]) / (a * p[i, j - 1] + b)
            v[N - 1, i] = 1.0
            for j in range(N - 2, 0, -1):
                v[j, i] = p[i, j] * v[j + 1, i] + q[i, j]
        # Row Sweep
        for i in range(1, N - 1):
            u[i, 0] = 1.0
            p[i, 0] = 0.0
            q[i, 0] = u[i, 0]
            for j in range(1, N - 1):
                p[i, j] = -f / (d * p[i, j - 1] + e)
                q[i, j] = (-a * v[i - 1, j] + (1.0 + 2.0 * a) * v[i, j] - c * v[i + 1, j] - d * q[i, j - 1]) / (d * p[i, j - 1] + e)
            u[i, N - 1] = 1.0
            for j in range(N - 2, 0, -1):
                u[i, j] = p[i, j] * u[i, j + 1] + q[i, j]


OUTPUTS = ["u"]
