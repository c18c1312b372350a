"""The user's preamble (PolyBench's cache flush before its timer starts): found in a C program,
run by the harness before every timed call, and still charged a fresh team's start by the
restraint (`search.restraint` says why).  Nothing here is timed."""
from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from helpers import TARGET, differential
from looper.codegen.harness import program_c
from looper.ir.program import Preamble
from looper.lang.c.cfile import parse_c_file
from looper.runtime.run import parse_dump
from looper.target import Limits
from looper.transforms.schedule import Schedule, original
from looper.transforms import Parallelize

# PolyBench's shape: main starts the timer (which flushes), then calls the kernel.
TIMED = r"""
#include <stdio.h>
#define N 64
extern void polybench_timer_start();
extern void polybench_timer_stop();
static double A[N][N], x[N], y[N];

void kernel(int n, double A[N][N], double x[N], double y[N]) {
  int i, j;
#pragma scop
  for (i = 0; i < n; i++) {
    y[i] = 0.0;
    for (j = 0; j < n; j++)
      y[i] = y[i] + A[i][j] * x[j];
  }
#pragma endscop
}

int main(void) {
  for (int i = 0; i < N; i++) {
    x[i] = i % 7 / 7.0;
    for (int j = 0; j < N; j++)
      A[i][j] = (i * 5 + j) % 11 / 11.0;
  }
#ifdef TIMED
  polybench_timer_start();
#endif
  kernel(N, A, x, y);
#ifdef TIMED
  polybench_timer_stop();
#endif
  for (int i = 0; i < N; i++)
    printf("%.17g\n", y[i]);
  return 0;
}
"""


@pytest.fixture
def timed_c(tmp_path) -> Path:
    p = tmp_path / "timed.c"
    p.write_text(TIMED)
    return p


def _program(path: Path, *flags: str):
    [scop] = parse_c_file(path, flags).scops
    return scop.program


def test_the_timer_call_is_the_preamble_and_its_flags_shape_it(timed_c):
    assert _program(timed_c).preamble is None  # the macro is empty: the kernel runs right after init
    assert _program(timed_c, "-DTIMED").preamble == Preamble(32770)  # polybench.c's default size
    assert _program(timed_c, "-DTIMED", "-DPOLYBENCH_CACHE_SIZE_KB=1024").preamble == Preamble(1024)
    assert _program(timed_c, "-DTIMED", "-DPOLYBENCH_NO_FLUSH_CACHE").preamble is None


def test_a_declaration_is_not_a_call(tmp_path):
    p = tmp_path / "declared.c"
    p.write_text(TIMED.replace("polybench_timer_start();\n#endif\n  kernel", "\n#endif\n  kernel"))
    assert _program(p, "-DTIMED").preamble is None


def test_the_harness_flushes_before_every_timed_call_and_computes_the_same(timed_c, tmp_path):
    """The flush runs in the harness (under OpenMP too: a parallel answer's build) and changes no
    output: the original and a parallel schedule dump what they dump without it."""
    program = _program(timed_c, "-DTIMED")
    text = program_c(program, [original(program)])
    assert "#define LOOPER_FLUSH_KIB 32770" in text
    assert "looper_flush_cache(looper_starts_team[variant]);" in text
    assert "const int looper_starts_team[] = {0};" in text
    plain = _program(timed_c)
    assert "#define LOOPER_FLUSH_KIB" not in program_c(plain, [original(plain)])
    parallel = Schedule(program).then(Parallelize(((("S0", "S1"), 1),)))
    assert parallel.lowered.parallel
    assert "const int looper_starts_team[] = {0, 1};" in program_c(program, [original(program), parallel.lowered])
    assert differential(program, [parallel], tmp_path) == []
    # and the flushed run's outputs are the unflushed program's
    outs = []
    for prog, name in ((program, "flushed"), (plain, "plain")):
        src = tmp_path / f"{name}.c"
        src.write_text(program_c(prog, [original(prog)]))
        exe = tmp_path / name
        subprocess.run(["gcc", "-O2", "-fopenmp", "-DPOLYBENCH_DUMP_ARRAYS", str(src), "-lm", "-o", str(exe)],
                       check=True, capture_output=True)
        r = subprocess.run([str(exe), "0", "3"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, OMP_NUM_THREADS="2"))
        assert r.returncode == 0, r.stderr
        outs.append(parse_dump(r.stderr))
    assert outs[0] == outs[1] and outs[0]


FORK, REGION = 4e-3, 1.5e-5  # a 2-vCPU VM: a fresh team costs ms, a later region microseconds


def test_a_team_the_timer_started_is_still_charged_a_fresh_start(timed_c):
    """After PolyBench's flush a first region is cheap on average, but the kernel still stalls on
    the other vCPU now and then (`search.restraint`): a flushed program is restrained as one
    without the preamble, by the fresh team's cost."""
    from looper.costmodel.store import load_model
    from looper.tune.options import Evaluator, TuneOptions
    from looper.tune.pipeline import prepare
    machine = dataclasses.replace(TARGET, limits=Limits(2, 100.0, 200.0, 30.0, 8, None, None, FORK, REGION))
    options = TuneOptions(evaluator=Evaluator.MODEL, memo=False)
    model = load_model()
    for program in (_program(timed_c, "-DTIMED"), _program(timed_c)):
        kept = prepare(program, options, machine, model=model)
        assert kept.policy.sequential is not None and f"{FORK * 1e6:.0f} us on this machine" in kept.policy.sequential


def test_a_flushed_measurement_is_memoized_apart(timed_c, tmp_path):
    from looper.search.evaluators import ExecutionEvaluator
    flushed, plain = _program(timed_c, "-DTIMED"), _program(timed_c)
    keys = []
    for p in (flushed, plain):
        ev = ExecutionEvaluator(p, repeats=3, threads=2, memoize=False)
        keys.append(ev.memo_key(Schedule(p)))
        ev.close()
    assert keys[0] != keys[1]
