"""The as-run check: does any fresh run of looper's default answer cost a user more than the original?

For each program, `looper optimize` (the default search) writes its answer; the original and the
answer are then run alternately, each run a fresh process as a user starts it (`OMP_NUM_THREADS`
and nothing else set), `--runs` times each.  Reported: every run's kernel time, the means, the
original's median, and the slowest run of the answer over that median.  The check holds when no
run of the answer takes more than 1.25x the original's median (0.8x its speed), or the answer is
the original (and looper's report says why).

- PolyBench C files (`polybench:NAME` or a path under PolyBench/C) are optimized in place and
  both files run in PolyBench's own harness (its one timed call per process);
- looper Python programs are written with `looper optimize -o` and `looper compile`, and both
  programs run as written (`./prog`: one timed call).

    python benchmarks/asrun_check.py --size MEDIUM fdtd-2d jacobi-2d benchmarks/programs/wave2d.py \\
        benchmarks/programs/blur2.py --json benchmarks/results/.../asrun-MEDIUM.json
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
from looper.runtime.compile import openmp_flags  # noqa: E402

SHARED = Path(os.environ.get("LOOPER_SHARED", ROOT.parent / "shared"))
WORST = 1.25


def looper(*args: str) -> str:
    """Run the looper command line (this checkout's), return its stdout."""
    res = subprocess.run([sys.executable, "-m", "looper.cli", *args], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if res.returncode != 0:
        raise SystemExit(f"looper {' '.join(args)} failed:\n{res.stderr[-2000:]}")
    return res.stdout + res.stderr


def polybench_builds(name: str, size: str, work: Path) -> tuple[list[str], list[str], str]:
    """The original's and the answer's commands, and looper's report, for a PolyBench kernel."""
    pb = SHARED / "polybench-c"
    src = next(p for p in pb.rglob(f"{name}.c") if p.parent.name == name)
    out = work / f"{name}.looper.c"
    # with the timed build's define, as a user who times it gives it: the search then times every
    # candidate after PolyBench's cache flush, as the timer runs it (`ir.program.Preamble`)
    report = looper("optimize", str(src), "-s", size, "-I", str(pb / "utilities"), "-D", "POLYBENCH_TIME",
                    "-q", "-o", str(out))
    common = ["-O3", "-march=native", "-I", str(pb / "utilities"), "-I", str(src.parent), f"-D{size}_DATASET",
              "-DPOLYBENCH_TIME", str(pb / "utilities" / "polybench.c"), "-lm"]
    omp = list(openmp_flags(out.read_text()))  # -fopenmp only where the answer starts a team
    subprocess.run(["gcc", *common, str(src), "-o", str(work / "original")], check=True)
    subprocess.run(["gcc", *common, *omp, str(out), "-o", str(work / "answer")], check=True)
    return [str(work / "original")], [str(work / "answer")], report


def python_builds(path: Path, size: str, work: Path) -> tuple[list[str], list[str], str]:
    """The same for a looper Python program: the written program and the original program."""
    report = looper("optimize", str(path), "-s", size, "-q", "-o", str(work / "answer.c"))
    looper("compile", str(path), "-s", size, "-o", str(work / "original.c"))
    for name in ("answer", "original"):
        subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", "-DPOLYBENCH_TIME", str(work / f"{name}.c"),
                        "-lm", "-o", str(work / name)], check=True)
    return [str(work / "original")], [str(work / "answer")], report


def run_once(cmd: list[str]) -> float:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
                         | {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}).stdout
    return float(next(line for line in out.split() if line.replace(".", "").isdigit()))


def check(program: str, size: str, runs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="looper-asrun-") as tmp:
        work = Path(tmp)
        if program.endswith(".py"):
            original, answer, report = python_builds(Path(program), size, work)
        else:
            original, answer, report = polybench_builds(program.removeprefix("polybench:"), size, work)
        times: dict[str, list[float]] = {"original": [], "answer": []}
        for r in range(runs):
            pairs = [("original", original), ("answer", answer)]
            for name, cmd in (pairs if r % 2 == 0 else pairs[::-1]):
                times[name].append(run_once(cmd))
    med = statistics.median(times["original"])
    sequence = next((line.split("]: ", 1)[1] for line in report.splitlines() if "]: " in line), "?")
    worst = max(times["answer"]) / med
    return {"program": program, "size": size, "sequence": sequence, "runs": runs, "times": times,
            "original_mean": statistics.fmean(times["original"]), "answer_mean": statistics.fmean(times["answer"]),
            "original_median": med, "worst_answer_over_original_median": worst,
            "holds": sequence == "original" or worst <= WORST,
            "report": [line for line in report.splitlines() if line.strip().startswith(("note", "kept", "speed"))]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("programs", nargs="+", help="PolyBench kernel names (C in place) or looper .py programs")
    ap.add_argument("--size", default="MEDIUM")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if shutil.which("gcc") is None:
        raise SystemExit("gcc is needed")
    rows = []
    for p in args.programs:
        row = check(p, args.size, args.runs)
        rows.append(row)
        print(f"{p:40} {row['sequence'][:70]:70} mean {row['original_mean'] * 1e3:8.3f} -> "
              f"{row['answer_mean'] * 1e3:8.3f} ms ({row['original_mean'] / row['answer_mean']:.2f}x); slowest "
              f"run {row['worst_answer_over_original_median']:.2f}x the original's median: "
              f"{'holds' if row['holds'] else 'FAILS'}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"size": args.size, "runs": args.runs, "threads":
                                               os.environ.get("OMP_NUM_THREADS", "2"), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
