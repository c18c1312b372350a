"""The BLAS reference of the dense products (`--compare openblas`): the work it credits a
kernel with, the rate it compares, and that it runs in the bench's rounds."""
from __future__ import annotations

import pytest

from looper.bench import blas
from looper.bench import polybench as pb
from looper.bench.results import BLAS_REFERENCE, KernelResult, SystemResult, summary
from looper.lang.parse import parse_file
from looper.poly.flops import kernel_work
from looper.runtime.run import run_binary
from looper.transforms.schedule import Schedule

from conftest import SHARED, kernel_path

POLYBENCH_C = SHARED / "polybench-c"


def _program(name: str, size: str = "SMALL"):
    return parse_file(kernel_path(name), size)


def test_multiply_adds_are_the_products_the_kernel_computes():
    """Exact counts from the iteration domains: a triangular kernel is credited with its half."""
    gemm, syrk, syr2k, trmm = (_program(k) for k in ("gemm", "syrk", "syr2k", "trmm"))
    s = gemm.sizes
    assert blas.multiply_adds(gemm) == s["NI"] * s["NJ"] * s["NK"]
    n, m = syrk.sizes["N"], syrk.sizes["M"]
    assert blas.multiply_adds(syrk) == n * (n + 1) // 2 * m
    assert blas.multiply_adds(syr2k) == 2 * n * (n + 1) // 2 * m  # two products per statement
    m, n = trmm.sizes["M"], trmm.sizes["N"]
    assert blas.multiply_adds(trmm) == m * (m - 1) // 2 * n
    atax = _program("atax")  # tmp[i] = tmp[i] + A[i][j] * x[j]: an accumulation written out
    assert blas.multiply_adds(atax) == 2 * atax.sizes["M"] * atax.sizes["N"]
    jacobi = _program("jacobi-2d")  # sums of neighbours, no product of two arrays
    assert blas.multiply_adds(jacobi) == 0


def test_reference_shapes_cover_the_dense_products_only():
    d = _program("doitgen").sizes
    assert blas.shapes_of(_program("doitgen")) == ((d["NR"] * d["NQ"], d["NP"], d["NP"]),)
    for name in ("gemm", "2mm", "3mm", "symm", "syrk", "syr2k", "trmm"):
        shapes = blas.shapes_of(_program(name))
        assert shapes and all(min(x) > 0 for x in shapes)
        # the reference computes full products of at least the kernel's multiply-adds
        assert blas.reference_flops(shapes) >= 2 * blas.multiply_adds(_program(name))
    b = blas.build_reference(_program("jacobi-2d"))
    assert b.binary is None and b.status == "unavailable"


def test_reference_runs_as_a_polybench_binary_and_prints_one_time(tmp_path):
    b = blas.build_reference(_program("gemm", "MINI"), tmp_path)
    assert b.harness == "polybench" and b.info["flops"] == 2 * 20 * 25 * 30
    res = run_binary(b.binary.path, 0, 1, threads=2)
    assert res.ok and len(res.times) == 1 and res.times[0] > 0


def _result(times: dict[str, float], macs: int, ref_flops: int) -> KernelResult:
    systems = {s: SystemResult(s, "ok", t, t, t, [t], mean=t) for s, t in times.items()}
    return KernelResult("gemm", "LARGE", "", "hybrid", 1.0, systems, "native", flops=3 * macs,
                        multiply_adds=macs, blas_flops=ref_flops)


def test_rates_are_shares_of_the_reference_in_the_same_rounds():
    """looper at 2 flops per multiply-add over the reference's rate; the reference itself has a
    rate and no speedup (it computes another thing), and the summary keeps every share."""
    r = _result({"gcc": 1.0, "looper": 0.1, BLAS_REFERENCE: 0.05}, macs=10**9, ref_flops=2 * 10**9)
    r.rate(None)
    assert r.systems[BLAS_REFERENCE].gflops == pytest.approx(40.0)
    assert r.systems["looper"].gflops == pytest.approx(30.0)  # the kernel's own flops (3 per multiply-add here)
    assert r.systems["looper"].of_blas == pytest.approx(0.5)  # 20 GFLOP/s of multiply-adds against 40
    assert r.systems["gcc"].of_blas == pytest.approx(0.05)
    assert r.systems[BLAS_REFERENCE].of_blas is None
    assert r.speedup(BLAS_REFERENCE) is None and r.speedup("looper", BLAS_REFERENCE) is None
    other = _result({"gcc": 1.0, "looper": 0.2, BLAS_REFERENCE: 0.05}, macs=10**9, ref_flops=2 * 10**9)
    other.rate(None)
    summ = summary([r, other], ["gcc", "looper", BLAS_REFERENCE])
    assert BLAS_REFERENCE not in summ and summ["looper_of_blas"]["n"] == 2
    assert summ["looper_of_blas"]["geomean"] == pytest.approx((0.5 * 0.25) ** 0.5)
    # without a timed reference there are no shares
    lone = _result({"gcc": 1.0, "looper": 0.1}, macs=10**9, ref_flops=2 * 10**9)
    lone.rate(None)
    assert lone.systems["looper"].of_blas is None


@pytest.mark.skipif(not (POLYBENCH_C / "utilities" / "polybench.c").exists(), reason="no PolyBench/C here")
def test_bench_times_the_reference_beside_the_systems():
    """In the native mode the reference is not checked against gcc (it computes a product, not
    gemm) but timed in the same rounds, and looper's share of it is filled."""
    program = _program("gemm", "MINI")
    source = (POLYBENCH_C / "linear-algebra" / "blas" / "gemm" / "gemm.c").read_text()
    answer = pb.Answer("gemm", program, Schedule(program), 0.0, "original", source)
    cfg = pb.BenchConfig(["gemm"], ["MINI"], [BLAS_REFERENCE], inputs=["native"], polybench_c=str(POLYBENCH_C),
                         threads=2, repeat=2)
    r = pb.run_mode({"looper": answer}, kernel_work(program), "native", cfg)
    ref = r.systems[BLAS_REFERENCE]
    assert ref.status == "ok" and len(ref.times) >= 2 and ref.gflops
    assert r.systems["looper"].status == "ok" and r.systems["looper"].of_blas
    assert r.multiply_adds == 20 * 25 * 30 and r.blas_flops == 2 * 20 * 25 * 30
