"""Array expansion and fission: when they are legal (isl's value flow, the dependence graph), the
dependences they leave, the register tiles they free, and that the printed programs compute
what the originals do (the harness, the callable C function, the in-place C region)."""
from __future__ import annotations

import islpy as isl
import numpy as np
import pytest

from looper.lang.parse import parse_file, parse_source
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule
from looper.poly.relations import maps_of
from looper.search.candidates import generate
from looper.transforms import Expand, Fission, Parallelize, RegisterTile
from looper.transforms.expansion import expansions
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import TARGET, differential, doitgen_c


def _doitgen(size: str = "SMALL"):
    p = parse_file(kernel_path("doitgen"), size)
    return p, compute_dependences(p)


def test_doitgen_sum_expands_along_r_q_or_both():
    p, d = _doitgen("MINI")
    found = {(e.array, e.levels) for e in expansions(p)}
    assert found == {("sum", (0,)), ("sum", (1,)), ("sum", (0, 1))}
    s = Schedule(p, (Expand("sum", ("S0", "S1", "S2"), (0, 1)),))
    assert check_schedule(d, s) is None
    assert s.describe() == "expand(sum along r,q)"
    L = s.lowered
    buf = L.program.arrays["looper_exp_sum"]
    assert buf.extent == (10, 8, 12) and buf.role == "temp"  # NR, NQ, NP at MINI
    assert all(a.array != "sum" for st in L.program.statements for a in st.accesses)


def test_expansion_removes_the_storage_dependences_it_was_made_for():
    """Before: the (r, q) iterations are tied by sum's anti and output dependences, so fission
    finds one component.  After: only the flow into the copy remains, and the nest splits into the
    zeroing, the product and the copy, in that order."""
    p, d = _doitgen("MINI")
    s = Schedule(p)
    assert not [c for c in generate("fusion", s, d, grown=True, target=TARGET) if isinstance(c[0], Fission)]
    e = s.then(Expand("sum", ("S0", "S1", "S2"), (0, 1)))
    mine = d.of(e.lowered.program)
    assert mine is not d and mine is d.of(e.lowered.program)  # once per program
    assert d.of(p) is d
    pairs = lambda u: {(m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out))  # noqa: E731
                       for m in maps_of(u) if not m.is_empty()}
    assert ("S1", "S0") in pairs(d.war) and ("S1", "S0") not in pairs(mine.war)  # sum, then overwritten
    assert ("S0", "S1") in pairs(mine.raw)  # the zero still flows into the product
    fissions = [c for c in generate("fusion", e, d, grown=True, target=TARGET) if isinstance(c[0], Fission)]
    assert [c[0].groups for c in fissions] == [(("S0",), ("S1",), ("S2",))]
    assert check_schedule(d, e.then(*fissions[0])) is None


@pytest.mark.parametrize("source, why", [
    # the value of t[j] written in iteration i is read in iteration i + 1
    ("""
def kernel(N: int, A: f64[N, N], t: f64[N]):
    for i in range(N):
        for j in range(N):
            if i >= 1:
                A[i, j] = t[j]
            t[j] = A[i, j] * 2.0
OUTPUTS = ["A"]
""", "across iterations"),
    # t is read before the kernel writes it
    ("""
def kernel(N: int, A: f64[N, N], t: f64[N]):
    for i in range(N):
        for j in range(N):
            A[i, j] = t[j]
            t[j] = A[i, j] * 2.0
OUTPUTS = ["A"]
""", "before the kernel"),
])
def test_expansion_is_refused_when_a_value_crosses_iterations(source, why):
    p = parse_source('SIZES = {"S": dict(N=6)}\n' + source, "cross.py", "S")
    d = compute_dependences(p)
    assert [e for e in expansions(p) if 0 in e.levels] == []
    got = check_schedule(d, Schedule(p, (Expand("t", ("S0", "S1"), (0,)),)))
    assert got and why in got


def test_an_output_read_before_the_kernel_is_not_expanded():
    p, d = _doitgen("MINI")
    got = check_schedule(d, Schedule(p, (Expand("A", ("S1", "S2"), (0,)),)))
    assert got and "before the kernel" in got


OUTPUT_T = """
SIZES = {"S": dict(N=6)}
def kernel(N: int, A: f64[N, N], B: f64[N, N], t: f64[N]):
    for i in range(N):
        for j in range(N):
            if j %s i:
                t[j] = A[i, j] * 2.0
                B[i, j] = t[j] + 1.0
OUTPUTS = ["B", "t"]
"""


