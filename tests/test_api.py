"""The Python API (`looper.optimize`, `Kernel.compile`) and the callable C function
(`looper optimize --emit function`): results against NumPy and against the original schedule
compiled the same way; bad arguments are clear errors."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import looper
from looper.cli import main

from conftest import ROOT, kernel_path


@pytest.fixture(scope="module")
def model():
    from looper.costmodel.store import load_model
    return load_model(None)


def _rng():
    return np.random.default_rng(7)


def _both(kernel):
    """The optimized callable and the original schedule's, built the same way."""
    return kernel.compile(), kernel.compile(original=True)


def test_import_is_cheap():
    code = "import sys, looper; print(sorted(m for m in ('torch', 'islpy', 'numpy', 'click', 'pycparser') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_gemm_matches_numpy_and_the_original(model):
    k = looper.optimize(kernel_path("gemm"), size="SMALL", model=model)
    assert k.sequence == k.schedule.describe() and k.predicted is not None and k.measured is None
    assert "predicted speedup" in k.describe() and k.to_json()["sequence"] == k.sequence
    assert "kernel_0" in k.c_source
    assert 0 < k.answer.check_seconds < k.answer.seconds  # verified: built and run, inside the run's time
    f, g = _both(k)
    assert f.names == ("alpha", "beta", "C", "A", "B")
    rng = _rng()
    A, B, C = rng.random((60, 80)), rng.random((80, 70)), rng.random((60, 70))
    got, ref = C.copy(), C.copy()
    assert f(alpha=1.5, beta=1.2, C=got, A=A, B=B) == {}
    g(1.5, 1.2, ref, A, B)  # positional, in the kernel's parameter order
    assert np.allclose(got, 1.5 * A @ B + 1.2 * C, rtol=1e-12, atol=1e-12)
    assert np.allclose(got, ref, rtol=1e-13, atol=0)


def test_jacobi_2d_matches_numpy_and_the_original(model):
    k = looper.optimize(kernel_path("jacobi_2d"), size="MINI", model=model)
    f, g = _both(k)
    rng = _rng()
    A0, B0 = rng.random((30, 30)), rng.random((30, 30))
    A, B = A0.copy(), B0.copy()
    f(A=A, B=B)
    An, Bn = A0.copy(), B0.copy()
    for _ in range(20):
        Bn[1:-1, 1:-1] = 0.2 * (An[1:-1, 1:-1] + An[1:-1, :-2] + An[1:-1, 2:] + An[2:, 1:-1] + An[:-2, 1:-1])
        An[1:-1, 1:-1] = 0.2 * (Bn[1:-1, 1:-1] + Bn[1:-1, :-2] + Bn[1:-1, 2:] + Bn[2:, 1:-1] + Bn[:-2, 1:-1])
    assert np.allclose(A, An, rtol=1e-12) and np.allclose(B, Bn, rtol=1e-12)
    A2, B2 = A0.copy(), B0.copy()
    g(A=A2, B=B2)
    assert np.array_equal(A, A2) and np.array_equal(B, B2)  # same arithmetic, any loop order


def test_triangular_syrk_matches_numpy_and_the_original(model):
    k = looper.optimize(kernel_path("syrk"), size="MINI", model=model)
    f, g = _both(k)
    rng = _rng()
    A, C0 = rng.random((30, 20)), rng.random((30, 30))
    C, C2 = C0.copy(), C0.copy()
    f(alpha=1.5, beta=1.2, C=C, A=A)
    g(alpha=1.5, beta=1.2, C=C2, A=A)
    lower = np.tril(np.ones((30, 30), dtype=bool))
    expected = np.where(lower, 1.2 * C0 + 1.5 * A @ A.T, C0)  # the upper triangle is untouched
    assert np.allclose(C, expected, rtol=1e-12, atol=1e-12)
    assert np.allclose(C, C2, rtol=1e-13, atol=0)


