"""Test utilities: a deterministic stand-in evaluator and exact differential runs."""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path
from typing import Sequence

from looper.codegen.harness import program_c
from looper.ir.program import Program
from looper.runtime.run import parse_dump
from looper.search.scoring import Score
from looper.target import CacheLevel, Target
from looper.transforms.schedule import Schedule, original

EXACT_FLAGS = ["-O2", "-fopenmp", "-ffp-contract=off", "-DPOLYBENCH_DUMP_ARRAYS", "-DLOOPER_EXACT_DUMP"]

# The machine tests tune for, pinned so that candidates do not change with the host: AVX-512
# vectors, 48 KiB L1d and 1 MiB L2 per core, a 32 MiB L3, 2 threads, no measured limits.  (Code
# made for 64-byte vectors is correct on any x86 gcc targets: it splits them.)
TARGET = Target("test CPU", 64, (CacheLevel(1, "Data", 48 << 10), CacheLevel(2, "Unified", 1 << 20),
                                 CacheLevel(3, "Unified", 32 << 20, shared_with="0-1")), cores=2, threads=2)


def target_for(threads: int | None) -> Target:
    """The test target on `threads` threads (its own 2 for None)."""
    return TARGET if threads is None else TARGET.with_threads(threads)


class HashScores:
    """Scores from a hash of the sequence: lets the beam wander over varied, legal schedules
    without compiling anything (for exercising the search, not for finding fast code)."""

    name = "hash"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def evaluate(self, program: Program, schedules: Sequence[Schedule]) -> list[Score]:
        out = []
        for s in schedules:
            h = hashlib.sha256(f"{self.seed}:{s.key}".encode()).digest()
            out.append(Score(0.5 + int.from_bytes(h[:4], "little") / 2**32 * 1.5))
        return out


def differential(program: Program, schedules: Sequence[Schedule], workdir: Path,
                 threads: int = 2) -> list[tuple[str, str]]:
    """Build the original and every schedule into one binary (no FMA contraction, exact dumps),
    run each, and return (description, problem) for every schedule whose outputs differ."""
    src = workdir / "diff.c"
    src.write_text(program_c(program, [original(program)] + [s.lowered for s in schedules]))
    exe = workdir / "diff"
    subprocess.run(["gcc", *EXACT_FLAGS, str(src), "-lm", "-o", str(exe)], check=True,
                   capture_output=True, text=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))

    def dump(k: int) -> dict:
        r = subprocess.run([str(exe), str(k)], capture_output=True, text=True, timeout=120, env=env)
        if r.returncode != 0:
            return {"__error__": f"exit {r.returncode}: {r.stderr[-200:]}"}
        return parse_dump(r.stderr)

    ref = dump(0)
    assert ref and "__error__" not in ref, ref
    bad = []
    for k, s in enumerate(schedules, start=1):
        got = dump(k)
        if got != ref:
            diff = got.get("__error__") or next(
                (f"{n}: {sum(a != b for a, b in zip(ref[n], got.get(n, [])))} values differ"
                 for n in ref if ref[n] != got.get(n)), "arrays differ")
            bad.append((s.describe(), diff))
    return bad


TUNED_MARK = "looper: the tuned code runs"


def mark_tuned_code(text: str) -> str:
    """A rewritten C file whose tuned branches (the code after each region's `if (sizes && not
    overlapping) {`) first print TUNED_MARK on stderr: tells which runs took looper's code and
    which the original (stdio.h must be included)."""
    out, pos = [], 0
    while True:
        at = text.find("/* looper:", pos)
        if at < 0:
            break
        brace = text.index(") {", at) + 3
        out.append(text[pos:brace] + f' fputs("{TUNED_MARK}\\n", stderr);')
        pos = brace
    return "".join(out) + text[pos:]


def every_region_rewritten(answer) -> str:
    """An optimized C file (`api.OptimizedFile`) with every region rewritten, those whose answer
    is the original schedule (which looper leaves as written) by isl's loops for it: exercises
    the rewriting of every region, whatever the search answered."""
    from looper.codegen.inplace import inplace_source
    return inplace_source(answer.cfile, [k.schedule.lowered for k in answer.kernels],
                          [f"looper: {k.sequence}" for k in answer.kernels])


def model_answer_rewritten(src, defines=()) -> str:
    """The model's answer for a C file (`defines` as the preprocessor takes them, without -D),
    every region rewritten: the tuned code whatever the search answered."""
    import looper
    return every_region_rewritten(looper.optimize(src, defines=list(defines), evaluator="model",
                                                  speed_guard=False))


