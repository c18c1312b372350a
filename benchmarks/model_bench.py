"""Model-guided and hybrid search against measurement-guided search: the cost-model issue's tables.

    python benchmarks/model_bench.py --size LARGE --kernels gemm,2mm,... --measured issue3-large.json
    python benchmarks/model_bench.py --size MEDIUM            # all 30 kernels, model-guided only

For each kernel: a model-guided beam search (its time is the search time: no compilation), then
the chosen schedule is measured against the original in one binary (median of --repeat runs after a
warm-up, outputs checked); with --hybrid also `--evaluator hybrid --verify-top 5`.  With
--measured (a search_bench.py JSON), the ratios to the measurement-guided speedups are printed.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from looper.bench.polybench import ALL_KERNELS, geomean, kernel_file
from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.runtime.machine import cpu_model, default_threads, load_average
from looper.runtime.measurements import MeasurementStore
from looper.search.beam import SearchConfig, beam_search
from looper.search.evaluators import ExecutionEvaluator, ModelEvaluator
from looper.search.hybrid import verify_top
from looper.transforms.schedule import Schedule

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="LARGE")
    ap.add_argument("--kernels", default=None)
    ap.add_argument("--beam", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--hybrid", action="store_true")
    ap.add_argument("--measured", default=None, help="search_bench.py JSON of the measurement-guided run")
    ap.add_argument("--db", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    names = [k.strip().replace("-", "_") for k in args.kernels.split(",")] if args.kernels else \
        [k.replace("-", "_") for k in ALL_KERNELS]
    measured = {}
    if args.measured:
        measured = {r["kernel"].replace("-", "_"): r["speedup"]
                    for r in json.loads(Path(args.measured).read_text())["rows"]}
    store = MeasurementStore(args.db)
    rows = []
    print(f"# {args.size}, beam {args.beam}, {default_threads()} threads, {cpu_model()}, load {load_average():.2f}")
    print(f"{'kernel':15} {'search s':>8} {'pred':>6} {'model':>6} {'hybrid':>6} {'measure':>7} "
          f"{'m/meas':>6} {'h/meas':>6}  sequence (model)", flush=True)
    for name in names:
        program = parse_file(kernel_file(name), args.size)
        deps = compute_dependences(program)
        t0 = time.perf_counter()
        res = beam_search(program, deps, ModelEvaluator(program), SearchConfig(beam=args.beam))
        search_s = time.perf_counter() - t0
        ev = ExecutionEvaluator(program, repeats=args.repeat, store=store)
        try:
            model_sp = ev.evaluate(program, [Schedule(program), res.best])[1].speedup
            hyb_sp, hyb_seq = None, ""
            if args.hybrid:
                hres, _ = verify_top(program, res, 5, ev)
                hyb_sp, hyb_seq = hres.best_score.speedup, hres.best.describe()
        finally:
            ev.close()
        meas = measured.get(name)
        row = {"kernel": name.replace("_", "-"), "search_seconds": search_s, "predicted": res.best_score.speedup,
               "model_speedup": model_sp, "hybrid_speedup": hyb_sp, "measured_search_speedup": meas,
               "sequence": res.best.describe(), "hybrid_sequence": hyb_seq}
        rows.append(row)
        ratio = lambda x: f"{x / meas:6.2f}" if (x and meas) else "     -"  # noqa: E731
        print(f"{row['kernel']:15} {search_s:8.1f} {row['predicted']:6.2f} {model_sp or 0:6.2f} "
              f"{hyb_sp or 0:6.2f} {meas or 0:7.2f} {ratio(model_sp)} {ratio(hyb_sp)}  {row['sequence']}",
              flush=True)
    ts = [r["search_seconds"] for r in rows]
    ms = [r["model_speedup"] for r in rows]
    print(f"\nmodel-guided: geomean {geomean(ms):.2f}x, min {min(x or 0 for x in ms):.2f}x; "
          f"search time median {statistics.median(ts):.1f} s, max {max(ts):.1f} s")
    if args.hybrid:
        print(f"hybrid (verify top 5): geomean {geomean([r['hybrid_speedup'] for r in rows]):.2f}x")
    if measured:
        mm = geomean([measured.get(r["kernel"].replace("-", "_")) for r in rows])
        print(f"measurement-guided: geomean {mm:.2f}x; model/measure {geomean(ms) / mm:.2f}"
              + (f", hybrid/measure {geomean([r['hybrid_speedup'] for r in rows]) / mm:.2f}" if args.hybrid else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"size": args.size, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
