"""Every kernel at MINI reproduces PolyBench 4.2.1's reference output (../shared/polybench-ref)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from looper.cli import main
from looper.runtime.run import compare_dumps

from conftest import KERNELS, SHARED, kernel_path, polybench_name

REF = SHARED / "polybench-ref"


@pytest.mark.parametrize("kernel", KERNELS)
def test_matches_polybench_reference(kernel, tmp_path):
    ref = REF / f"{polybench_name(kernel)}.MINI.txt"
    if not ref.exists():
        pytest.skip(f"{ref} not found: PolyBench reference outputs not available here")
    c_file = tmp_path / "k.c"
    res = CliRunner().invoke(main, ["compile", str(kernel_path(kernel)), "--size", "MINI", "-o", str(c_file)])
    assert res.exit_code == 0, res.output
    exe = tmp_path / "k"
    subprocess.run(["gcc", "-O2", "-fopenmp", "-DPOLYBENCH_DUMP_ARRAYS", str(c_file), "-lm", "-o", str(exe)],
                   check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=True)
    got = tmp_path / "out.txt"
    got.write_text(run.stderr)
    cmp = subprocess.run([sys.executable, str(REF / "compare.py"), str(ref), str(got)],
                         capture_output=True, text=True)
    assert cmp.returncode == 0, cmp.stdout + cmp.stderr
    # compare.py lets NaN pass; ours does not.
    assert compare_dumps(ref.read_text(), run.stderr, abs_tol=0.011, rel_tol=1e-6) is None
