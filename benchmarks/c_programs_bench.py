"""The C programs of `benchmarks/programs/c` (pointers with computed subscripts, and each one's
array-parameter twin) optimized in place by `looper optimize` (the default evaluator), then timed
as a user runs them.

Every program is first optimized and built, and its optimized binary's printed outputs compared
with the original's; then, with nothing compiling, the original and optimized binaries are run
in interleaved rounds, each run a fresh process (`./prog time`).  Each run prints its first call's
time (what a program that calls the kernel once pays) and the median of `REPS` more calls; the
table gives the means over the rounds of both and the speedups, pointer program beside its twin.

    OMP_NUM_THREADS=2 python benchmarks/c_programs_bench.py --rounds 8 --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "benchmarks" / "programs" / "c"
CFLAGS = ["-O3", "-march=native", "-fopenmp"]
#   program -> sizes (-D), the same for the pointer program and its twin
SIZES = {
    "dgemm": ["-DM=1000", "-DN=1000", "-DK=1000", "-DREPS=3"],
    "stencil": ["-DN=2000", "-DTSTEPS=100", "-DREPS=3"],
    "tensor": ["-DNI=128", "-DNJ=128", "-DNK=128", "-DNL=128", "-DREPS=3"],
}
LINE = re.compile(r"([0-9.]+) s first call, ([0-9.]+) s")


def build(name: str, defines: list[str], work: Path, threads: int) -> dict:
    """Optimize `name`.c in place at `defines` (the default evaluator), build both versions and
    check the optimized one prints what the original prints."""
    src = PROGRAMS / f"{name}.c"
    opt = work / f"{name}.opt.c"
    cmd = [str(Path(sys.executable).parent / "looper"), "optimize", str(src), *defines, "-t", str(threads),
           "-o", str(opt), "--json", str(work / f"{name}.json")]
    res = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{name}: looper optimize failed:\n{res.stdout}\n{res.stderr}")
    answer = json.loads((work / f"{name}.json").read_text())
    bins = {}
    for kind, path in (("original", src), ("looper", opt)):
        exe = work / f"{name}.{kind}"
        subprocess.run(["gcc", *CFLAGS, *defines, str(path), "-o", str(exe), "-lm"], check=True)
        bins[kind] = exe
    outs = [subprocess.run([str(bins[k])], capture_output=True, text=True, check=True).stdout
            for k in ("original", "looper")]
    if outs[0] != outs[1]:
        raise SystemExit(f"{name}: the optimized program prints other outputs than the original")
    return {"bins": bins, "answer": answer, "defines": defines}


def run_once(exe: Path) -> tuple[float, float]:
    out = subprocess.run([str(exe), "time"], capture_output=True, text=True, check=True).stdout
    m = LINE.search(out)
    if not m:
        raise SystemExit(f"{exe}: unexpected output {out!r}")
    return float(m.group(1)), float(m.group(2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "2")))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--programs", default="dgemm,stencil,tensor")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="looper-cprog-"))
    names = [n for base in args.programs.split(",") for n in (base, f"{base}_array")]
    built = {n: build(n, SIZES[n.removesuffix("_array")], work, args.threads) for n in names}
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.rounds):  # interleaved: every binary once a round, each a fresh process
        for n in names:
            for kind in ("original", "looper"):
                times.setdefault((n, kind), []).append(run_once(built[n]["bins"][kind]))
    rows = []
    for n in names:
        o, t = times[(n, "original")], times[(n, "looper")]
        first_o, first_t = statistics.mean(x for x, _ in o), statistics.mean(x for x, _ in t)
        warm_o, warm_t = statistics.mean(y for _, y in o), statistics.mean(y for _, y in t)
        rows.append({"program": n, "sizes": built[n]["defines"],
                     "sequence": " | ".join(sc.get("sequence", "") for sc in built[n]["answer"]["scops"]),
                     "original_first_s": first_o, "looper_first_s": first_t,
                     "speedup_first_call": first_o / first_t,
                     "original_warm_s": warm_o, "looper_warm_s": warm_t, "speedup_warm": warm_o / warm_t,
                     "looper_first_max_s": max(x for x, _ in t), "original_first_median_s":
                     statistics.median(x for x, _ in o), "runs": args.rounds})
    print(f"{'program':15} {'orig first':>11} {'looper first':>12} {'speedup':>8} {'warm speedup':>12}  sequence")
    for r in rows:
        print(f"{r['program']:15} {r['original_first_s']:11.4f} {r['looper_first_s']:12.4f} "
              f"{r['speedup_first_call']:8.2f} {r['speedup_warm']:12.2f}  {r['sequence']}")
    if args.json:
        args.json.write_text(json.dumps({"threads": args.threads, "cflags": CFLAGS, "rounds": args.rounds,
                                         "omp_env": {k: v for k, v in os.environ.items() if k.startswith("OMP_")},
                                         "rows": rows}, indent=1))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
