"""The command line: compile, run, help."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from looper.cli import main
from looper.runtime.run import parse_dump

from conftest import kernel_path


def test_help_lists_commands():
    res = CliRunner().invoke(main, ["--help"])
    assert res.exit_code == 0
    for cmd in ("compile", "run"):
        assert cmd in res.output
    for cmd in ("compile", "run"):
        r = CliRunner().invoke(main, [cmd, "--help"])
        assert r.exit_code == 0 and "--size" in r.output


def test_compile_writes_scop_program(tmp_path):
    out = tmp_path / "gemm.c"
    res = CliRunner().invoke(main, ["compile", str(kernel_path("gemm")), "--size", "MINI", "-o", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert text.count("#pragma scop") == 1 and text.count("#pragma endscop") == 1
    assert "#define NI 20" in text and "static double C[NI][NJ]" in text


def test_run_prints_time_and_dump():
    res = CliRunner().invoke(
        main, ["run", str(kernel_path("jacobi_1d")), "--size", "MINI", "--dump", "--repeat", "3"])
    assert res.exit_code == 0, res.output
    assert "kernel time" in res.output and "median of 3" in res.output
    dump = parse_dump(res.stdout)
    assert list(dump) == ["A"] and len(dump["A"]) == 30


def test_repeated_runs_restore_the_arrays():
    """Three runs of an in-place kernel must dump what one run dumps."""
    one = CliRunner().invoke(main, ["run", str(kernel_path("seidel_2d")), "-s", "MINI", "--dump"])
    three = CliRunner().invoke(main, ["run", str(kernel_path("seidel_2d")), "-s", "MINI",
                                                      "--dump", "-r", "3"])
    assert parse_dump(one.stdout) == parse_dump(three.stdout) != {}


BIG_ARRAYS = '''
SIZES = {"DEFAULT": dict(N=150000000, M=8)}


def init(N: int, M: int, A: f64[N], C: f64[N], B: f64[M]):
    for i in range(N):
        A[i] = f64(i % 7)
        C[i] = f64(i % 5)
    for i in range(M):
        B[i] = 0.0


def kernel(N: int, M: int, A: f64[N], C: f64[N], B: f64[M]):
    for i in range(M):
        B[i] = A[N - 1 - i] + C[i]


OUTPUTS = ["B"]
'''


@pytest.mark.slow  # 2.4 GB initialized three times: some 20 s
def test_programs_with_over_2gb_of_arrays_build_and_run(tmp_path):
    """2.4 GB of arrays: the default code model reaches 2 GB of static data, so the harness puts
    the largest on the heap (`codegen.storage`) and the program links and runs as built for any
    other; the medium code model stays the fallback of a link that fails anyway."""
    from looper.codegen.harness import split_program_c
    from looper.codegen.storage import heap_arrays
    from looper.lang.parse import parse_file
    from looper.runtime.compile import OPT_FLAGS, compile_split
    from looper.search.evaluators import ExecutionEvaluator
    from looper.transforms.schedule import Schedule
    src = tmp_path / "big.py"
    src.write_text(BIG_ARRAYS)
    program = parse_file(src, None)
    assert heap_arrays(program) == {"A", "C"}
    binary = compile_split(*split_program_c(program, [Schedule(program).lowered]), OPT_FLAGS)
    assert "-mcmodel=medium" not in binary.flags
    gemm = parse_file(kernel_path("gemm"), "MINI")
    small = compile_split(*split_program_c(gemm, [Schedule(gemm).lowered]), OPT_FLAGS)
    assert "-mcmodel=medium" not in small.flags
    ev = ExecutionEvaluator(program, repeats=1, threads=1, memoize=False)
    try:
        assert ev.evaluate(program, [Schedule(program)])[0].status == "ok"
        assert "-mcmodel=medium" not in ev.build_flags
    finally:
        ev.close()
    res = CliRunner().invoke(main, ["run", str(src), "--dump"])
    assert res.exit_code == 0, res.output
    # B[i] = A[N-1-i] + C[i] with A[i] = i % 7, C[i] = i % 5 and N - 1 = 149999999 (= 2 mod 7)
    assert list(parse_dump(res.stdout)["B"]) == [float((149999999 - i) % 7 + i % 5) for i in range(8)]
