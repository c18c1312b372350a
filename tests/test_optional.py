"""PyTorch and Dask are optional: the search runs without them, and the commands that need them
say so in one line, write nothing and exit 2."""
from __future__ import annotations

import subprocess
import sys

import pytest

from looper.optional import MissingDependency, require


def _without(modules: list[str], args: list[str], cwd) -> subprocess.CompletedProcess:
    """`looper ARGS` in a fresh process where importing any of `modules` fails, as if not installed."""
    blocked = "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    code = f"import sys\n{blocked}from looper.cli import main\nmain({args!r}, prog_name='looper')\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd)


def test_require_names_the_dependency_and_how_to_install_it():
    assert require("json", "x").dumps([]) == "[]"
    with pytest.raises(MissingDependency, match=r"^error: looper frob needs nosuchmodule, which is not installed: "
                                                r"pip install nosuchmodule$"):
        require("nosuchmodule.sub", "looper frob")


def test_train_without_torch_is_a_one_line_error(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out.pt"
    data.mkdir()
    res = _without(["torch"], ["train", str(data), "-o", str(out)], tmp_path)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip() == ("error: looper train needs torch, which is not installed: pip install "
                                  "torch==2.13.0 (the CPU build; then `pip install 'looper[train]'` adds nothing more)")
    assert "Traceback" not in res.stderr and not out.exists()


def test_datagen_on_a_cluster_without_dask_writes_nothing(tmp_path):
    out = tmp_path / "part"
    res = _without(["distributed"], ["datagen", str(out), "-n", "1", "--scheduler", "tcp://127.0.0.1:1"], tmp_path)
    assert res.returncode == 2, res.stderr
    assert "looper datagen --scheduler needs distributed" in res.stderr and "Traceback" not in res.stderr
    assert not out.exists()


def test_optimize_runs_where_torch_cannot_be_imported(tmp_path):
    """Stronger than finding torch unimported afterwards: any `import torch` on the way would fail."""
    res = _without(["torch"], ["optimize", "polybench:gemm", "--size", "MINI", "--evaluator", "model", "-q",
                               "-o", "gemm.c"], tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "int main" in (tmp_path / "gemm.c").read_text()  # verified against the original on the way