C_CFLAGS = ["-O2", "-fopenmp", "-ffp-contract=off"]  # exact arithmetic: outputs compare byte for byte


def build_and_run(src: Path, args: list[str]) -> str:
    """Build a C program with `C_CFLAGS` and run it once per argument string (2 threads); its
    outputs joined, for comparing an optimized file's runs with the original's."""
    exe = src.with_suffix(".exe")
    subprocess.run(["gcc", *C_CFLAGS, str(src), "-o", str(exe), "-lm"], check=True, capture_output=True)
    out = []
    for a in args:
        r = subprocess.run([str(exe), *a.split()], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, OMP_NUM_THREADS="2"))
        assert r.returncode == 0, r.stderr
        out.append(r.stdout)
    return "\n--\n".join(out)


# A kernel sized by -DN (default 64) that prints everything it computes: one region, its size
# variable n, two array parameters.
SIZED_BY_DEFINES = r"""
#include <stdio.h>
#ifndef N
#define N 64
#endif
static double A[N][N], B[N][N];

void k(int n, double X[N][N], double Y[N][N]) {
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      X[i][j] = X[i][j] * 0.5 + Y[j][i];
#pragma endscop
}

int main(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      A[i][j] = (i * 7 + j) % 13 / 13.0;
      B[i][j] = (i + 3 * j) % 11 / 11.0;
    }
  k(N, A, B);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      printf("%.17g\n", A[i][j]);
  return 0;
}
"""


def run_sized(source: Path, n: int, tmp: Path) -> str:
    """Build a C file sized by `-DN=n` (C_CFLAGS) and run it on 2 threads: what it prints."""
    exe = tmp / f"{source.stem}-{n}.exe"
    subprocess.run(["gcc", *C_CFLAGS, f"-DN={n}", str(source), "-o", str(exe)],
                   check=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True,
                          env=dict(os.environ, OMP_NUM_THREADS="2")).stdout


_DOITGEN_C = r"""
#include <stdio.h>
#define NR 10
#define NQ 8
#define NP 12
void doitgen(double A[NR][NQ][NP], double C4[NP][NP])
{
  double sum[NP];
  int r, q, p, s;
#pragma scop
  for (r = 0; r < NR; r++)
    for (q = 0; q < NQ; q++) {
      for (p = 0; p < NP; p++) {
        sum[p] = 0.0;
        for (s = 0; s < NP; s++)
          sum[p] += A[r][q][s] * C4[s][p];
      }
      for (p = 0; p < NP; p++)
        A[r][q][p] = sum[p];
    }
#pragma endscop
}

static double A[NR][NQ][NP], C4[NP][NP];

int main(void)
{
  for (int r = 0; r < NR; r++) for (int q = 0; q < NQ; q++) for (int p = 0; p < NP; p++)
    A[r][q][p] = (double)((r * q + p) % 7) / 7.0;
  for (int i = 0; i < NP; i++) for (int j = 0; j < NP; j++) C4[i][j] = (double)(i * j % 5) / 5.0;
  doitgen(A, C4);
  for (int r = 0; r < NR; r++) for (int q = 0; q < NQ; q++) for (int p = 0; p < NP; p++)
    printf("%.17g\n", A[r][q][p]);
  return 0;
}
"""


def doitgen_c(sum_parameter: bool = False) -> str:
    """A small doitgen in C with its scop, printing A (and, with `sum_parameter`, `sum`, which
    it then takes as a parameter, as PolyBench's own does: an output a caller could read)."""
    if not sum_parameter:
        return _DOITGEN_C
    return (_DOITGEN_C.replace("void doitgen(double A[NR][NQ][NP], double C4[NP][NP])\n{\n  double sum[NP];",
                               "void doitgen(double A[NR][NQ][NP], double C4[NP][NP], double sum[NP])\n{")
            .replace("static double A[NR][NQ][NP], C4[NP][NP];", "static double A[NR][NQ][NP], C4[NP][NP], sum[NP];")
            .replace("doitgen(A, C4);", "doitgen(A, C4, sum);\n  for (int p = 0; p < NP; p++) printf(\"%.17g\\n\", sum[p]);"))


def innermost_bodies(c: str) -> list[str]:
    """The body of every innermost `for` of printed C (loops without a loop inside)."""
    out = []
    for m in re.finditer(r"for \([^)]*\)\s*\{", c):
        depth, k = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(c[k], 0)
            k += 1
        body = c[m.end():k - 1]
        if "for (" not in body:
            out.append(body.strip())
    return out
