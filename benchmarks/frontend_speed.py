"""Time looper's front end per PolyBench kernel: parse + dependences + C generation (no gcc).

    python benchmarks/frontend_speed.py [--size LARGE] [--repeat 5]

Prints one row per kernel (median over repeats, milliseconds) and the median / maximum of the
totals.  Each repeat starts from the source text, so nothing is cached between repeats.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from looper.codegen.harness import program_c
from looper.kernels import polybench_dir
from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.ir.schedule import original

KERNELS = polybench_dir()


def measure(path: Path, size: str) -> tuple[float, float, float]:
    t0 = time.perf_counter()
    program = parse_file(path, size)
    t1 = time.perf_counter()
    compute_dependences(program)
    t2 = time.perf_counter()
    program_c(program, [original(program)])
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="LARGE")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    totals = []
    print(f"{'kernel':16} {'parse':>8} {'deps':>8} {'codegen':>8} {'total':>8}   (ms, median of {args.repeat})")
    for path in sorted(KERNELS.glob("*.py")):
        runs = [measure(path, args.size) for _ in range(args.repeat)]
        med = [statistics.median(r[k] for r in runs) * 1e3 for k in range(3)]
        total = statistics.median(sum(r) for r in runs) * 1e3
        totals.append((total, path.stem))
        print(f"{path.stem:16} {med[0]:8.1f} {med[1]:8.1f} {med[2]:8.1f} {total:8.1f}")
    ts = [t for t, _ in totals]
    worst = max(totals)
    print(f"\nmedian total {statistics.median(ts):.1f} ms; maximum {worst[0]:.1f} ms ({worst[1]})")


if __name__ == "__main__":
    main()
