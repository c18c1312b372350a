"""Dependences and legality on facts known about PolyBench kernels."""
from __future__ import annotations

from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences, self_flow
from looper.poly.legality import carried_rows, is_parallel, is_permutable, respects, violated
from looper.ir.schedule import Lowered, original

from conftest import kernel_path


def _load(name, size="MINI"):
    p = parse_file(kernel_path(name), size)
    return p, compute_dependences(p), original(p)


def test_original_schedule_is_legal_for_every_kernel():
    from conftest import KERNELS
    for k in KERNELS:
        p, d, L = _load(k)
        assert respects(d, L), k


def test_jacobi_1d_interchange_of_time_and_space_is_illegal():
    p, d, L = _load("jacobi_1d")
    # rows: [b0, t, b1, i, b2] -> [b0, i, b1, t, b2] for both statements
    swapped = Lowered(p, {s: (r[0], r[3], r[2], r[1], r[4]) for s, r in L.rows.items()})
    assert not respects(d, swapped)
    assert any(v.startswith("flow dependence") for v in violated(d, swapped))


def test_gemm_k_carries_and_i_j_do_not():
    p, d, L = _load("gemm")
    # S1 rows: [0, i, 1, k, 0, j, 0]
    assert is_parallel(d, L, 1, {"S0", "S1"})      # i
    assert not is_parallel(d, L, 3, {"S1"})        # k carries the reduction into C[i, j]
    assert is_parallel(d, L, 5, {"S1"})            # j
    assert is_parallel(d, L, 3, {"S0"})            # the scaling loop's j
    assert 3 in carried_rows(d, L, {"S1"})
    assert is_permutable(d, L, [3, 5], {"S1"})     # k and j can be interchanged / tiled


def test_dependence_kinds():
    p, d, _ = _load("gemm")
    # C[i, j] *= beta (S0) then += in S1: flow and output S0 -> S1, anti S0 -> S1 as well
    assert not d.raw.is_empty() and not d.war.is_empty() and not d.waw.is_empty()
    s = str(d.raw)
    assert "S0[" in s and "S1[" in s


def test_seidel_2d_inner_loops_are_not_parallel():
    p, d, L = _load("seidel_2d")
    # rows [0, t, 0, i, 0, j, 0]: every loop carries a dependence without skewing
    assert not is_parallel(d, L, 1, {"S0"})
    assert not is_parallel(d, L, 3, {"S0"})
    assert not is_parallel(d, L, 5, {"S0"})
    assert not is_permutable(d, L, [3, 5], {"S0"})  # (-1, +1) distances: needs a skew first


def test_equal_rewrites_share_their_dependences_and_others_do_not():
    """Each candidate that expands an array builds its own program object; the dependences of
    equal rewrites are computed once (by content), those of a different rewrite are its own,
    and with the memo caches off every one is computed afresh, to the same relations."""
    from looper import caching
    from looper.poly.deps import dependences_of
    from looper.transforms import Expand
    from looper.transforms.schedule import Schedule

    p = parse_file(kernel_path("doitgen"), "MINI")
    one, two = (Schedule(p, (Expand("sum", ("S0", "S1", "S2"), (0, 1)),)).lowered.program for _ in range(2))
    other = Schedule(p, (Expand("sum", ("S0", "S1", "S2"), (0,)),)).lowered.program
    assert one is not two and one is not p
    assert dependences_of(one) is dependences_of(two)
    assert dependences_of(other) is not dependences_of(one)
    assert not dependences_of(other).raw.is_equal(dependences_of(one).raw)
    with caching.disabled():
        fresh = dependences_of(two)
    assert fresh is not dependences_of(one) and fresh.all.is_equal(dependences_of(one).all)


def test_a_rewritten_programs_counts_are_shared_too():
    """The cost terms' per-statement facts (instance counts by isl) follow the same memo."""
    from looper.costmodel.terms import _facts
    from looper.transforms import Expand
    from looper.transforms.schedule import Schedule

    p = parse_file(kernel_path("doitgen"), "MINI")
    one, two = (Schedule(p, (Expand("sum", ("S0", "S1", "S2"), (0, 1)),)).lowered.program for _ in range(2))
    assert one.content == two.content and one.content != p.content
    assert _facts(one) is _facts(two) and _facts(one) is not _facts(p)


def test_a_statement_s_own_flow_is_that_of_the_program_s_dependences():
    """`self_flow` (what the cost terms ask of every rewrite) is the flow dependences among one
    statement's instances that the whole program's dependences hold: scalars, reductions and
    statements that read nothing they write included."""
    for kernel in ("floyd-warshall", "seidel-2d", "gemm", "deriche", "durbin", "nussinov", "cholesky"):
        p = parse_file(kernel_path(kernel), "MINI")
        deps = compute_dependences(p)
        for st in p.statements:
            want = deps.restricted_to({st.name}, "flow")
            got = self_flow(p, st.name)
            assert got.is_equal(want) or (got.is_empty() and want.is_empty()), (kernel, st.name)
