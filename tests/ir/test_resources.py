"""Hostile sizes get a clear error before anything compiles; huge arrays live on the heap; every
verification and speed-guard run has a time limit."""
from __future__ import annotations

import subprocess

import pytest
from click.testing import CliRunner

from looper.cli import main
from looper.codegen import storage
from looper.codegen.harness import program_c
from looper.lang.parse import parse_file, parse_source
from looper.transforms import Parallelize
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import differential

LONG_LOOP = '''"""A loop longer than its arrays."""
SIZES = {"SMALL": dict(N=100)}

def kernel(N: int, A: f64[N]):
    for i in range(3 * N):
        A[0] = A[0] + 1.0

OUTPUTS = ["A"]
'''

BIG = '''"""One huge array, touched at a few elements."""
SIZES = {"SMALL": dict(N=16)}

def init(N: int, A: f64[N]):
    for i in range(16):
        A[i] = f64(i)

def kernel(N: int, A: f64[N]):
    for i in range(16):
        A[i] = A[i] * 2.0 + 1.0

OUTPUTS = []
'''


@pytest.fixture
def no_compiler(monkeypatch):
    """Any compilation fails the test: the errors must come before."""
    import looper.runtime.compile as compile_mod

    def refuse(*args, **kwargs):
        raise AssertionError("compiled a program whose sizes should have been refused")

    monkeypatch.setattr(compile_mod, "run_compiler", refuse)  # every build goes through it


@pytest.mark.parametrize("command", ["compile", "run", "optimize"])
def test_arrays_beyond_memory_are_refused_before_compiling(command, no_compiler):
    """The issue's example: N=10000000000 for A[N, N] (gemm's A is NI x NK)."""
    gemm = str(kernel_path("gemm"))
    res = CliRunner().invoke(main, [command, gemm, "-D", "NI=10000000000"])
    assert res.exit_code == 2
    assert res.output.startswith(f"{gemm}: error: the arrays need ") and "of memory" in res.output
    assert "Traceback" not in res.output


def test_sizes_beyond_int_are_refused(no_compiler):
    path = str(kernel_path("jacobi_1d"))
    res = CliRunner().invoke(main, ["compile", path, "-s", "MINI", "-D", "TSTEPS=3000000000"])
    assert res.exit_code == 2 and res.output.startswith(f"{path}: error: the size TSTEPS=3000000000 does not fit")


def test_loops_beyond_int_are_refused(tmp_path, no_compiler):
    src = tmp_path / "long.py"
    src.write_text(LONG_LOOP)
    res = CliRunner().invoke(main, ["compile", str(src), "-D", "N=1000000000"])
    assert res.exit_code == 2
    assert res.output.startswith(f"{src}: error: the loop over 'i' around line 6 reaches 2999999999")


def test_c_sizes_are_checked_too(tmp_path, no_compiler):
    src = tmp_path / "k.c"
    src.write_text("""void k(int n, double A[n][n]) {
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      A[i][j] = A[i][j] * 2.0;
#pragma endscop
}
""")
    res = CliRunner().invoke(main, ["optimize", str(src), "-D", "N=10000000000"])
    assert res.exit_code == 2 and "error: the arrays need" in res.output and "n=10000000000" in res.output


def test_normal_sizes_keep_static_arrays():
    p = parse_file(kernel_path("gemm"), "LARGE")
    assert storage.heap_arrays(p) == frozenset()
    text = program_c(p, [Schedule(p).lowered])
    assert "static double C[NI][NJ] __attribute__((aligned(64)));" in text and "posix_memalign" not in text


def test_heap_arrays_compute_what_static_ones_do(monkeypatch, tmp_path):
    """With the limits lowered so that gemm's largest arrays move to the heap, the program (and a
    parallel tiled answer) computes bit for bit what the static one does."""
    p = parse_file(kernel_path("gemm"), "MINI")
    monkeypatch.setattr(storage, "STATIC_LIMIT", 8000)
    monkeypatch.setattr(storage, "STATIC_REST", 4000)
    moved = storage.heap_arrays(p)
    assert moved and moved < set(p.arrays)
    text = program_c(p, [Schedule(p).lowered])
    assert "static double (*B)[NJ];" in text and "posix_memalign((void **)&B, 64" in text
    answer = Schedule.from_json(p, [{"kind": "parallelize", "loops": [[["S0", "S1"], 1]]}])
    assert differential(p, [answer], tmp_path) == []
    from looper.runtime.verify import OutputCheck, Toolchain
    check = OutputCheck(p, Toolchain(), (2,))  # the harness and the kernels as two units
    try:
        assert check.verify(answer.lowered).ok
    finally:
        check.close()


def test_arrays_beyond_the_static_limit_are_declared_on_the_heap(tmp_path):
    p = parse_source(BIG.replace('OUTPUTS = []', 'OUTPUTS = ["A"]'), "big.py", "SMALL", {"N": 300_000_000})
    assert storage.heap_arrays(p) == {"A"}
    text = program_c(p, [Schedule(p).lowered])
    assert "static double *A;" in text and "((size_t)(N) * sizeof(*A))" in text
    src = tmp_path / "big.c"
    src.write_text(text)
    subprocess.run(["nice", "-n", "19", "gcc", "-O2", "-fopenmp", "-c", str(src), "-o", str(tmp_path / "big.o")],
                   check=True, capture_output=True)


@pytest.mark.slow
def test_a_program_with_2_4_GB_of_arrays_runs(tmp_path):
    src = tmp_path / "big.py"
    src.write_text(BIG.replace('OUTPUTS = []', 'OUTPUTS = ["A"]'))
    res = CliRunner().invoke(main, ["run", str(src), "-D", "N=300000000"])
    assert res.exit_code == 0, res.output


def test_verification_and_guard_runs_have_time_limits(monkeypatch):
    import looper.runtime.run as run_mod
    import looper.runtime.speedguard as sg
    import looper.runtime.verify as verify_mod
    from looper.runtime.verify import OutputCheck, Toolchain
    seen = []
    real = run_mod.run_binary

    def spy(*args, **kwargs):
        seen.append(kwargs.get("timeout"))
        return real(*args, **kwargs)

    monkeypatch.setattr(run_mod, "run_binary", spy)
    monkeypatch.setattr(verify_mod, "run_binary", spy)
    monkeypatch.setattr(sg, "run_binary", spy)
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    answer = Schedule(p, (Parallelize(((("S0",), 3), (("S1",), 3))),))
    check = OutputCheck(p, Toolchain(), (2, 4))
    try:
        assert check.verify(answer.lowered).ok
    finally:
        check.close()
    guard = sg.SpeedGuard(p, Toolchain(), 2)
    result = guard.time(answer.lowered)
    assert result.timed or result.detail
    assert seen and all(t is not None and 0 < t < 1000 for t in seen)
    # the candidate's limit derives from the original's time: a few seconds at MINI, not the first run's
    assert max(seen[1:]) < verify_mod.FIRST_RUN_LIMIT
