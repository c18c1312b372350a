"""deriche: Deriche recursive edge-detection filter on a 2-D image (PolyBench 4.2.1, medley)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(W=64, H=64),
    "SMALL": dict(W=192, H=128),
    "MEDIUM": dict(W=720, H=480),
    "LARGE": dict(W=4096, H=2160),
    "EXTRALARGE": dict(W=7680, H=4320),
}


def init(W: int, H: int, alpha: f32, imgIn: f32[W, H], imgOut: f32[W, H]):
    alpha = 0.25
    for i in range(W):
        for j in range(H):
            imgIn[i, j] = f32((313 * i + 991 * j) % 65536) / 65535.0


def kernel(W: int, H: int, alpha: f32, imgIn: f32[W, H], imgOut: f32[W, H],
           y1: f32[W, H], y2: f32[W, H]):
    k: f32 = (1.0 - exp(-alpha)) * (1.0 - exp(-alpha)) / (1.0 + 2.0 * alpha * exp(-alpha) - exp(2.0 * alpha))
    a5: f32 = k
    a1: f32 = a5
    a6: f32 = k * exp(-alpha) * (alpha - 1.0)
    a2: f32 = a6
    a7: f32 = k * exp(-alpha) * (alpha + 1.0)
    a3: f32 = a7
    a8: f32 = -k * exp(-2.0 * alpha)
    a4: f32 = a8
    b1: f32 = pow(2.0, -alpha)
    b2: f32 = -exp(-2.0 * alpha)
    c2: f32 = 1.0
    c1: f32 = c2

    for i in range(W):
        ym1: f32 = 0.0
        ym2: f32 = 0.0
        xm1: f32 = 0.0
        for j in range(H):
            y1[i, j] = a1 * imgIn[i, j] + a2 * xm1 + b1 * ym1 + b2 * ym2
            xm1 = imgIn[i, j]
            ym2 = ym1
            ym1 = y1[i, j]

    for i in range(W):
        yp1: f32 = 0.0
        yp2: f32 = 0.0
        xp1: f32 = 0.0
        xp2: f32 = 0.0
        for j in range(H - 1, -1, -1):
            y2[i, j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2
            xp2 = xp1
            xp1 = imgIn[i, j]
            yp2 = yp1
            yp1 = y2[i, j]

    for i in range(W):
        for j in range(H):
            imgOut[i, j] = c1 * (y1[i, j] + y2[i, j])

    for j in range(H):
        tm1: f32 = 0.0
        ym1 = 0.0
        ym2 = 0.0
        for i in range(W):
            y1[i, j] = a5 * imgOut[i, j] + a6 * tm1 + b1 * ym1 + b2 * ym2
            tm1 = imgOut[i, j]
            ym2 = ym1
            ym1 = y1[i, j]

    for j in range(H):
        tp1: f32 = 0.0
        tp2: f32 = 0.0
        yp1 = 0.0
        yp2 = 0.0
        for i in range(W - 1, -1, -1):
            y2[i, j] = a7 * tp1 + a8 * tp2 + b1 * yp1 + b2 * yp2
            tp2 = tp1
            tp1 = imgOut[i, j]
            yp2 = yp1
            yp1 = y2[i, j]

    for i in range(W):
        for j in range(H):
            imgOut[i, j] = c2 * (y1[i, j] + y2[i, j])


OUTPUTS = ["imgOut"]
