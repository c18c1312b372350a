"""Scalar privatization: a loop that writes a kernel-local scalar in every iteration is parallel
when each iteration only reads what it wrote itself, and never otherwise."""
from __future__ import annotations

import re

import pytest

from looper.codegen.harness import program_c
from looper.lang.parse import parse_file, parse_source
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_step
from looper.transforms import Parallelize
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import differential


def _parallelize(s: Schedule, deps, label_row: int, stmts: tuple[str, ...]):
    step = Parallelize(((stmts, label_row),))
    return step, check_step(deps, s.lowered, step, s.then(step).lowered)


def _pragmas(s: Schedule) -> list[str]:
    text = program_c(s.program, [s.lowered])
    return re.findall(r"#pragma omp parallel for[^\n]*", text)


def test_symm_column_loop_is_parallel_with_a_private_temp2(tmp_path):
    p = parse_file(kernel_path("symm"), "MINI")
    d = compute_dependences(p)
    s = Schedule(p)
    every = ("S0", "S1", "S2", "S3")
    step, why = _parallelize(s, d, 3, every)  # j: temp2 is rewritten in every j iteration
    assert why is None
    _, why_i = _parallelize(s, d, 1, every)  # i: C[k, j] is updated across i iterations
    assert why_i and "carries a dependence" in why_i
    par = s.then(step)
    assert _pragmas(par) == ["#pragma omp parallel for private(c5, temp2)"]
    assert differential(p, [par], tmp_path, threads=4) == []


def test_deriche_row_filters_are_parallel(tmp_path):
    p = parse_file(kernel_path("deriche"), "MINI")
    d = compute_dependences(p)
    s = Schedule(p)
    nests = [l for l in s.lowered.tree.nests if len(l.statements) > 1]
    steps = [Parallelize(((tuple(sorted(n.statements)), n.row),)) for n in nests]
    for step in steps:
        assert check_step(d, s.lowered, step, s.then(step).lowered) is None
    both = s.then(Parallelize(tuple(loop for st in steps for loop in st.loops)))
    pragmas = _pragmas(both)
    assert len(pragmas) == 4
    assert "xm1, ym1, ym2" in pragmas[0] and "tp1, tp2, yp1, yp2" in pragmas[3]
    assert differential(p, [both], tmp_path, threads=4) == []


HEADER = '''
SIZES = {"MINI": dict(N=40)}
def init(N: int, A: f64[N], B: f64[N], C: f64[N]):
    for i in range(N):
        A[i] = f64(i % 7) / 7
'''

LIVE_OUT = HEADER + '''
def kernel(N: int, A: f64[N], B: f64[N], C: f64[N]):
    s: f64 = 0.0
    for i in range(N):
        s = A[i] * 2.0
        B[i] = s + 1.0
    C[0] = s
OUTPUTS = ["B", "C"]
'''

CARRIED = HEADER + '''
def kernel(N: int, A: f64[N], B: f64[N], C: f64[N]):
    s: f64 = 0.0
    for i in range(N):
        B[i] = s + A[i]
        s = A[i] * 2.0
OUTPUTS = ["B"]
'''

READ_ONLY = HEADER + '''
def kernel(N: int, A: f64[N], B: f64[N], C: f64[N]):
    s: f64 = 3.0
    for i in range(N):
        B[i] = s * A[i]
OUTPUTS = ["B"]
'''


def _parallelize_loop_of(source: str, stmt: str):
    """The program, the step parallelizing the loop around `stmt`, and why it is illegal (None: legal)."""
    p = parse_source(source, "scalars.py", "MINI")
    s = Schedule(p)
    loop = next(l for l in s.lowered.tree.loops() if stmt in l.statements)
    step = Parallelize(((tuple(sorted(loop.statements)), loop.row),))
    return p, s.then(step), check_step(compute_dependences(p), s.lowered, step, s.then(step).lowered)


@pytest.mark.parametrize("source, stmt", [(LIVE_OUT, "S2"), (CARRIED, "S1")], ids=["read-after", "carried"])
def test_a_scalar_whose_value_leaves_the_iteration_keeps_the_loop_sequential(source, stmt):
    _p, _par, why = _parallelize_loop_of(source, stmt)
    assert why and "carries a dependence" in why


def test_a_scalar_the_loop_only_reads_stays_shared(tmp_path):
    p, par, why = _parallelize_loop_of(READ_ONLY, "S1")
    assert why is None
    assert _pragmas(par) == ["#pragma omp parallel for"]  # a private s would be uninitialized
    assert differential(p, [par], tmp_path, threads=4) == []
