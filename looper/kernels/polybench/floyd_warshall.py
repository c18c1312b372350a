"""floyd-warshall: all-pairs shortest path lengths in a weighted graph (PolyBench 4.2.1, medley)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(N=60),
    "SMALL": dict(N=180),
    "MEDIUM": dict(N=500),
    "LARGE": dict(N=2800),
    "EXTRALARGE": dict(N=5600),
}


def init(N: int, path: i32[N, N]):
    for i in range(N):
        for j in range(N):
            path[i, j] = i * j % 7 + 1
            path[i, j] = 999 if (i + j) % 13 == 0 or (i + j) % 7 == 0 or (i + j) % 11 == 0 else path[i, j]


def kernel(N: int, path: i32[N, N]):
    for k in range(N):
        for i in range(N):
            for j in range(N):
                path[i, j] = path[i, j] if path[i, j] < path[i, k] + path[k, j] else path[i, k] + path[k, j]


OUTPUTS = ["path"]
