"""Load balance of parallel loops: a loop whose iterations do uneven work (a triangle) is dealt
cyclically, in chunks of one cache line where neighbouring iterations write neighbouring
elements; even loops keep plain `static`; either way the outputs are the original's."""
from __future__ import annotations

import re

from looper.codegen.harness import program_c
from looper.lang.parse import parse_source
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_step
from looper.transforms import Parallelize
from looper.transforms.schedule import Schedule

from helpers import differential

SHAPES = '''
SIZES = {"MINI": dict(N=40)}
def init(N: int, A: f64[N, N], X: f32[N, N]):
    for i in range(N):
        for j in range(N):
            A[i, j] = f64((i * j + 1) % N) / N
            X[i, j] = f32((i + 2 * j) % N) / N
def kernel(N: int, A: f64[N, N], B: f64[N, N], C: f64[N, N], D: f64[N, N], E: f64[N, N], X: f32[N, N]):
    for i in range(N):
        for j in range(i + 1):
            B[i, j] = A[i, j] * 2.0 + A[j, i]
    for i in range(N):
        for j in range(N):
            C[i, j] = A[j, i] + 1.0
    for j in range(N):
        for i in range(j + 1):
            D[i, j] = A[i, j] * 3.0
    for k in range(N):
        for i in range(k + 1, N):
            for j in range(k + 1, N):
                E[i, j] = E[i, j] + A[i, k] * A[k, j]
    for j in range(N):
        for i in range(j, N):
            X[i, j] = X[i, j] * f32(2.0)
OUTPUTS = ["B", "C", "D", "E", "X"]
'''


def _parallel_everywhere():
    """SHAPES with every nest's parallel loop marked: the outer loop of the first three and the
    last, the `i` loop inside `k` of the fourth."""
    p = parse_source(SHAPES, "shapes.py", "MINI")
    d = compute_dependences(p)
    s = Schedule(p)
    loops = []
    for nest in s.lowered.tree.nests:
        loop = nest if nest.statements != {"S3"} else nest.loops[0]
        loops.append((tuple(sorted(loop.statements)), loop.row))
    step = Parallelize(tuple(loops))
    assert check_step(d, s.lowered, step, s.then(step).lowered) is None
    return p, s.then(step)


def test_uneven_loops_are_dealt_cyclically(tmp_path):
    p, par = _parallel_everywhere()
    pragmas = re.findall(r"#pragma omp parallel for[^\n]*", program_c(p, [par.lowered]))
    assert len(pragmas) == 5
    triangle_rows, square, triangle_columns, trailing, float_columns = pragmas
    assert "schedule(static, 1)" in triangle_rows  # B[i, j]: rows apart, no line shared
    assert "schedule" not in square
    assert "schedule(static, 8)" in triangle_columns  # D[i, j], j parallel: 8 doubles a line
    assert "schedule" not in trailing  # uneven over k, even within one k
    assert "schedule(static, 16)" in float_columns  # 16 floats a line
    assert differential(p, [par], tmp_path, threads=4) == []


def test_original_schedule_has_no_parallel_loop_to_balance():
    p = parse_source(SHAPES, "shapes.py", "MINI")
    assert "schedule(" not in program_c(p, [Schedule(p).lowered])
