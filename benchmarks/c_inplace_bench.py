"""looper's in-place C output against polycc's and Polly's, on PolyBench/C's own files and harness.

For each kernel, four binaries of the same PolyBench program (its .c file, polybench.c,
-DPOLYBENCH_TIME, -D<SIZE>_DATASET):

- gcc:    the original file, gcc -O3 -march=native -fopenmp (the baseline)
- looper: `looper optimize FILE.c` (in place), gcc -O3 -march=native -fopenmp
- pluto:  `polycc FILE.c --tile --parallel` (run in a temporary directory: it writes its
          temporary files into its working directory), gcc -O3 -march=native -fopenmp
- polly:  the original file, clang-19 -O3 -march=native -mllvm -polly -mllvm -polly-parallel -fopenmp

Each is first built again with -DPOLYBENCH_DUMP_ARRAYS -ffp-contract=off and run once at the same
size: a system whose dump differs from gcc's is WRONG and is not timed (looper's file runs its
tuned code only at the sizes it was optimized for, so the check is at the timed size).  Then the
binaries that passed are timed interleaved: `--rounds` rounds, each running every system once in a
fresh process, in alternating order, OMP_NUM_THREADS=--threads; the table shows medians and the
speedup over gcc.

    python benchmarks/c_inplace_bench.py --size LARGE --rounds 5 --json benchmarks/results/2026-11-25-c-inplace/c-inplace-LARGE.json
    python benchmarks/c_inplace_bench.py --size MINI --kernels gemm,jacobi-2d --rounds 2    # smoke test
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from looper.runtime.process import run_tool  # noqa: E402  (a timeout also stops pluto)

SHARED = Path(os.environ.get("LOOPER_SHARED", ROOT.parent / "shared"))
POLYCC = Path.home() / ".cache" / "looper-peers" / "pluto" / "bin" / "polycc"
GCC_FLAGS = ["-O3", "-march=native", "-fopenmp"]
POLLY_FLAGS = ["-O3", "-march=native", "-mllvm", "-polly", "-mllvm", "-polly-parallel", "-fopenmp"]
CHECK_FLAGS = ["-ffp-contract=off", "-DPOLYBENCH_DUMP_ARRAYS"]
SYSTEMS = ("gcc", "looper", "pluto", "polly")


def sources(pb: Path) -> dict[str, Path]:
    return {Path(s).stem: pb / s for s in (pb / "utilities" / "benchmark_list").read_text().split()}


class Kernel:
    """One PolyBench kernel's systems: their sources, compilers, binaries and results."""

    def __init__(self, name: str, source: Path, size: str, work: Path, pb: Path):
        self.name, self.source, self.size, self.pb = name, source, size, pb
        self.work = work / name
        self.work.mkdir(parents=True, exist_ok=True)
        self.files: dict[str, tuple[Path, str, list[str]]] = {}  # system -> (source, compiler, flags)
        self.status: dict[str, str] = {}
        self.binaries: dict[str, Path] = {}
        self.info: dict[str, str] = {}

    def compile(self, system: str, src: Path, cc: str, flags: list[str], extra: list[str], exe: Path) -> str | None:
        cmd = [cc, *flags, *extra, f"-I{self.pb / 'utilities'}", f"-I{self.source.parent}",
               f"-D{self.size}_DATASET", str(src), str(self.pb / "utilities" / "polybench.c"), "-o", str(exe), "-lm"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        return None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["failed"])[-1][:200]


def prepare(k: Kernel, args, model, clang: str | None) -> None:
    import looper
    t0 = time.perf_counter()
    answer = looper.optimize(k.source, k.size, includes=[str(k.pb / "utilities")], evaluator=args.evaluator,
                             model=model)
    out = answer.write(k.work / f"{k.name}.looper.c")
    k.info["looper"] = " | ".join(x.sequence for x in answer.kernels) + f" ({time.perf_counter() - t0:.1f} s)"
    k.files["gcc"] = (k.source, "gcc", GCC_FLAGS)
    k.files["looper"] = (out, "gcc", GCC_FLAGS)
    if "pluto" in args.systems:
        if not Path(args.polycc).exists():
            k.status["pluto"] = "unavailable"
        else:
            with tempfile.TemporaryDirectory(prefix="looper-pluto-") as tmp:
                src = Path(tmp) / k.source.name
                shutil.copy(k.source, src)
                dst = Path(tmp) / f"{k.name}.pluto.c"
                r = run_tool([args.polycc, src.name, "--tile", "--parallel", "-o", dst.name], args.pluto_timeout,
                             cwd=tmp)
                if r.returncode != 0 or not dst.exists():
                    k.status["pluto"] = "failed"
                    k.info["pluto"] = ((r.stderr or r.stdout).strip().splitlines() or ["no output"])[-1][:200]
                else:
                    kept = k.work / dst.name
                    shutil.copy(dst, kept)
                    k.files["pluto"] = (kept, "gcc", GCC_FLAGS)
    if "polly" in args.systems:
        if clang is None:
            k.status["polly"] = "unavailable"
        else:
            k.files["polly"] = (k.source, clang, POLLY_FLAGS)


def run_env(threads: int, omp_env) -> dict[str, str]:
    """The environment every binary runs in: the shell's, OMP_NUM_THREADS, `--omp-env`'s settings."""
    return omp_env.apply(dict(os.environ, OMP_NUM_THREADS=str(threads)))


