"""What dealing uneven parallel loops cyclically gains (`looper/codegen/balance.py`).

    python benchmarks/balance_bench.py benchmarks/results/2026-11-24-model-v6/model-MEDIUM-v6.json --rounds 15

For every answer recorded in a model_bench.py / search_bench.py JSON whose C has a cyclic
`schedule(static, k)`, three kernels are built into one binary and timed interleaved (fresh
process per run, `runtime.run.time_interleaved`): the original, the answer with every parallel
loop plain `static` (the code before balancing), and the answer as looper prints it now.  The
two answers' C differs only in the schedule clauses.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from looper.bench.polybench import kernel_file
from looper.codegen.ast import kernel_body
from looper.codegen.harness import KernelCode, program_c
from looper.lang.parse import parse_file
from looper.runtime.compile import compile_c
from looper.target.host import cpu_model, default_threads, load_average
from looper.runtime.run import runs_per_process, time_interleaved
from looper.transforms.schedule import Schedule

ANSWERS = {"transformations": "model", "model2_transformations": "model2",
           "hybrid_transformations": "hybrid", "measure_transformations": "measure"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="a model_bench.py or search_bench.py JSON")
    ap.add_argument("--kernels", default=None, help="only these (comma-separated)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    data = json.loads(Path(args.results).read_text())
    size = data["size"]
    only = set(args.kernels.split(",")) if args.kernels else None
    print(f"# {size}, {default_threads()} threads, {cpu_model()}, load {load_average():.2f}; "
          f"speedups over the original, medians of {args.rounds} interleaved rounds")
    print(f"{'kernel':15} {'answer':8} {'static':>7} {'cyclic':>7} {'gain':>6}  sequence")
    rows, seen = [], set()
    for r in data["rows"]:
        if only and r["kernel"] not in only:
            continue
        program = parse_file(kernel_file(r["kernel"].replace("-", "_")), size)
        for key, label in ANSWERS.items():
            steps = r.get(key)
            if not steps:
                continue
            schedule = Schedule.from_json(program, steps)
            if schedule.key in seen:
                continue
            seen.add(schedule.key)
            balanced = KernelCode(program, *map(tuple, kernel_body(schedule.lowered)))
            plain = KernelCode(program, *map(tuple, kernel_body(schedule.lowered, balance=False)))
            if "schedule(static" not in "\n".join(str(n) for n in balanced.body):
                continue
            binary = compile_c(program_c(program, [Schedule(program).lowered, plain, balanced]))
            per_process = runs_per_process(r.get("baseline_seconds") or 0.01)
            timed = time_interleaved([(binary.path, k) for k in range(3)], args.rounds,
                                     threads=default_threads(), per_process=per_process)
            if not all(t.ok for t in timed):
                print(f"{r['kernel']:15} {label:8} failed")
                continue
            orig, static, cyclic = (statistics.median(t.times) for t in timed)
            row = {"kernel": r["kernel"], "answer": label, "sequence": schedule.describe(),
                   "static_speedup": orig / static, "cyclic_speedup": orig / cyclic,
                   "times": {"original": timed[0].times, "static": timed[1].times, "cyclic": timed[2].times}}
            rows.append(row)
            print(f"{r['kernel']:15} {label:8} {orig / static:7.2f} {orig / cyclic:7.2f} "
                  f"{static / cyclic:6.2f}  {row['sequence']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"size": size, "cpu": cpu_model(), "threads": default_threads(),
                                               "rounds": args.rounds, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
