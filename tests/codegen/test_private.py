"""Expanded temporaries kept one slice per thread (`codegen.private`): when the C does it, and
that the programs it prints compute what the originals do, on 1 to 3 threads, with and without
OpenMP, the copy-out of an output included."""
from __future__ import annotations

import os
import subprocess

import pytest

from looper.codegen.harness import program_c
from looper.codegen.private import private_slices
from looper.lang.parse import parse_file, parse_source
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule
from looper.search.candidates import generate
from looper.transforms import Expand, Parallelize
from looper.transforms.parallel import ParallelRegion
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import TARGET, differential, doitgen_c

SUM = ("S0", "S1", "S2")


def _expanded_doitgen(levels=(0, 1)):
    p = parse_file(kernel_path("doitgen"), "SMALL")
    d = compute_dependences(p)
    return p, d, Schedule(p).then(Expand("sum", SUM, levels))


def _parallel(d, s: Schedule) -> dict[str, Schedule]:
    """Each legal parallel-level candidate of `s`, by its description."""
    out = {}
    for c in generate("parallel", s, d, grown=True, target=TARGET):
        v = s.then(*c)
        if check_schedule(d, v) is None:
            out[v.describe()] = v
    return out


def test_sum_expanded_along_a_parallel_r_is_one_slice_per_thread(tmp_path):
    """doitgen's `sum` expanded along (r, q), r parallel: each thread keeps one (q, p) slice
    (NQ x NP at SMALL: 20 x 30), allocated once per thread, not the NR x NQ x NP array; exact
    on 1, 2 and 3 threads (25 iterations of r: the threads' shares differ)."""
    p, d, e = _expanded_doitgen()
    v = _parallel(d, e)["expand(sum along r,q) ; parallelize(r)"]
    (sl,) = private_slices(v.lowered).values()
    assert (sl.array, sl.shape, sl.last, sl.bytes) == ("looper_exp_sum", (20, 30), None, 20 * 30 * 8)
    assert sl.statements == frozenset(SUM)
    text = program_c(p, [v.lowered])
    assert "#pragma omp parallel\n" in text and "looper_exp_sum_own" in text and " nowait" in text
    assert f"__builtin_malloc({25 * 20 * 30 * 8 + 63})" not in text
    assert f"__builtin_malloc({20 * 30 * 8 + 63})" in text
    for threads in (1, 2, 3):
        assert differential(p, [v], tmp_path, threads=threads) == []


