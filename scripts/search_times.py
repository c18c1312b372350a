"""How long the cost model's search takes on each PolyBench kernel, and what it picks.

    python scripts/search_times.py --size MEDIUM --out times.jsonl [KERNEL ...]
    python scripts/search_times.py --compare before.jsonl after.jsonl

Runs `looper optimize --evaluator model` in this process on PolyBench/C's own file of each kernel
(in place, with the bench's defines), without the speed guard and without verification: the
search alone, which compiles nothing, as issue 43's "search <= 10 s a kernel" counts it.  One
JSON line per kernel: the kernel, the wall seconds of the whole `optimize` call (parsing
included) and the sequence picked.  `--compare` prints both files' seconds side by side and
every kernel whose pick differs: a change that only makes the search faster must pick the same.
Run it on an idle machine: the seconds are wall time.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def measure(size: str, out: Path, kernels: list[str], polybench_c: str | None) -> None:
    from looper.api import optimize
    from looper.bench import native
    from looper.bench.polybench import TIMED_DEFINES
    from looper.kernels import polybench_names
    from looper.tune.options import Evaluator, TuneOptions

    tree = native.PolyBenchC.find(polybench_c)
    options = TuneOptions(evaluator=Evaluator("model"), verify=False, speed_guard=False)
    with out.open("a") as f:
        for name in kernels or polybench_names():
            t0 = time.perf_counter()
            done = optimize(str(tree.kernel(name)), size, defines=list(TIMED_DEFINES),
                            includes=[str(tree.utilities)], options=options)
            seconds = time.perf_counter() - t0
            [k] = done.kernels
            row = {"kernel": name, "size": size, "seconds": round(seconds, 2), "sequence": k.sequence}
            print(f"{name:16} {seconds:7.2f} s  {k.sequence[:70]}", flush=True)
            f.write(json.dumps(row) + "\n")


def compare(before: Path, after: Path) -> int:
    a = {r["kernel"]: r for r in map(json.loads, before.read_text().splitlines())}
    b = {r["kernel"]: r for r in map(json.loads, after.read_text().splitlines())}
    both = [k for k in a if k in b]
    print(f"| kernel | {before.stem} (s) | {after.stem} (s) | same pick |")
    print("| --- | ---: | ---: | --- |")
    for k in both:
        print(f"| {k} | {a[k]['seconds']:.1f} | {b[k]['seconds']:.1f} | "
              f"{'yes' if a[k]['sequence'] == b[k]['sequence'] else 'NO'} |")
    for name, d in ((before.stem, a), (after.stem, b)):
        secs = [d[k]["seconds"] for k in both]
        print(f"{name}: total {sum(secs):.1f} s, median {statistics.median(secs):.1f} s, "
              f"over 10 s: {sum(s > 10 for s in secs)} of {len(secs)}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kernels", nargs="*")
    ap.add_argument("--size", default="MEDIUM")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--polybench-c", default=None, help="PolyBench/C 4.2.1's tree (default: the bench's)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        ap.error("--out is required to measure")
    measure(args.size, args.out, args.kernels, args.polybench_c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