def test_bad_arguments_are_clear_errors(model):
    k = looper.optimize(kernel_path("gemm"), size="MINI", model=model)
    f = k.compile()
    A, B, C = np.zeros((20, 30)), np.zeros((30, 25)), np.zeros((20, 25))
    ok = dict(alpha=1.0, beta=1.0, C=C, A=A, B=B)
    bad = [
        (dict(C=np.zeros((25, 20))), "argument 'C' has shape (25, 20); the kernel was optimized for (20, 25)"),
        (dict(C=np.zeros((20, 25), dtype=np.float32)), "argument 'C' has dtype float32; the kernel needs float64"),
        (dict(C=np.zeros((20, 50))[:, ::2]), "argument 'C' is not C-contiguous"),
        (dict(C=np.zeros((20, 25)).tolist()), "argument 'C' must be a NumPy array"),
        (dict(alpha="x"), "argument 'alpha' must be a number"),
        (dict(A=B), "argument 'A' has shape (30, 25)"),
    ]
    for change, message in bad:
        with pytest.raises(ValueError) as e:
            f(**{**ok, **change})
        assert message in str(e.value)
    ro = np.zeros((20, 25))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="'C' is read-only"):
        f(**{**ok, "C": ro})
    buf = np.zeros(600 + 750 - 100)  # A and B share 100 elements
    with pytest.raises(ValueError, match="arrays 'A' and 'B' overlap"):
        f(alpha=1.0, beta=1.0, C=C, A=buf[:600].reshape(20, 30), B=buf[500:].reshape(30, 25))
    with pytest.raises(TypeError, match="missing 'B'"):
        f(alpha=1.0, beta=1.0, C=C, A=A)
    with pytest.raises(TypeError, match="no parameter 'D'"):
        f(**ok, D=C)


SCALAR_OUTPUT = '''
SIZES = {"S": dict(N=50)}


def kernel(N: int, alpha: f64, s: f64, x: f64[N], y: f64[N]):
    s = 0.0
    for i in range(N):
        y[i] = alpha * x[i] + y[i]
        s += y[i] * y[i]


OUTPUTS = ["y", "s"]
'''


def test_source_string_and_scalar_outputs(model):
    k = looper.optimize(SCALAR_OUTPUT, size="S", model=model)
    f = k.compile()
    sig = f.code.signature()
    assert "double *s" in sig and "double alpha" in sig
    x, y = np.arange(50.0), np.ones(50)
    out = f(alpha=2.0, s=123.0, x=x, y=y)
    assert np.allclose(y, 2 * np.arange(50.0) + 1) and out["s"] == pytest.approx(float((y * y).sum()))


DRIVER = r"""#include <stdio.h>
#include "gemm.h"
static double C[20][25], A[20][30], B[30][25];
int main(void)
{
  for (int i = 0; i < 20; i++) for (int j = 0; j < 25; j++) C[i][j] = (double)((i * j + 1) % 20) / 20;
  for (int i = 0; i < 20; i++) for (int j = 0; j < 30; j++) A[i][j] = (double)(i * (j + 1) % 30) / 30;
  for (int i = 0; i < 30; i++) for (int j = 0; j < 25; j++) B[i][j] = (double)(i * (j + 2) % 25) / 25;
  gemm(1.5, 1.2, C, A, B);
  for (int i = 0; i < 20; i++) for (int j = 0; j < 25; j++) printf("%.17g\n", C[i][j]);
  return 0;
}
"""