def test_an_output_expands_with_a_copy_out_of_its_last_iteration(tmp_path):
    """t is an output: after the kernel t[j] holds what the last i wrote (j <= i: every j is
    written at i = N-1).  Expanded along i, a copy-out after every nest writes that iteration's
    copy back, and the program computes what the original does, t included."""
    p = parse_source(OUTPUT_T % "<=", "t.py", "S")
    d = compute_dependences(p)
    assert ("t", (0,)) in {(e.array, e.levels) for e in expansions(p)}
    e = Schedule(p, (Expand("t", ("S0", "S1"), (0,)),))
    assert check_schedule(d, e) is None
    (copy,) = [st for st in e.lowered.program.statements if st.name not in ("S0", "S1")]
    assert str(copy.domain) == "{ S2[i0] : 0 <= i0 <= 5 }"
    assert [a.relation.range().get_tuple_name() for a in copy.accesses] == ["t", "looper_exp_t"]
    assert copy.body.value.index[0].const == 5  # i = N - 1
    par = [c for c in generate("parallel", e, d, grown=True, target=TARGET)]
    assert par and all(check_schedule(d, e.then(*c)) is None for c in par)
    assert differential(p, [e] + [e.then(*c) for c in par], tmp_path, threads=2) == []


def test_an_output_whose_last_writes_lie_in_different_iterations_is_not_expanded():
    """j >= i: t[j] is last written at i = j, a different iteration for each j: no one copy
    holds t's final values."""
    p = parse_source(OUTPUT_T % ">=", "t.py", "S")
    d = compute_dependences(p)
    assert not [e for e in expansions(p) if e.array == "t"]
    got = check_schedule(d, Schedule(p, (Expand("t", ("S0", "S1"), (0,)),)))
    assert got and "different iterations" in got


def test_the_register_level_offers_expansion_fission_parallel_and_tiles(tmp_path):
    """doitgen: the register level reaches the product's register tile behind an expansion and a
    fission, with r (or q) parallel; legal, and exact at two threads."""
    p, d = _doitgen()
    s = Schedule(p)
    cands = generate("register", s, d, grown=True, target=TARGET)
    behind = [c for c in cands if isinstance(c[0], Expand)]
    assert behind and all(isinstance(c[-1], RegisterTile) for c in behind)
    # along (r, q): one nest each for the zeroing, the product and the copy, r parallel
    fissioned = [c for c in behind if len(c) == 4 and isinstance(c[1], Fission) and isinstance(c[2], Parallelize)]
    assert {c[0].levels for c in fissioned} == {(0, 1)} and all(c[-1].touched() == {"S1"} for c in fissioned)
    # along q alone: r reuses the copy, so the product leaves the q loop by distribution, q parallel
    along_q = [c for c in behind if c[0].levels == (1,) and check_schedule(d, s.then(*c)) is None]
    assert along_q and all(isinstance(c[-2], Parallelize) for c in along_q)
    assert not [c for c in behind if c[0].levels == (0,)]  # along r alone q still ties the product
    assert all(check_schedule(d, s.then(*c)) is None for c in fissioned)
    variants = [s.then(*c) for c in (fissioned[0], fissioned[-1], along_q[0])]
    assert all(v.lowered.microkernels for v in variants)
    assert differential(p, variants, tmp_path, threads=2) == []


