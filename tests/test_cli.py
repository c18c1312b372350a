"""The command line: compile, run, help."""
from __future__ import annotations

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
