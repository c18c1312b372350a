"""Exact flop counts and compulsory traffic from the IR, against closed forms derived by hand."""
from __future__ import annotations

import random

import islpy as isl
import pytest

from looper.lang.parse import parse_file
from looper.poly.count import count_points
from looper.poly.flops import compulsory_bytes, expr_flops, kernel_work

from conftest import kernel_path


def work(name: str, size: str, **sizes: int):
    return kernel_work(parse_file(kernel_path(name), size, sizes or None))


@pytest.mark.parametrize("size,ni,nj,nk", [("MINI", 20, 25, 30), ("LARGE", 1000, 1100, 1200),
                                           ("EXTRALARGE", 2000, 2300, 2600)])
def test_gemm(size, ni, nj, nk):
    """C[i,j] *= beta (1 flop) NI*NJ times; C[i,j] += alpha*A[i,k]*B[k,j] (2 mul + 1 add)
    NI*NK*NJ times.  Traffic: C read and written, A and B read, alpha and beta read."""
    w = work("gemm", size)
    assert [s.flops_each for s in w.statements] == [1, 3]
    assert w.flops == ni * nj + 3 * ni * nj * nk
    assert w.bytes == 8 * (2 * ni * nj + ni * nk + nk * nj + 2)
    assert w.precision == "double"


@pytest.mark.parametrize("size,t,n", [("MINI", 20, 30), ("LARGE", 500, 1300), ("EXTRALARGE", 1000, 2800)])
def test_jacobi_2d(size, t, n):
    """Two statements of 4 adds and 1 multiply over the (N-2)^2 interior, TSTEPS times.
    Traffic: A and B are read and written, all but their four corners."""
    w = work("jacobi-2d", size)
    assert w.flops == t * 2 * (n - 2) ** 2 * 5
    touched = n * n - 4
    written = (n - 2) ** 2
    assert w.bytes == 8 * 2 * (touched + written)


@pytest.mark.parametrize("size,n,m", [("MINI", 30, 20), ("LARGE", 1200, 1000), ("custom", 37, 11)])
def test_syrk_triangle(size, n, m):
    """Over the lower triangle j <= i: C *= beta (1 flop) N(N+1)/2 times, C += alpha*A*A
    (3 flops) M N(N+1)/2 times."""
    w = work("syrk", "MINI", N=n, M=m) if size == "custom" else work("syrk", size)
    tri = n * (n + 1) // 2
    assert w.flops == tri + 3 * m * tri
    assert w.bytes == 8 * (2 * tri + n * m + 2)  # C's triangle read and written, A read, alpha, beta


@pytest.mark.parametrize("size,n", [("MINI", 40), ("LARGE", 2000), ("EXTRALARGE", 4000), ("custom", 7)])
def test_lu_tetrahedra(size, n):
    """lu: A[i,j] -= A[i,k]*A[k,j] over k < j < i (2 flops, C(N,3) times), A[i,j] /= A[j,j]
    over j < i (1 flop, N(N-1)/2 times), and the same update over k < i <= j (2 flops,
    sum_i i(N-i) = (N-1)N(N+1)/6 times)."""
    w = work("lu", "MINI", N=n) if size == "custom" else work("lu", size)
    assert [s.instances for s in w.statements] == [n * (n - 1) * (n - 2) // 6, n * (n - 1) // 2,
                                                   (n - 1) * n * (n + 1) // 6]
    assert w.flops == 2 * n * (n - 1) * (n - 2) // 6 + n * (n - 1) // 2 + 2 * (n - 1) * n * (n + 1) // 6


def test_what_counts_as_a_flop():
    """Integer kernels have none; sqrt counts one, the costlier branch of a selection counts,
    casts and comparisons count nothing; deriche (float) is bounded by the single peak."""
    assert work("floyd-warshall", "MINI").flops == 0 and work("floyd-warshall", "MINI").precision is None
    corr = parse_file(kernel_path("correlation"), "MINI")
    by_line = {s.body.line: s for s in corr.statements}
    assert any(s.body.value.__class__.__name__ == "Call" and expr_flops(s.body.value) == 1
               for s in by_line.values())  # stddev[j] = sqrt(stddev[j])
    assert work("deriche", "MINI").precision == "single"


def test_every_kernel_counts_agree_with_isl_enumeration():
    """At MINI, every statement's instance count equals isl's own count_val, and the traffic
    equals the sizes of the access images counted by isl."""
    from conftest import KERNELS
    for name in KERNELS:
        p = parse_file(kernel_path(name), "MINI")
        for s, w in zip(p.statements, kernel_work(p).statements):
            assert w.instances == s.domain.count_val().to_python(), (name, s.name)
        assert compulsory_bytes(p) >= 0


def _random_set(rng: random.Random) -> isl.Set:
    """A bounded set of 1-3 dimensions with random affine constraints, some with non-unit
    coefficients, equalities, disjunctions or existentials (the paths that fall back to isl)."""
    d = rng.randint(1, 3)
    names = [f"x{k}" for k in range(d)]
    cons = [f"0 <= {x} <= {rng.randint(0, 12)}" for x in names]
    for _ in range(rng.randint(0, 4)):
        terms = " + ".join(f"{rng.choice([-2, -1, -1, 1, 1, 2])}*{x}" for x in rng.sample(names, rng.randint(1, d)))
        cons.append(f"{terms} {rng.choice(['<=', '>=', '<=', '>=', '='])} {rng.randint(-6, 12)}")
    body = " and ".join(cons)
    if rng.random() < 0.2:
        body = f"({body}) or ({names[0]} >= 3 and {names[0]} <= 20 and " \
               + " and ".join(f"0 <= {x} <= 4" for x in names[1:] or ["1"]) + ")"
    if rng.random() < 0.15:
        body = f"({body}) and exists (e: {names[-1]} = 2e)"
    return isl.Set(f"{{ S[{', '.join(names)}] : {body} }}")


def test_count_points_equals_isl_count_val():
    rng = random.Random(25)
    for _ in range(300):
        s = _random_set(rng)
        assert count_points(s) == s.count_val().to_python(), s


def test_count_points_is_exact_at_sizes_isl_cannot_enumerate_quickly():
    """A triangle times a long line: 10^12 points, counted symbolically."""
    s = isl.Set("{ S[i, j, k] : 0 <= i < 100000 and 0 <= j <= i and 0 <= k < 200 }")
    assert count_points(s) == 100000 * 100001 // 2 * 200
    with pytest.raises(ValueError):
        count_points(isl.Set("[N] -> { S[i] : 0 <= i < N }"))
