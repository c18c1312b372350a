"""One PolyBench file tuned for several sizes (`looper optimize FILE.c --sizes MEDIUM,LARGE`),
checked and timed as a user runs it.

The file is optimized in place once (the default evaluator), and both it and the original are
built at every dataset of `--check` (with PolyBench's array dump) and of `--sizes`.  At each check
size the optimized program's dump must equal the original's byte for byte (looper's versions run at
the tuned sizes, the original code elsewhere).  Then, nothing compiling, the original and
optimized builds at each tuned size run in interleaved rounds, every run a fresh process of
PolyBench's harness (`-DPOLYBENCH_TIME`, one kernel call): the table gives the means.

    OMP_NUM_THREADS=2 python benchmarks/multisize_bench.py gemm --sizes MEDIUM,LARGE --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CFLAGS = ["-O3", "-march=native"]


def main() -> None:
    from looper.bench.native import PolyBenchC

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernel")
    ap.add_argument("--sizes", default="MEDIUM,LARGE")
    ap.add_argument("--check", default="MINI,MEDIUM,LARGE")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "2")))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    pb = PolyBenchC.find()
    src, util = pb.kernel(args.kernel), pb.utilities
    work = Path(tempfile.mkdtemp(prefix="looper-multisize-"))
    opt = work / f"{args.kernel}.looper.c"
    looper = str(Path(sys.executable).parent / "looper")
    res = subprocess.run([looper, "optimize", str(src), "-I", str(util), "-I", str(src.parent), "--sizes", args.sizes,
                          "-t", str(args.threads), "-o", str(opt), "--json", str(work / "answer.json")],
                         check=False, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"looper optimize failed:\n{res.stdout}\n{res.stderr}")
    print(res.stdout)

    def build(path: Path, size: str, extra: list[str], tag: str) -> Path:
        # OpenMP only where the file uses it, as `looper bench` builds: with -fopenmp PolyBench's
        # harness flushes the caches with a thread team, which a sequential kernel then pays for
        omp = ["-fopenmp"] if "#pragma omp" in path.read_text() else []
        exe = work / f"{tag}.{size}"
        subprocess.run(["gcc", *CFLAGS, *omp, f"-D{size}_DATASET", *extra, "-I", str(util), "-I", str(src.parent),
                        str(path), str(util / "polybench.c"), "-o", str(exe), "-lm"], check=True)
        return exe

    checks = {}
    for size in args.check.split(","):
        outs = []
        for tag, path in (("original", src), ("looper", opt)):
            exe = build(path, size, ["-DPOLYBENCH_DUMP_ARRAYS"], f"{tag}-dump")
            outs.append(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stderr)
        checks[size] = outs[0] == outs[1]
        print(f"{size}: outputs {'identical to' if checks[size] else 'DIFFER from'} the original's")
    if not all(checks.values()):
        raise SystemExit(1)
    sizes = args.sizes.split(",")
    exes = {(tag, s): build(path, s, ["-DPOLYBENCH_TIME"], tag) for s in sizes
            for tag, path in (("original", src), ("looper", opt))}
    times: dict = {}
    for _ in range(args.rounds):  # interleaved rounds of fresh processes
        for key, exe in exes.items():
            out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
            times.setdefault(key, []).append(float(out.split()[0]))
    rows = []
    for s in sizes:
        o, t = times[("original", s)], times[("looper", s)]
        rows.append({"size": s, "original_mean_s": statistics.mean(o), "looper_mean_s": statistics.mean(t),
                     "speedup": statistics.mean(o) / statistics.mean(t), "original_s": o, "looper_s": t})
        print(f"{s}: original {statistics.mean(o):.4f} s, looper {statistics.mean(t):.4f} s (means of "
              f"{args.rounds} fresh runs): {rows[-1]['speedup']:.2f}x")
    if args.json:
        answer = json.loads((work / "answer.json").read_text())
        args.json.write_text(json.dumps({"kernel": args.kernel, "sizes": sizes, "checks": checks,
                                         "threads": args.threads, "cflags": CFLAGS, "rounds": args.rounds,
                                         "sequences": [sc.get("sequence") for v in answer.get("versions", [answer]) for sc in v.get("scops", [])],
                                         "answer": answer, "rows": rows}, indent=1))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
