"""nussinov: RNA secondary structure by base-pair maximization, dynamic programming (PolyBench 4.2.1, medley)."""
from looper.lang import *  # noqa: F401,F403  (for editors only; looper never imports this file)

SIZES = {
    "MINI": dict(N=60),
    "SMALL": dict(N=180),
    "MEDIUM": dict(N=500),
    "LARGE": dict(N=2500),
    "EXTRALARGE": dict(N=5500),
}


def init(N: int, seq: i8[N], table: i32[N, N]):
    for i in range(N):
        seq[i] = i8((i + 1) % 4)
    for i in range(N):
        for j in range(N):
            table[i, j] = 0


def kernel(N: int, seq: i8[N], table: i32[N, N]):
    for i in range(N - 1, -1, -1):
        for j in range(i + 1, N):
            if j - 1 >= 0:
                table[i, j] = max(table[i, j], table[i, j - 1])
            if i + 1 < N:
                table[i, j] = max(table[i, j], table[i + 1, j])
            if j - 1 >= 0 and i + 1 < N:
                if i < j - 1:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1] + (1 if seq[i] + seq[j] == 3 else 0))
                else:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1])
            for k in range(i + 1, j):
                table[i, j] = max(table[i, j], table[i, k] + table[k + 1, j])


OUTPUTS = [("table", "upper")]