def test_register_tiles_behind_the_expansion_read_the_threads_slice(tmp_path):
    """The grown space's doitgen answers (distributed, register-tiled, r parallel) print their
    micro-kernel on the slice: exact."""
    p = parse_file(kernel_path("doitgen"), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    tiled = [s.then(*c) for c in generate("register", s, d, grown=True, target=TARGET)
             if isinstance(c[0], Expand) and c[0].levels == (0, 1)]
    sliced = [v for v in tiled if private_slices(v.lowered)]
    assert sliced and all(v.lowered.microkernels for v in sliced)
    assert differential(p, sliced[:3], tmp_path, threads=2) == []


def test_slices_need_every_use_in_one_parallel_loop_indexed_by_its_iterator(tmp_path):
    """No slice where the temporary's leading index is not the parallel loop's iterator (r
    expanded, q parallel inside r), or where its uses are split over several loops (fission: one
    nest per statement); those keep the whole array, and every one of them is exact."""
    p, d, e = _expanded_doitgen()
    inner = _parallel(d, e)["expand(sum along r,q) ; parallelize(q)"]
    assert not private_slices(inner.lowered)
    split = [s for s in (e.then(*c) for c in generate("fusion", e, d, grown=True, target=TARGET))
             if "fission" in s.describe()]
    assert split
    split_par = [v for s in split for v in _parallel(d, s).values()]
    assert split_par and not any(private_slices(v.lowered) for v in split_par)
    assert private_slices(e.then(Parallelize(((SUM, 1),))).lowered)
    assert differential(p, [inner, split_par[0]], tmp_path, threads=2) == []


OUTPUT_T = """
SIZES = {"S": dict(N=6)}
def kernel(N: int, A: f64[N, N], B: f64[N, N], t: f64[N]):
    for i in range(N):
        for j in range(N):
            if j <= i:
                t[j] = A[i, j] * 2.0
                B[i, j] = t[j] + 1.0
OUTPUTS = ["B", "t"]
"""


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_the_copy_out_reads_the_slice_of_the_last_iteration(tmp_path, threads):
    """`t` is an output: after the kernel it holds what i = N-1 wrote.  With i parallel and t
    expanded along i, that iteration works in the shared last slice, every other in its
    thread's own, and the copy-out after the loop reads the last slice: B and t exact, however
    the iterations are dealt to the threads."""
    p = parse_source(OUTPUT_T, "t.py", "S")
    d = compute_dependences(p)
    e = Schedule(p).then(Expand("t", ("S0", "S1"), (0,)))
    sliced = [v for v in _parallel(d, e).values() if private_slices(v.lowered)]
    assert sliced
    (sl,) = private_slices(sliced[0].lowered).values()
    assert (sl.array, sl.shape, sl.last) == ("looper_exp_t", (6,), 5)
    text = program_c(p, [sliced[0].lowered])
    assert "== 5 ? looper_exp_t_last : looper_exp_t_own" in text
    assert "looper_exp_t_last[" in text.split("__builtin_free(looper_exp_t_own_raw)")[1]  # the copy-out
    assert differential(p, sliced, tmp_path, threads=threads) == []


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_inside_one_region_every_thread_allocates_its_slice_as_the_region_starts(tmp_path, threads):
    """With the copy-out parallel too and one region around both loops (`codegen.region`), each
    thread allocates its slice as the region starts and frees it as it ends; the product's loop
    is work-shared in it, and keeps its barrier before the copy-out reads the last slice."""
    p = parse_source(OUTPUT_T, "t.py", "S")
    d = compute_dependences(p)
    e = Schedule(p).then(Expand("t", ("S0", "S1"), (0,)))
    both = _parallel(d, e)["expand(t along i) ; parallelize(i,looper_e0)"]
    v = both.then(ParallelRegion())
    assert check_schedule(d, v) is None and v.lowered.region
    (sl,) = private_slices(v.lowered).values()
    assert sl.last == 5
    text = program_c(p, [v.lowered])
    region = text.split("#pragma omp parallel private(")[1].split("#pragma endscop")[0]
    first_for = region.index("#pragma omp for")
    assert region.index("__builtin_malloc") < first_for < region.index("__builtin_free(looper_exp_t_own_raw)")
    product, copy = region.split("#pragma omp for")[1:3]
    assert "nowait" not in product.split("\n")[0] and "looper_exp_t_last[" in copy
    assert differential(p, [v], tmp_path, threads=threads) == []




def _run(tmp_path, source: str, name: str, openmp: bool, threads: int = 2) -> str:
    f = tmp_path / f"{name}.c"
    f.write_text(source)
    exe = tmp_path / name
    flags = ["-fopenmp"] if openmp else []
    subprocess.run(["gcc", "-O2", *flags, "-ffp-contract=off", "-Wall", "-Wno-unknown-pragmas", str(f), "-o", str(exe)],
                   check=True, capture_output=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True,
                          env=dict(os.environ, OMP_NUM_THREADS=str(threads))).stdout


@pytest.mark.parametrize("openmp", [True, False])
def test_polybench_doitgen_in_place_writes_sum_back_from_the_last_slice(tmp_path, openmp):
    """PolyBench's doitgen passes `sum` in: an output.  Expanded along (r, q) with r parallel,
    the region looper writes keeps a slice per thread, and the last r's slice is what the
    copy-out writes back: A and sum as the original leaves them, built with OpenMP on 2 and 3
    threads, and built without it (the pragmas ignored, the same C)."""
    from looper.codegen.inplace import inplace_source
    from looper.lang.c.cfile import parse_c_file
    src = tmp_path / "dg.c"
    src.write_text(doitgen_c(sum_parameter=True))
    cf = parse_c_file(src)
    (scop,) = cf.scops
    p = scop.program
    assert {o.array for o in p.outputs} == {"A", "sum"}
    d = compute_dependences(p)
    e = Schedule(p).then(Expand("sum", SUM, (0, 1)))
    v = _parallel(d, e)["expand(sum along r,q) ; parallelize(r)"]
    (sl,) = private_slices(v.lowered).values()
    assert sl.last == 9  # NR - 1
    new = inplace_source(cf, [v.lowered], ["looper: " + v.describe()])
    assert "_own" in new and "_last" in new
    want = _run(tmp_path, doitgen_c(sum_parameter=True), "original", openmp)
    for threads in ((2, 3) if openmp else (1,)):
        assert _run(tmp_path, new, "looper", openmp, threads) == want
