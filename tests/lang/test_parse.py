"""The parser on the 30 PolyBench kernels and on small programs: IR facts, sizes, typing."""
from __future__ import annotations

import json

import pytest

from looper.ir.program import DType
from looper.lang.parse import parse_file, parse_source
from looper.codegen.cexpr import c_expr

from conftest import KERNELS, SHARED, kernel_path, polybench_name


def test_thirty_kernels():
    assert len(KERNELS) == 30


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_sizes_match_polybench(kernel):
    sizes_file = SHARED / "polybench-ref" / "sizes.json"
    if not sizes_file.exists():
        pytest.skip(f"{sizes_file} not found: PolyBench reference data not available")
    ref = json.loads(sizes_file.read_text())[polybench_name(kernel)]
    for label, values in ref["sizes"].items():
        p = parse_file(kernel_path(kernel), label)
        assert p.sizes == values, label
    p = parse_file(kernel_path(kernel), "MINI")
    want = {"double": DType.F64, "float": DType.F32, "int": DType.I32}[ref["data_type"]]
    out = p.arrays[p.outputs[0].array]
    assert out.dtype is want


def test_gemm_ir():
    p = parse_file(kernel_path("gemm"), "MINI")
    s0, s1 = p.statements
    assert (s0.iterators, s1.iterators) == (("i", "j"), ("i", "k", "j"))
    assert s0.beta == (0, 0, 0) and s1.beta == (0, 1, 0, 0)
    assert s1.domain.count_val().to_python() == 20 * 30 * 25
    # write first, then the read of the updated cell, then the value's reads in order
    assert [(a.array, a.is_write) for a in s1.accesses] == [
        ("C", True), ("C", False), ("alpha", False), ("A", False), ("B", False)]
    assert p.arrays["C"].extent == (20, 25)


def test_triangular_and_reversed_domains():
    src = '''
SIZES = {"X": dict(N=10)}
def kernel(N: int, A: f64[N, N]):
    for i in range(N - 1, -1, -1):
        for j in range(i + 1, min(N, i + 4)):
            A[i, j] = A[i, j] + 1.0
OUTPUTS = ["A"]
'''
    p = parse_source(src, "t.py", "X")
    (s,) = p.statements
    assert s.steps == (-1, 1)
    # i + 1 <= j < min(10, i + 4): 3 points per row except near the end
    assert s.domain.count_val().to_python() == sum(len(range(i + 1, min(10, i + 4))) for i in range(10))


def test_guards_with_or_and_not_make_union_domains():
    src = '''
SIZES = {"X": dict(N=8)}
def kernel(N: int, A: f64[N, N]):
    for i in range(N):
        for j in range(N):
            if i == j or not (i < j):
                A[i, j] = 1.0
            else:
                A[i, j] = 2.0
OUTPUTS = ["A"]
'''
    p = parse_source(src, "t.py", "X")
    s0, s1 = p.statements
    assert s0.domain.count_val().to_python() == 36  # j <= i
    assert s1.domain.count_val().to_python() == 28  # j > i
    assert s0.beta == (0, 0, 0) and s1.beta == (0, 0, 1)


def test_weak_literals_take_float_type():
    p = parse_file(kernel_path("deriche"), "MINI")
    texts = [c_expr(s.body.value) for s in p.statements[:3]]
    assert "1.0f - expf(-alpha)" in texts[0]
    assert all("exp(" not in t for t in texts)


def test_true_division_of_integers_is_floating():
    src = '''
SIZES = {"X": dict(N=4)}
def kernel(N: int, x: f64[N]):
    for i in range(N):
        x[i] = i / N + (i // 2) % 3
OUTPUTS = ["x"]
'''
    p = parse_source(src, "t.py", "X")
    assert c_expr(p.statements[0].body.value) == "(double)i / N + i / 2 % 3"


def test_defines_override_sizes():
    p = parse_file(kernel_path("gemm"), "MINI", {"NI": 7})
    assert p.sizes == {"NI": 7, "NJ": 25, "NK": 30}
    assert p.size_label == "MINI+NI=7"


def test_default_size_is_large():
    assert parse_file(kernel_path("jacobi_2d")).size_label == "LARGE"


def test_c_names_avoid_libc_clashes():
    from looper.codegen.cexpr import c_name
    assert c_name("y1") == "y1_" and c_name("c3") == "c3_" and c_name("A") == "A"


FLAT = '''"""flat: a product of matrices stored flat, A[i * M + k]."""
SIZES = {"X": dict(N=9, M=6)}
def init(N: int, M: int, A: f64[N * M], B: f64[M * N], C: f64[N * N]):
    for e in range(N * M):
        A[e] = f64(e % 7) / 7.0
        B[e] = f64(e % 5) / 5.0
    for e in range(N * N):
        C[e] = 0.5
def kernel(N: int, M: int, A: f64[N * M], B: f64[M * N], C: f64[N * N]):
    for i in range(N):
        for j in range(N):
            for k in range(M):
                C[i * N + j] += A[i * M + k] * B[k * N + j]
OUTPUTS = ["C"]
'''


def test_flat_arrays_with_computed_subscripts(tmp_path):
    """A product with a factor of sizes alone is affine at the sizes parsed for: flat NumPy
    arrays indexed A[i * M + k] are one-dimensional arrays with affine subscripts there, and
    every schedule the search builds computes what the original does."""
    from looper.poly.deps import compute_dependences
    from looper.search.beam import beam_search
    from looper.search.policy import SearchPolicy

    from helpers import HashScores, differential

    p = parse_source(FLAT, "flat.py", "X")
    assert p.arrays["A"].extent == (54,) and p.arrays["C"].extent == (81,)
    (s,) = p.statements
    assert [a.index[0].render() for a in s.accesses] == ["9*i + j", "9*i + j", "6*i + k", "j + 9*k"]
    result = beam_search(p, compute_dependences(p), HashScores(seed=5), SearchPolicy(beam=3, max_affine=2))
    legal = [e.schedule for e in result.evaluated if e.schedule.steps]
    assert any("interchange" in s.describe() for s in legal) and any("tile" in s.describe() for s in legal)
    assert differential(p, legal[:12], tmp_path) == []
