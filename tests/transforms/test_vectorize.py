"""The vector-loop choice (transforms.vectorize): `#pragma omp simd` on innermost loops that isl
proves carry nothing and that walk an access's last subscript; refused elsewhere; exact."""
from __future__ import annotations

import pytest

from looper.codegen.harness import program_c
from looper.lang.parse import parse_file, parse_source
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule
from looper.search.candidates import generate
from looper.transforms import Parallelize, Transform, Vectorize
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import TARGET, differential

SHAPES = '''
SIZES = {"MINI": dict(N=24)}
def kernel(N: int, A: f64[N, N], B: f64[N, N], s: f64[1]):
    for i in range(1, N):
        for j in range(N):
            A[i, j] = A[i - 1, j] * 0.5 + B[i, j]
    for j in range(N):
        for i in range(N):
            B[i, j] = B[i, j] + 1.0
    for i in range(N):
        for j in range(1, N):
            B[i, j] = B[i, j - 1] + A[i, j]
OUTPUTS = ["A", "B"]
'''


def _vectorized(s: Schedule) -> list[tuple]:
    return [c for c in generate("unroll", s, compute_dependences(s.program), grown=True, target=TARGET)
            if isinstance(c[0], Vectorize)]


def test_the_mark_is_an_omp_simd_pragma_on_the_loop():
    p = parse_file(kernel_path("gemm"), "MINI")
    s = Schedule(p, (Vectorize(((("S1",), 5),)),))
    assert check_schedule(compute_dependences(p), s) is None
    assert s.lowered.vector == {("S1", 5)}
    assert s.describe() == "vectorize(j)"
    text = program_c(p, [s.lowered])
    body = text[text.index("kernel_0"):]
    assert body.count("#pragma omp simd") == 1
    assert body.split("#pragma omp simd")[1].lstrip().startswith("for (c5 = ")
    assert "not an innermost loop" in check_schedule(compute_dependences(p), Schedule(p, (Vectorize(((("S1",), 3),)),)))


def test_offered_only_in_the_grown_space_and_only_on_loops_that_carry_nothing_and_walk_rows():
    """In SHAPES, the first nest's j carries nothing and walks A's rows: marked.  The second
    nest's inner loop walks a column (no vector): not offered.  The third's j carries B[i][j-1]:
    not offered, and refused when asked."""
    p = parse_source(SHAPES, "shapes.py", "MINI")
    d = compute_dependences(p)
    s = Schedule(p)
    assert not [c for c in generate("unroll", s, d, target=TARGET) if isinstance(c[0], Vectorize)]
    cands = _vectorized(s)
    assert [c[0].touched() for c in cands] == [frozenset({"S0"})]
    carried = s.then(Vectorize(((("S2",), 3),)))
    assert "carries a dependence" in check_schedule(d, carried)


def test_refused_on_a_parallel_loop_and_on_a_loop_writing_a_scalar():
    p = parse_file(kernel_path("gemm"), "MINI")
    d = compute_dependences(p)
    par = Schedule(p).then(Parallelize(((("S1",), 5),)))
    assert check_schedule(d, par) is None
    assert "OpenMP" in check_schedule(d, par.then(Vectorize(((("S1",), 5),))))
    q = parse_source('''
SIZES = {"MINI": dict(N=16)}
def kernel(N: int, A: f64[N, N], y: f64[N]):
    for i in range(N):
        for j in range(N):
            t = A[i, j] * 2.0
            A[i, j] = t + 1.0
OUTPUTS = ["A"]
''', "scalar.py", "MINI")
    dq = compute_dependences(q)
    assert not _vectorized(Schedule(q))
    assert "scalar" in check_schedule(dq, Schedule(q, (Vectorize(((("S0", "S1"), 3),)),)))


def test_json_round_trip_of_a_marked_schedule():
    p = parse_file(kernel_path("atax"), "MINI")
    s = Schedule(p, tuple(_vectorized(Schedule(p))[0]))
    back = Schedule.from_json(p, s.to_json())
    assert back.identity == s.identity and Transform.from_json(s.steps[0].to_json()) == s.steps[0]


@pytest.mark.parametrize("kernel", ["gemm", "atax", "jacobi-2d", "heat-3d", "covariance"])
def test_marked_schedules_compute_what_the_original_does(kernel, tmp_path):
    """Every vectorize candidate, on the original and behind the parallel level's first
    candidate, at one and two threads."""
    p = parse_file(kernel_path(kernel), "MINI")
    d = compute_dependences(p)
    s = Schedule(p)
    bases = [s] + [s.then(*c) for c in generate("parallel", s, d, target=TARGET)[:1]]
    variants = [b.then(*c) for b in bases for c in _vectorized(b)]
    variants = [v for v in variants if check_schedule(d, v) is None]
    assert variants
    assert all("#pragma omp simd" in program_c(p, [v.lowered]) for v in variants)
    assert differential(p, variants, tmp_path, threads=1) == []
    assert differential(p, variants, tmp_path, threads=2) == []
