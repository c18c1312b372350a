"""The speed a user gets: looper's default answers timed as the user runs them, against looper's
tuned measurement of the same answers (the OpenMP-environment issue's table).

    python benchmarks/env_bench.py --size MEDIUM --rounds 10 --json benchmarks/results/2026-11-25-omp-env/env-MEDIUM.json
    python benchmarks/env_bench.py --size LARGE --kernels fdtd-2d,jacobi-2d --extra benchmarks/stencils/blur2.py

Per kernel: the answer `looper optimize` writes by default (model evaluator, verified, and timed
against the original by the speed guard when the original is short: `looper.api.optimize`); then the original
and the answer are timed in the user's environment (nothing added: OMP_NUM_THREADS only) and in
looper's tuned one (OMP_PROC_BIND=true OMP_PLACES=cores OMP_WAIT_POLICY=active), all four
interleaved over --rounds rounds, each run in a fresh process (`ExecutionEvaluator.
compare_environments`).  Reported: the answer's median speedup as the user runs it, the slowest
of its runs against the original's median, the tuned speedup, and their ratio.

The original has no OpenMP region, so the environment does not reach it: both speedups divide
the median of all its runs (both environments), and user/tuned is then the answer's tuned median
over its user median.  Dividing each environment's own original median instead (the first
tables) adds the original's run-to-run noise to the ratio (cholesky's original alternates
between 4.7 and 6.8 ms at MEDIUM); `paired` is the median over rounds of the answer's tuned time
over its user time in the same round, a check on the drift between rounds.

    python benchmarks/env_bench.py --report benchmarks/results/2026-11-25-omp-env/env-MEDIUM.json  # re-print a table
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from looper.bench.polybench import ALL_KERNELS, kernel_file
from looper.api import optimize
from looper.target.host import cpu_model, default_threads, load_average
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
    return {**row, "status": "ok", **speedups(od, ad, ot, at),
            "times": {"original": od, "answer": ad, "original_tuned": ot, "answer_tuned": at}}


def speedups(od: list[float], ad: list[float], ot: list[float], at: list[float]) -> dict:
    """The table's numbers from one program's times (original/answer, user/tuned environment)."""
    original = statistics.median(od + ot)  # no OpenMP region: one population (module docstring)
    user, tuned = original / statistics.median(ad), original / statistics.median(at)
    return {"user_speedup": user, "tuned_speedup": tuned, "user_over_tuned": user / tuned,
            "paired": statistics.median(t / u for u, t in zip(ad, at)),
            "worst_run": original / max(ad), "best_run": original / min(ad)}


HEADER = f"{'kernel':15} {'min run':>8} {'median':>7} {'max run':>8} {'tuned':>7} {'user/tuned':>10} {'paired':>7}  sequence"


def line(r: dict) -> str:
    """One row of the table."""
    if r["status"] != "ok":
        return f"{r['kernel']:15} {r['status']}"
    return (f"{r['kernel']:15} {r['worst_run']:8.2f} {r['user_speedup']:7.2f} {r['best_run']:8.2f} {r['tuned_speedup']:7.2f} "
            f"{r['user_over_tuned']:10.2f} {r['paired']:7.2f}  {r['sequence']}")


def summary(rows: list[dict]) -> str:
    """The issue's two criteria over the timed answers."""
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return "no answer timed"
    ratios = [r["user_over_tuned"] for r in ok]
    below = [r["kernel"] for r in ok if r["user_over_tuned"] < 0.95]
    slow = [r["kernel"] for r in ok if r["worst_run"] < 0.8]
    return (f"answers timed: {len(ok)} of {len(rows)} (the others: the original is written); user/tuned "
            f"median {statistics.median(ratios):.2f} (min {min(ratios):.2f}); below 0.95: {', '.join(below) or 'none'}; "
            f"worst single run {min(r['worst_run'] for r in ok):.2f}x the original's median; "
            f"a run below 0.8x: {', '.join(slow) or 'none'}")


def report(path: Path) -> None:
    """Re-print a saved table, its numbers recomputed from the raw times."""
    saved = json.loads(path.read_text())
    print(f"# {saved['size']}, {saved['rounds']} interleaved rounds, {saved['threads']} threads, {saved['cpu']} "
          f"(from {path})")
    print(HEADER)
    rows = [{**r, **speedups(*(r["times"][k] for k in ("original", "answer", "original_tuned", "answer_tuned")))}
            if r["status"] == "ok" else r for r in saved["rows"]]
    for r in rows:
        print(line(r))
    print("\n" + summary(rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="MEDIUM")
    ap.add_argument("--kernels", default=None, help="comma-separated PolyBench kernels (default: all 30)")
    ap.add_argument("--extra", nargs="*", default=[], help="more program files (their SIZES must have --size)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--report", default=None, help="re-print the table of a saved --json file, and stop")
    args = ap.parse_args()
    if args.report:
        return report(Path(args.report))
    threads = args.threads or default_threads()
    names = [k.strip() for k in args.kernels.split(",")] if args.kernels else ALL_KERNELS
    paths = [kernel_file(k) for k in names] + [Path(p) for p in args.extra]
    print(f"# {args.size}, {args.rounds} interleaved rounds, {threads} threads, {cpu_model()}, load {load_average():.2f}")
    print(f"# user: {DEFAULT_ENV.describe()}; tuned: {TUNED_ENV.describe()}")
    print(HEADER, flush=True)
    rows = []
    for path in paths:
        r = measure(path, args.size, args.rounds, threads)
        rows.append(r)
        print(line(r), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps({"size": args.size, "rounds": args.rounds, "threads": threads,
                                                   "cpu": cpu_model(), "rows": rows}, indent=1))
    print("\n" + summary(rows))


if __name__ == "__main__":
    main()
