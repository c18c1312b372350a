"""fdtd-2d: 2-D finite-difference time-domain electromagnetic field update (PolyBench 4.2.1, stencils)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(TMAX=20, NX=20, NY=30),
    "SMALL": dict(TMAX=40, NX=60, NY=80),
    "MEDIUM": dict(TMAX=100, NX=200, NY=240),
    "LARGE": dict(TMAX=500, NX=1000, NY=1200),
    "EXTRALARGE": dict(TMAX=1000, NX=2000, NY=2600),
}


def init(TMAX: int, NX: int, NY: int, ex: f64[NX, NY], ey: f64[NX, NY], hz: f64[NX, NY],
         _fict_: f64[TMAX]):
    for i in range(TMAX):
        _fict_[i] = f64(i)
    for i in range(NX):
        for j in range(NY):
            ex[i, j] = f64(i) * (j + 1) / NX
            ey[i, j] = f64(i) * (j + 2) / NY
            hz[i, j] = f64(i) * (j + 3) / NX


def kernel(TMAX: int, NX: int, NY: int, ex: f64[NX, NY], ey: f64[NX, NY], hz: f64[NX, NY],
           _fict_: f64[TMAX]):
    for t in range(TMAX):
        for j in range(NY):
            ey[0, j] = _fict_[t]
        for i in range(1, NX):
            for j in range(NY):
                ey[i, j] = ey[i, j] - 0.5 * (hz[i, j] - hz[i - 1, j])
        for i in range(NX):
            for j in range(1, NY):
                ex[i, j] = ex[i, j] - 0.5 * (hz[i, j] - hz[i, j - 1])
        for i in range(NX - 1):
            for j in range(NY - 1):
                hz[i, j] = hz[i, j] - 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])


OUTPUTS = ["ex", "ey", "hz"]
