"""The speed a user gets: looper's default answers timed as the user runs them, against looper's
tuned measurement of the same answers (the OpenMP-environment issue's table).

    python benchmarks/env_bench.py --size MEDIUM --rounds 10 --json benchmarks/results/env-MEDIUM.json
    python benchmarks/env_bench.py --size LARGE --kernels fdtd-2d,jacobi-2d --extra benchmarks/stencils/blur2.py

Per kernel: the answer `looper optimize` writes by default (model evaluator, verified, and timed
against the original by the speed guard when the original is short: `looper.api.optimize`); then the original
and the answer are timed in the user's environment (nothing added: OMP_NUM_THREADS only) and in
looper's tuned one (OMP_PROC_BIND=true OMP_PLACES=cores OMP_WAIT_POLICY=active), all four
interleaved over --rounds rounds, each run in a fresh process (`ExecutionEvaluator.
compare_environments`).  Reported: the answer's median speedup as the user runs it, the slowest
of its runs against the original's median, the tuned speedup, and their ratio.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from looper.bench.polybench import ALL_KERNELS, kernel_file
from looper.api import optimize
from looper.runtime.machine import cpu_model, default_threads, load_average
from looper.runtime.ompenv import DEFAULT_ENV, TUNED_ENV
from looper.search.evaluators import ExecutionEvaluator


def measure(path: Path, size: str, rounds: int, threads: int) -> dict:
    """One program: its default answer, timed in both environments."""
    t0 = time.perf_counter()
    kernel = optimize(path, size, threads=threads)
    seconds = time.perf_counter() - t0
    program, answer = kernel.program, kernel.schedule
    row = {"kernel": path.stem.replace("_", "-"), "size": size, "sequence": answer.describe(),
           "optimize_seconds": seconds, "load_before": load_average(),
           "written_by": [line.strip() for line in (kernel.check.lines() if kernel.check else [])],
           "check": kernel.check.to_json() if kernel.check else None}
    if not answer.steps:
        return {**row, "status": "original kept"}
    ev = ExecutionEvaluator(program, repeats=1, threads=threads, memoize=False)
    try:
        check = ev.check(program, [answer])[0]
        if not check.status.timed:
            return {**row, "status": f"{check.status}: {check.detail}"}
        times = ev.compare_environments(program, answer, [DEFAULT_ENV, TUNED_ENV], rounds)
    finally:
        ev.close()
    (od, ad), (ot, at) = times[DEFAULT_ENV], times[TUNED_ENV]
    if not (od and ad and ot and at):
        return {**row, "status": "a run failed"}
    user = statistics.median(od) / statistics.median(ad)
    tuned = statistics.median(ot) / statistics.median(at)
    return {**row, "status": "ok", "user_speedup": user, "tuned_speedup": tuned, "user_over_tuned": user / tuned,
            "worst_run": statistics.median(od) / max(ad), "best_run": statistics.median(od) / min(ad),
            "times": {"original": od, "answer": ad, "original_tuned": ot, "answer_tuned": at}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="MEDIUM")
    ap.add_argument("--kernels", default=None, help="comma-separated PolyBench kernels (default: all 30)")
    ap.add_argument("--extra", nargs="*", default=[], help="more program files (their SIZES must have --size)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    threads = args.threads or default_threads()
    names = [k.strip() for k in args.kernels.split(",")] if args.kernels else ALL_KERNELS
    paths = [kernel_file(k) for k in names] + [Path(p) for p in args.extra]
    print(f"# {args.size}, {args.rounds} interleaved rounds, {threads} threads, {cpu_model()}, load {load_average():.2f}")
    print(f"# user: {DEFAULT_ENV.describe()}; tuned: {TUNED_ENV.describe()}")
    print(f"{'kernel':15} {'min run':>8} {'median':>7} {'max run':>8} {'tuned':>7} {'user/tuned':>10}  sequence", flush=True)
    rows = []
    for path in paths:
        r = measure(path, args.size, args.rounds, threads)
        rows.append(r)
        if r["status"] == "ok":
            print(f"{r['kernel']:15} {r['worst_run']:8.2f} {r['user_speedup']:7.2f} {r['best_run']:8.2f} {r['tuned_speedup']:7.2f} "
                  f"{r['user_over_tuned']:10.2f}  {r['sequence']}", flush=True)
        else:
            print(f"{r['kernel']:15} {r['status']}", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps({"size": args.size, "rounds": args.rounds, "threads": threads,
                                                   "cpu": cpu_model(), "rows": rows}, indent=1))
    ok = [r for r in rows if r["status"] == "ok"]
    if ok:
        ratios = [r["user_over_tuned"] for r in ok]
        below = [r["kernel"] for r in ok if r["user_over_tuned"] < 0.95]
        slow = [r["kernel"] for r in ok if r["worst_run"] < 0.8]
        print(f"\nanswers timed: {len(ok)} of {len(rows)} (the others: the original is written); user/tuned "
              f"median {statistics.median(ratios):.2f} (min {min(ratios):.2f}); below 0.95: {', '.join(below) or 'none'}; "
              f"worst single run {min(r['worst_run'] for r in ok):.2f}x the original's median; "
              f"a run below 0.8x: {', '.join(slow) or 'none'}")


if __name__ == "__main__":
    main()