def test_emit_function_writes_a_callable_c_function(tmp_path):
    out = tmp_path / "gemm.c"
    res = CliRunner().invoke(main, ["optimize", str(kernel_path("gemm")), "-s", "MINI", "-q", "--emit", "function",
                                    "-o", str(out)])
    assert res.exit_code == 0, res.output
    header = (tmp_path / "gemm.h").read_text()
    assert "void gemm(double alpha, double beta, double C[20][25], double A[20][30], double B[30][25]);" in header
    text = out.read_text()
    assert "main(" not in text and "static double" not in text and '#include "gemm.h"' in text
    (tmp_path / "driver.c").write_text(DRIVER)
    exe = tmp_path / "driver"
    subprocess.run(["gcc", "-O2", "-fopenmp", "-Wall", "-Werror", str(tmp_path / "driver.c"), str(out), "-o",
                    str(exe), "-lm"], check=True, cwd=tmp_path)
    got = np.array([float(v) for v in subprocess.run([str(exe)], capture_output=True, text=True,
                                                      check=True).stdout.split()]).reshape(20, 25)
    i, j = np.meshgrid(np.arange(20), np.arange(25), indexing="ij")
    C = ((i * j + 1) % 20) / 20
    ia, ja = np.meshgrid(np.arange(20), np.arange(30), indexing="ij")
    A = (ia * (ja + 1) % 30) / 30
    ib, jb = np.meshgrid(np.arange(30), np.arange(25), indexing="ij")
    B = (ib * (jb + 2) % 25) / 25
    assert np.allclose(got, 1.5 * A @ B + 1.2 * C, rtol=1e-12)


def test_optimize_c_file_through_the_api(tmp_path):
    src = tmp_path / "axpy.c"
    src.write_text("#define N 64\nvoid axpy(int n, double a, double x[N], double y[N])\n{\n  int i;\n"
                   "#pragma scop\n  for (i = 0; i < n; i++)\n    y[i] = a * x[i] + y[i];\n#pragma endscop\n}\n")
    res = looper.optimize(src, evaluator="model")
    assert len(res.kernels) == 1
    if res.kernels[0].sequence == "original":  # kept as written (tests/codegen/test_inplace.py: a tuned one)
        assert res.source == src.read_text()
    else:
        assert "if (n == 64\n      && looper_disjoint(x, 0, 64, y, 0, 64)) {" in res.source
    assert res.write() == tmp_path / "axpy.looper.c" and (tmp_path / "axpy.looper.c").exists()
    assert res.to_json()["scops"][0]["tuned_for"] == {"n": 64}
    with pytest.raises(TypeError, match="your own functions"):
        res.compile()


@pytest.mark.slow  # 60 shared libraries
def test_every_kernel_as_a_function_computes_the_original(model):
    """All 30 PolyBench kernels: the optimized function and the original schedule's, called on
    the same arrays (values in (0, 1], square matrices diagonally dominant), agree."""
    from conftest import KERNELS
    from looper.runtime.compile import EXACT_FLAGS, OPT_FLAGS
    rng = np.random.default_rng(0)
    for name in KERNELS:
        k = looper.optimize(kernel_path(name), size="MINI", model=model)
        # no FMA contraction: two loop orders then round alike (gramschmidt amplifies any difference)
        f, g = k.compile(flags=OPT_FLAGS + EXACT_FLAGS), k.compile(original=True, flags=OPT_FLAGS + EXACT_FLAGS)
        args = {}
        for p in f.parameters:
            a = p.array
            if a.rank == 0:
                args[p.name] = 1.25 if a.dtype.is_float else 3
                continue
            from looper.runtime.callable import NUMPY
            v = rng.random(a.extent) + 0.01
            if a.rank == 2 and a.extent[0] == a.extent[1]:
                v += np.eye(a.extent[0]) * a.extent[0]
            args[p.name] = (v if a.dtype.is_float else (v * 4).astype(int)).astype(NUMPY[a.dtype])
        mine = {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in args.items()}
        theirs = {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in args.items()}
        out_f, out_g = f(**mine), g(**theirs)
        for n, v in mine.items():
            if isinstance(v, np.ndarray):
                assert np.allclose(v, theirs[n], rtol=1e-9, atol=1e-12, equal_nan=True), (name, n, k.sequence)
        assert out_f.keys() == out_g.keys()
        for n in out_f:
            assert out_f[n] == pytest.approx(out_g[n], rel=1e-9, nan_ok=True), (name, n)