def check_and_build(k: Kernel, threads: int, omp_env) -> None:
    env = run_env(threads, omp_env)
    reference = None
    for system in [s for s in SYSTEMS if s in k.files]:
        src, cc, flags = k.files[system]
        exe = k.work / f"{system}.check"
        err = k.compile(system, src, cc, flags, CHECK_FLAGS, exe)
        if err:
            k.status[system], k.info[system] = "failed", err
            continue
        r = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=3600)
        if r.returncode != 0:
            k.status[system], k.info[system] = "crash", r.stderr[-200:]
            continue
        if system == "gcc":
            reference = r.stderr
        elif r.stderr != reference:
            k.status[system] = "WRONG"
            continue
        exe = k.work / f"{system}.time"
        err = k.compile(system, src, cc, flags, ["-DPOLYBENCH_TIME"], exe)
        if err:
            k.status[system], k.info[system] = "failed", err
            continue
        k.status[system] = "ok"
        k.binaries[system] = exe


def time_rounds(k: Kernel, rounds: int, threads: int, omp_env) -> dict[str, list[float]]:
    env = run_env(threads, omp_env)
    times: dict[str, list[float]] = {s: [] for s in k.binaries}
    order = list(k.binaries)
    for r in range(rounds):
        for system in (order if r % 2 == 0 else order[::-1]):
            res = subprocess.run([str(k.binaries[system])], capture_output=True, text=True, env=env, timeout=3600)
            try:
                times[system].append(float(res.stdout.split()[-1]))
            except (ValueError, IndexError):
                k.status[system] = "crash"
    return times


def geomean_line(rows: list[dict]) -> str:
    """Each system's geometric-mean speedup over gcc, over the kernels it ran correctly (counted)."""
    cells = []
    for s in SYSTEMS[1:]:
        ratios = [r["median"]["gcc"] / r["median"][s] for r in rows
                  if r["status"].get(s) == "ok" and r["median"].get(s) and r["median"].get("gcc")]
        cells.append(f"{statistics.geometric_mean(ratios):>7.2f}x ({len(ratios):2})" if ratios else f"{'-':>12}")
    return f"{'geomean':16} {'':>10}  " + "  ".join(cells)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="LARGE", help="PolyBench dataset (MINI..EXTRALARGE)")
    ap.add_argument("--kernels", default=None, help="comma-separated names (default: all 30)")
    ap.add_argument("--systems", default="looper,pluto,polly", help="besides gcc: looper,pluto,polly")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--evaluator", default="model", choices=("model", "measure", "hybrid"))
    ap.add_argument("--polycc", default=str(POLYCC))
    ap.add_argument("--clang", default=None, help="clang with Polly (default: clang-19 or clang, if it has Polly)")
    ap.add_argument("--pluto-timeout", type=float, default=600)
    ap.add_argument("--work", default=None, help="keep the sources and binaries here (default: a temporary directory)")
    ap.add_argument("--omp-env", default="default",
                    help="OpenMP settings of every run: default (as the shell has it), tuned, 'K=V ...'")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from looper.runtime.ompenv import OmpEnv
    omp_env = OmpEnv.parse(args.omp_env)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    pb = SHARED / "polybench-c"
    if not pb.exists():
        print(f"PolyBench/C not found in {pb} (set LOOPER_SHARED)", file=sys.stderr)
        return 2
    all_sources = sources(pb)
    names = [n.strip() for n in args.kernels.split(",")] if args.kernels else sorted(all_sources)
    for n in names:
        if n not in all_sources:
            print(f"unknown kernel {n}", file=sys.stderr)
            return 2
    from looper.bench.peers import find_clang
    from looper.costmodel.store import load_model
    clang = args.clang or find_clang()
    model = load_model(None) if args.evaluator != "measure" else None
    work_ctx = tempfile.TemporaryDirectory(prefix="looper-cbench-") if args.work is None else None
    work = Path(args.work or work_ctx.name)
    rows = []
    header = f"{'kernel':16} {'gcc s':>10}  " + "  ".join(f"{s:>12}" for s in SYSTEMS[1:])
    print(f"PolyBench/C {args.size}, {args.threads} threads, {args.rounds} interleaved rounds "
          f"(speedup over gcc -O3, median); OpenMP environment {omp_env.describe()}")
    print(header)
    for name in names:
        k = Kernel(name, all_sources[name], args.size, work, pb)
        prepare(k, args, model, clang)
        check_and_build(k, args.threads, omp_env)
        times = time_rounds(k, args.rounds, args.threads, omp_env) if k.status.get("gcc") == "ok" else {}
        med = {s: statistics.median(t) for s, t in times.items() if t and k.status.get(s) == "ok"}
        cells = []
        for s in SYSTEMS[1:]:
            if s in med and med.get("gcc"):
                cells.append(f"{med['gcc'] / med[s]:>11.2f}x")
            else:
                cells.append(f"{k.status.get(s, '-'):>12}")
        print(f"{name:16} {med.get('gcc', float('nan')):>10.6f}  " + "  ".join(cells), flush=True)
        rows.append({"kernel": name, "size": args.size, "status": k.status, "times": times,
                     "median": med, "info": k.info})
        if args.json:
            Path(args.json).write_text(json.dumps({"size": args.size, "threads": args.threads, "rounds": args.rounds,
                                                   "omp_env": omp_env.describe(), "rows": rows}, indent=1))
    print(geomean_line(rows))
    for row in rows:
        print(f"  {row['kernel']}: looper {row['info'].get('looper', '')}")
    if work_ctx is not None:
        work_ctx.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