def test_symm_expands_temp2_and_fission_puts_the_update_last(tmp_path):
    """symm's scalar temp2 expands along (i, j); then the product into it, the write of C[i][j]
    and the update of the rows above split into nests, the update moved after the write it must
    follow.  Register tiles on both products: exact."""
    p = parse_file(kernel_path("symm"), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    exp = [e for e in expansions(p) if e.array == "temp2" and e.levels == (0, 1)]
    assert exp
    e = s.then(exp[0])
    (fission,) = [c for c in generate("fusion", e, d, grown=True, target=TARGET) if isinstance(c[0], Fission)]
    groups = fission[0].groups
    update = next(st.name for st in p.statements if st.body.target.array == "C" and st.depth == 3)
    assert groups[-1] == (update,) and len(groups) == 4
    f = e.then(*fission)
    assert check_schedule(d, f) is None
    tiles = [c for c in generate("register", f, d, grown=True, target=TARGET) if len(c) == 1 and len(c[0].blocks) == 2]
    assert tiles
    variants = [f, f.then(*tiles[0])]
    assert all(check_schedule(d, v) is None for v in variants)
    assert differential(p, variants, tmp_path, threads=2) == []


def test_fission_never_splits_a_cycle():
    p, d = _doitgen("MINI")
    why = check_schedule(d, Schedule(p, (Fission((("S0",), ("S1",), ("S2",))),)))
    assert why and "breaks" in why


def test_the_callable_function_allocates_what_the_schedule_adds(tmp_path):
    """A schedule with an expanded temporary and a packed copy, as the C function a user calls:
    the buffers are allocated inside (aligned, freed), and the result is the original's."""
    from looper.codegen.function import function_code
    from looper.ir.schedule import original
    from looper.runtime.callable import KernelFunction
    from looper.runtime.compile import EXACT_FLAGS, OPT_FLAGS, compile_shared
    p, d = _doitgen()
    s = Schedule(p)
    (seq,) = [c for c in generate("register", s, d, grown=True, target=TARGET)
              if isinstance(c[0], Expand) and c[0].levels == (0, 1) and len(c) == 4][:1]
    v = s.then(*seq)
    rng = np.random.default_rng(3)
    A0, C4 = rng.random((25, 20, 30)), rng.random((30, 30))
    got = {}
    for name, lowered in (("looper", v.lowered), ("original", original(p))):
        code = function_code(lowered)
        assert ("__builtin_malloc" in code.source) == (name == "looper")
        lib = compile_shared(code.source, {code.header_name: code.header}, tuple(OPT_FLAGS) + tuple(EXACT_FLAGS))
        A = A0.copy()
        KernelFunction(lib.path, code)(A=A, C4=C4, sum=np.zeros(30))
        got[name] = A
    assert np.array_equal(got["looper"], got["original"])
    assert np.allclose(got["looper"], np.einsum("rqs,sp->rqp", A0, C4), rtol=1e-12)




def _run_c(tmp_path, source: str, name: str) -> str:
    """What a C program prints, built with OpenMP (no FMA contraction) and run on 2 threads."""
    import os
    import subprocess
    f = tmp_path / f"{name}.c"
    f.write_text(source)
    exe = tmp_path / name
    subprocess.run(["gcc", "-O2", "-fopenmp", "-ffp-contract=off", "-Wall", str(f), "-o", str(exe)], check=True,
                   capture_output=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True,
                          env=dict(os.environ, OMP_NUM_THREADS="2")).stdout


def test_a_local_scratch_array_of_a_c_scop_expands_in_place(tmp_path):
    """C input: a local array only the scop uses is no output, so it may expand; the region
    looper writes allocates the expanded copy itself and computes what the original does."""
    from looper.codegen.inplace import inplace_source
    from looper.lang.c.cfile import parse_c_file
    src = tmp_path / "dg.c"
    src.write_text(doitgen_c())
    cf = parse_c_file(src)
    (scop,) = cf.scops
    p = scop.program
    assert {o.array for o in p.outputs} == {"A"}
    d = compute_dependences(p)
    s = Schedule(p)
    seq = next(c for c in generate("register", s, d, grown=True, target=TARGET) if isinstance(c[0], Expand) and len(c) == 4)
    v = s.then(*seq)
    assert check_schedule(d, v) is None

    text = inplace_source(cf, [v.lowered], ["looper: " + v.describe()])
    assert "__builtin_malloc" in text and "__builtin_free" in text
    assert _run_c(tmp_path, text, "looper") == _run_c(tmp_path, doitgen_c(), "original")


def test_a_parameter_temporary_expands_in_place_and_is_written_back(tmp_path):
    """PolyBench's own doitgen passes `sum` in, so a caller could read it afterwards: an output.
    Expanded, its last (r, q) iteration's copy is written back after the loops; the in-place
    region, register-tiled with q parallel, leaves A and sum as the original does."""
    from looper.codegen.inplace import inplace_source
    from looper.lang.c.cfile import parse_c_file
    text = doitgen_c(sum_parameter=True)
    assert "double sum[NP])" in text and "doitgen(A, C4, sum);" in text
    src = tmp_path / "dg.c"
    src.write_text(text)
    cf = parse_c_file(src)
    (scop,) = cf.scops
    p = scop.program
    assert {o.array for o in p.outputs} == {"A", "sum"}
    d = compute_dependences(p)
    s = Schedule(p)
    seqs = [c for c in generate("register", s, d, grown=True, target=TARGET) if isinstance(c[0], Expand)]
    assert {c[0].levels for c in seqs} >= {(1,), (0, 1)}
    v = s.then(*next(c for c in seqs if c[0].levels == (1,)))
    assert check_schedule(d, v) is None and v.lowered.microkernels and v.lowered.parallel

    new = inplace_source(cf, [v.lowered], ["looper: " + v.describe()])
    assert "sum[" in new.split("__builtin_free")[0].split("#pragma omp single")[-1]  # the copy-out
    want = _run_c(tmp_path, text, "original")
    assert want.count("\n") == 10 * 8 * 12 + 12
    assert _run_c(tmp_path, new, "looper") == want


def test_the_harness_allocates_added_arrays_per_call_and_tells_rewrites_apart():
    """A measuring binary holds dozens of variants: static copies of doitgen's expanded `sum`
    (27 MB at LARGE) in each passed the 2 GB of the small code model and failed to link, so the
    harness allocates them as the user's function does.  And a schedule that only expands is a
    different program from the original, whatever its rows."""
    from looper.codegen.harness import program_c
    p, d = _doitgen("LARGE")
    s = Schedule(p)
    variants = [s.then(*c) for c in generate("register", s, d, grown=True, target=TARGET) if isinstance(c[0], Expand)][:3]
    text = program_c(p, [v.lowered for v in variants])
    assert "static double looper_exp_sum" not in text and text.count("__builtin_malloc") == 3
    a, b = (s.then(Expand("sum", ("S0", "S1", "S2"), levels)) for levels in ((0,), (1,)))
    assert len({s.identity, a.identity, b.identity}) == 3
