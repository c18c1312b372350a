"""Model-guided and hybrid search against measurement-guided search: the cost-model issue's tables.

    python benchmarks/model_bench.py --size LARGE --kernels gemm,2mm,... --hybrid \
        --measured benchmarks/results/2026-11-23-model-vs-measure/model-LARGE.json
    python benchmarks/model_bench.py --size MEDIUM            # all 30 kernels, model-guided only

Per kernel: a model-guided beam search (its wall time is the search time: nothing is compiled);
with --hybrid also the hybrid answer (the model's 5 best candidates measured, the fastest kept);
with --measure-search also a measurement-guided search (--budget seconds per kernel; with --db its
measurements are memoized there, and --replay replays such an earlier search from that memo alone,
measuring nothing new: the same answer, none of its cost).  Then the original and every answer are
checked, then timed afresh, together and interleaved: --rounds rounds, each running the original
and every answer once in a fresh process (warm-up, then a timed run), median per schedule; this
machine's speed drifts for minutes at a time, and interleaving makes the ratios share it.
--measured takes the measurement-guided answers of an earlier search_bench.py or model_bench.py
JSON (their "transformations" / "measure_transformations") and re-measures them here too; older
files without them contribute their recorded speedup, marked with a '*'.  Where the original's
rounds spread by more than SPREAD, a note line gives the ratios of the fastest runs as well.
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
from looper.target.host import cpu_model, default_threads, load_average
from looper.runtime.measurements import MeasurementStore
from looper.costmodel.store import load_model
from looper.search.beam import beam_search
from looper.target import Target  # noqa: E402
from looper.tune import TuneOptions, prepare  # noqa: E402
from looper.search.policy import policy_for
from looper.search.evaluators import ExecutionEvaluator
from looper.search.hybrid import verify_top
from looper.transforms.schedule import Schedule


SPREAD = 1.3  # an original whose slowest round is this much slower than its fastest gets a note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="LARGE")
    ap.add_argument("--kernels", default=None)
    ap.add_argument("--beam", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per candidate in the searches")
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved rounds of the final comparison (original and every answer)")
    ap.add_argument("--max-affine", type=int, default=None,
                    help="affine levels of the model-guided search (default: the model's training depth)")
    ap.add_argument("--min-gain", type=float, default=None,
                    help="the model-guided search's min_gain (default: the model evaluator's)")
    ap.add_argument("--hybrid", action="store_true")
    ap.add_argument("--measure-search", action="store_true", help="also run a measurement-guided search")
    ap.add_argument("--budget", type=float, default=None, help="time budget of that search (s)")
    ap.add_argument("--measured", default=None, help="search_bench.py JSON of a measurement-guided run")
    ap.add_argument("--db", default=None, help="memo of the measurement-guided search")
    ap.add_argument("--replay", action="store_true",
                    help="replay the measurement-guided search from --db, measuring nothing new")
    ap.add_argument("--other-model", default=None,
                    help="also search with these weights (model2, and hybrid2 with --hybrid), timed in the "
                         "same interleaved rounds: two models compared on the same measurements")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    names = [k.strip().replace("-", "_") for k in args.kernels.split(",")] if args.kernels else \
        [k.replace("-", "_") for k in ALL_KERNELS]
    measured = {}
    if args.measured:
        measured = {r["kernel"].replace("-", "_"): r for r in json.loads(Path(args.measured).read_text())["rows"]}
    store = MeasurementStore(args.db)
    other = load_model(args.other_model) if args.other_model else None
    rows = []
    print(f"# {args.size}, beam {args.beam}, max-affine {args.max_affine or 'model'}, {default_threads()} threads, {cpu_model()}, load {load_average():.2f}")
    print(f"{'kernel':15} {'search s':>8} {'pred':>6} {'model':>6} {'hybrid':>6} {'measure':>7} "
          f"{'m/meas':>6} {'h/meas':>6}  sequence (model)", flush=True)
    for name in names:
        program = parse_file(kernel_file(name), args.size)
        deps = compute_dependences(program)
        t0 = time.perf_counter()
        options = TuneOptions(beam=args.beam, max_affine=args.max_affine)
        res = prepare(program, options, Target.detect()).run(deps)
        search_s = time.perf_counter() - t0
        answers: dict[str, Schedule] = {"model": res.best}
        ev = ExecutionEvaluator(program, repeats=args.repeat, memoize=False)  # everything afresh
        ref, starred = measured.get(name), False
        ref_steps = ref and (ref.get("measure_transformations") or ref.get("transformations"))
        try:
            if args.hybrid:
                answers["hybrid"] = verify_top(program, res, 5, ev, deps)[0].best
            if other is not None:
                res2 = prepare(program, options, Target.detect(), model=other).run(deps)
                answers["model2"] = res2.best
                if args.hybrid:
                    answers["hybrid2"] = verify_top(program, res2, 5, ev, deps)[0].best
            if args.measure_search:
                searcher = ExecutionEvaluator(program, repeats=args.repeat, store=store, memo_only=args.replay)
                try:
                    answers["measure"] = beam_search(program, deps, searcher, policy_for(
                        "measure", beam=args.beam,
                        time_budget=None if args.replay else args.budget)).best
                finally:
                    searcher.close()
            elif ref_steps is not None:
                answers["measure"] = Schedule.from_json(program, ref_steps)
            scores = ev.check(program, [Schedule(program)] + list(answers.values()))
            status = {k: s.status for k, s in zip(answers, scores[1:])}
            ok = [k for k in answers if status[k] in ("ok", "slow")]
            original_times, timed = ev.time_together(program, [answers[k] for k in ok], args.rounds)
        finally:
            ev.close()
        base = statistics.median(original_times) if original_times else None
        sp = {k: speedup for k, (speedup, _t) in zip(ok, timed)}
        times = [original_times] + [t for _s, t in timed]
        status.update({k: "ok" if sp.get(k) else "failed" for k in ok})
        if "measure" not in sp and ref:
            # search_bench.py rows say "speedup", model_bench.py rows "measured_search_speedup"
            sp["measure"], starred = ref.get("speedup", ref.get("measured_search_speedup")), True
        meas = sp.get("measure")
        row = {"kernel": name.replace("_", "-"), "search_seconds": search_s, "predicted": res.best_score.speedup,
               "model_speedup": sp.get("model"), "status": status, "hybrid_speedup": sp.get("hybrid"),
               "measured_search_speedup": meas, "measured_from_older_run": starred,
               "sequence": res.best.describe(), "transformations": res.best.to_json(),
               "hybrid_sequence": answers["hybrid"].describe() if "hybrid" in answers else "",
               "measure_sequence": answers["measure"].describe() if "measure" in answers else "",
               "hybrid_transformations": answers["hybrid"].to_json() if "hybrid" in answers else None,
               "measure_transformations": answers["measure"].to_json() if "measure" in answers else None,
               "baseline_seconds": base, "times": dict(zip(["original"] + ok, times))}
        if other is not None:
            row.update({"model2_speedup": sp.get("model2"), "hybrid2_speedup": sp.get("hybrid2"),
                        "model2_predicted": res2.best_score.speedup, "model2_sequence": res2.best.describe(),
                        "model2_transformations": res2.best.to_json(),
                        "hybrid2_sequence": answers["hybrid2"].describe() if "hybrid2" in answers else ""})
        rows.append(row)
        shown = lambda k: f"{sp[k]:6.2f}" if sp.get(k) else f"{status.get(k, '-')[:6]:>6}"  # noqa: E731
        ratio = lambda x: f"{x / meas:6.2f}" if (x and meas) else "     -"  # noqa: E731
        meas_text = f"{meas:7.2f}" if meas else "      -"
        print(f"{row['kernel']:15} {search_s:8.1f} {row['predicted']:6.2f} {shown('model')} "
              f"{shown('hybrid')} {meas_text}{'*' if starred else ' '} {ratio(sp.get('model'))} "
              f"{ratio(sp.get('hybrid'))}  {row['sequence']}", flush=True)
        if original_times and max(original_times) > SPREAD * min(original_times):
            # a bimodal original (MEDIUM syrk: 2.1 or 4.5 ms a process) makes the median ratio
            # depend on which mode the rounds drew; the ratio of fastest runs does not
            mins = ", ".join(f"{k} {min(original_times) / min(t):.2f}" for k, (_s, t) in zip(ok, timed) if t)
            print(f"{'':15} original's runs spread {max(original_times) / min(original_times):.2f}x; "
                  f"fastest-run speedups: {mins}", flush=True)
        if other is not None:
            print(f"{'  other model':15} {'':8} {row['model2_predicted']:6.2f} {shown('model2')} "
                  f"{shown('hybrid2')} {'':8} {ratio(sp.get('model2'))} {ratio(sp.get('hybrid2'))}  "
                  f"{row['model2_sequence']}", flush=True)
    ts = [r["search_seconds"] for r in rows]
    ms = [r["model_speedup"] or 0 for r in rows]
    print(f"\nmodel-guided: geomean {geomean(ms) or 0:.2f}x, median {statistics.median(ms):.2f}x, min {min(ms):.2f}x "
          f"({min(rows, key=lambda r: r['model_speedup'] or 0)['kernel']}); search time median "
          f"{statistics.median(ts):.1f} s, max {max(ts):.1f} s")
    if args.hybrid:
        print(f"hybrid (verify top 5): geomean {geomean([r['hybrid_speedup'] for r in rows]) or 0:.2f}x")
    if any(r["measured_search_speedup"] for r in rows):
        mm = geomean([r["measured_search_speedup"] for r in rows])
        print(f"measurement-guided: geomean {mm:.2f}x; model/measure {(geomean(ms) or 0) / mm:.2f}"
              + (f", hybrid/measure {(geomean([r['hybrid_speedup'] for r in rows]) or 0) / mm:.2f}"
                 if args.hybrid else ""))
    if other is not None:
        m2 = geomean([r["model2_speedup"] or 0 for r in rows]) or 0
        mm = geomean([r["measured_search_speedup"] for r in rows if r["measured_search_speedup"]])
        print(f"other model ({args.other_model}): geomean {m2:.2f}x"
              + (f", hybrid {geomean([r['hybrid2_speedup'] or 0 for r in rows]) or 0:.2f}x" if args.hybrid else "")
              + (f"; model/measure {m2 / mm:.2f}" if mm else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"size": args.size, "beam": args.beam, "max_affine": args.max_affine, "cpu": cpu_model(),
                                               "threads": default_threads(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
