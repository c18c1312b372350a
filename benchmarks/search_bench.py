"""Measurement-guided (or model-guided) search over PolyBench kernels: the tables of the search issue.

    python benchmarks/search_bench.py --size LARGE --kernels gemm,2mm,jacobi-2d,heat-3d,syrk,lu,correlation,fdtd-2d
    python benchmarks/search_bench.py --size MEDIUM            # all 30 kernels

For each kernel it runs `looper optimize` in-process (beam 3 by default) and prints: the chosen
sequence, the speedup over the original (gcc -O3 -march=native, same harness, OpenMP runtime
started before the timer), the search time, candidates evaluated / rejected, and the search
machinery's own time per candidate (legality + lowering + C generation, no gcc, no runs).
Geometric mean and median close the table; --json keeps every number.  Run it on an otherwise
idle machine: nothing else should compile or run while it times.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from looper.bench.polybench import ALL_KERNELS, geomean, kernel_file
from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.target.host import cpu_model, default_threads, load_average
from looper.runtime.measurements import MeasurementStore
from looper.search.beam import beam_search
from looper.lang.resize import smaller_python  # noqa: E402
from looper.target import Target  # noqa: E402
from looper.tune import Evaluator, TuneOptions, tune  # noqa: E402
from looper.search.policy import SearchPolicy



def machinery_ms_per_candidate(program, deps, n_levels: int = 9) -> float:
    """Legality + lowering + C generation per candidate, measured on a search with a free evaluator."""
    from looper.codegen.harness import kernel_function
    from looper.search.scoring import Score

    class Free:
        name = "free"

        def evaluate(self, program, schedules):
            out = []
            for s in schedules:
                str(kernel_function(s.lowered, "k"))  # lowering + isl AST + C text
                out.append(Score(1.0 + (hash(s.key) % 1000) / 1000))
            return out

    t0 = time.perf_counter()
    r = beam_search(program, deps, Free(), SearchPolicy(beam=3))
    return (time.perf_counter() - t0) * 1e3 / max(1, len(r.explored) - 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="LARGE")
    ap.add_argument("--kernels", default=None, help="comma-separated (PolyBench spelling); default all")
    ap.add_argument("--beam", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=None, help="per-kernel search budget (s)")
    ap.add_argument("--db", default=None, help="measurement memo (default: the user cache)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-machinery", action="store_true", help="skip the machinery timing pass")
    args = ap.parse_args()
    names = [k.strip().replace("-", "_") for k in args.kernels.split(",")] if args.kernels else \
        [k.replace("-", "_") for k in ALL_KERNELS]
    store = MeasurementStore(args.db)
    rows = []
    print(f"# {args.size}, beam {args.beam}, {default_threads()} threads, {cpu_model()}, "
          f"load {load_average():.2f}", flush=True)
    print(f"{'kernel':15} {'speedup':>8} {'search s':>9} {'eval':>5} {'rej':>4} {'ms/cand':>8}  sequence", flush=True)
    for name in names:
        program = parse_file(kernel_file(name), args.size)
        deps = compute_dependences(program)
        ms = 0.0 if args.no_machinery else machinery_ms_per_candidate(program, deps)
        options = TuneOptions(evaluator=Evaluator.MEASURE, beam=args.beam, budget=args.timeout, repeats=args.repeat)
        answer = tune(program, options, Target.detect(), store=store, resized=smaller_python(program))
        r = answer.result
        row = {"kernel": name.replace("_", "-"), "size": args.size, "sequence": r.best.describe(),
               "transformations": r.best.to_json(),
               "speedup": r.best_score.speedup, "search_seconds": r.seconds,
               "evaluated": len(r.evaluated) - 1, "rejected": len(r.rejected), "failed": len(r.failed),
               "measured": answer.measured, "machinery_ms_per_candidate": ms,
               "baseline_seconds": answer.original_seconds, "loadavg": load_average()}
        rows.append(row)
        print(f"{row['kernel']:15} {row['speedup']:8.2f} {row['search_seconds']:9.1f} {row['evaluated']:5d} "
              f"{row['rejected']:4d} {ms:8.1f}  {row['sequence']}", flush=True)
    sp = [r["speedup"] for r in rows]
    geo = geomean(sp)
    mss = [r["machinery_ms_per_candidate"] for r in rows]
    print(f"\ngeomean speedup {geo:.2f}x, median {statistics.median(sp):.2f}x, min {min(sp):.2f}x "
          f"({min(rows, key=lambda r: r['speedup'])['kernel']}); machinery median "
          f"{statistics.median(mss):.1f} ms/candidate, max {max(mss):.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"size": args.size, "beam": args.beam, "cpu": cpu_model(),
                                               "threads": default_threads(), "rows": rows,
                                               "geomean": geo}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
