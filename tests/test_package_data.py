"""The shipped cost model and PolyBench kernels are package data: found through importlib.resources
wherever looper is installed, and `polybench:NAME` names a kernel from any directory."""
from __future__ import annotations

import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest
from click.testing import CliRunner

from looper.cli import main
from looper.costmodel.store import DEFAULT_MODEL, default_model_path
from looper.kernels import polybench_dir, polybench_file, polybench_names, resolve_program


def test_kernels_and_model_are_resources_of_the_package(monkeypatch):
    monkeypatch.delenv("LOOPER_MODEL", raising=False)
    assert polybench_dir() == Path(str(files("looper.kernels") / "polybench"))
    assert len(polybench_names()) == 30 and "jacobi-2d" in polybench_names()
    assert polybench_file("jacobi_2d") == polybench_file("jacobi-2d") == polybench_dir() / "jacobi_2d.py"
    assert default_model_path() == Path(str(files("looper.costmodel") / "weights" / DEFAULT_MODEL))
    assert default_model_path().is_file() and default_model_path().with_suffix(".json").is_file()
    assert resolve_program("polybench:gemm") == str(polybench_dir() / "gemm.py")
    assert resolve_program("gemm.py") == "gemm.py"


def test_a_copy_of_the_package_away_from_the_source_tree_finds_its_data(tmp_path):
    """What an installed wheel sees: the package alone, no repository around it."""
    import looper
    site = tmp_path / "site"
    shutil.copytree(Path(looper.__file__).parent, site / "looper",
                    ignore=shutil.ignore_patterns("__pycache__"))
    probe = ("from looper.kernels import polybench_file; from looper.costmodel.store import default_model_path; "
             "print(polybench_file('gemm')); print(default_model_path())")
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, check=True).stdout.split()
    assert [Path(p) for p in out] == [site / "looper" / "kernels" / "polybench" / "gemm.py",
                                      site / "looper" / "costmodel" / "weights" / DEFAULT_MODEL]
    assert all(Path(p).is_file() for p in out)


@pytest.mark.parametrize("command", ["compile", "run", "optimize"])
def test_an_unknown_shipped_kernel_is_a_usage_error_listing_the_known_ones(command):
    res = CliRunner().invoke(main, [command, "polybench:gemmm", "-s", "MINI"])
    assert res.exit_code == 2
    assert "no PolyBench kernel 'gemmm'" in res.output and "jacobi-2d" in res.output
    assert "Traceback" not in res.output


def test_a_shipped_kernel_is_named_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["compile", "polybench:jacobi-1d", "-s", "MINI", "-o", "j.c"])
    assert res.exit_code == 0, res.output
    text = (tmp_path / "j.c").read_text()
    assert "#pragma scop" in text and str(polybench_file("jacobi-1d")) in text


def test_emit_function_of_a_shipped_kernel_writes_here_not_into_the_package(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["optimize", "polybench:trisolv", "-s", "MINI", "-q", "--no-verify",
                                    "--emit", "function"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "trisolv.looper.c").is_file() and (tmp_path / "trisolv.looper.h").is_file()
    assert not list(polybench_dir().glob("*.looper.*"))
