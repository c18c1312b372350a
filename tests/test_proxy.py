"""A measuring search's stand-in with fewer time steps (search.proxy)."""
from __future__ import annotations

import pytest

from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule
from looper.search.beam import beam_search
from looper.search.factory import search_from_options
from looper.search.policy import SearchPolicy
from looper.search.proxy import carry, stand_in, step_sizes

from conftest import kernel_path
from helpers import HashScores, differential


@pytest.mark.parametrize("kernel, steps", [
    ("jacobi_1d", ("TSTEPS",)),  # N sizes the arrays it writes, even though they are 1-D
    ("jacobi_2d", ("TSTEPS",)),
    ("heat_3d", ("TSTEPS",)),
    ("seidel_2d", ("TSTEPS",)),
    ("fdtd_2d", ("TMAX",)),  # TMAX sizes _fict_, which the kernel only reads
    ("gemm", ()),
    ("trisolv", ()),
])
def test_time_step_sizes(kernel, steps):
    assert step_sizes(parse_file(kernel_path(kernel), "MINI")) == steps


def test_stand_in_divides_the_steps_and_keeps_at_least_a_hundred():
    large = parse_file(kernel_path("jacobi_2d"), "LARGE")
    made = stand_in(large, 8)
    assert made.steps == {"TSTEPS": (500, 100)}  # 500 / 8 = 63, raised to the minimum
    assert made.program.sizes == dict(large.sizes, TSTEPS=100)
    assert made.describe() == "TSTEPS=100 (of 500)"
    xl = stand_in(parse_file(kernel_path("jacobi_2d"), "EXTRALARGE"), 8)
    assert xl.steps == {"TSTEPS": (1000, 125)}
    assert "already few" in stand_in(parse_file(kernel_path("jacobi_2d"), "MEDIUM"), 8)
    assert "no size counts time steps" in stand_in(parse_file(kernel_path("gemm"), "LARGE"), 8)


def test_carry_replays_the_stand_ins_best_on_the_program_and_they_compute_the_same(tmp_path):
    program = parse_file(kernel_path("jacobi_1d"), "LARGE")
    made = stand_in(program, 4)
    assert made.steps == {"TSTEPS": (500, 125)}
    found = beam_search(made.program, compute_dependences(made.program), HashScores(),
                        SearchPolicy(beam=2, max_affine=1, grown=True))
    assert found.best.steps
    deps = compute_dependences(program)
    result = carry(found, program, deps, keep=4)
    assert result.best.program is program
    assert result.best.describe() == found.best.describe()
    carried = [e.schedule for e in result.evaluated if e.schedule.steps]
    assert 1 < len(carried) <= 4
    structures = [s.structure().describe() for s in carried]
    assert len(set(structures)) == len(structures)  # one schedule per loop structure
    assert all(s.program is program and check_schedule(deps, s) is None for s in carried)
    assert differential(program, carried, tmp_path) == []


def test_a_measuring_search_ranks_on_the_stand_in_and_answers_for_the_program(tmp_path):
    program = parse_file(kernel_path("jacobi_1d"), "LARGE")
    search = search_from_options(program, "measure", beam=1, max_affine=1, max_fusion=0, repeats=1,
                                 threads=2, memoize=False, step_proxy=4)
    assert search.stand_in is not None and search.stand_in.steps == {"TSTEPS": (500, 125)}
    assert any("TSTEPS=125 (of 500)" in n for n in search.notes)
    result = search.run(compute_dependences(program), keep_open=True)
    try:
        assert search.stand_in_measure.measured > 0  # the candidates ran with fewer steps
        assert result.best.program is program
        if result.best.steps:
            assert result.best_score.detail.startswith("confirmed")  # timed again at the program's sizes
            assert differential(program, [result.best], tmp_path) == []
    finally:
        search.close()


def test_no_stand_in_says_why():
    gemm = parse_file(kernel_path("gemm"), "LARGE")
    s = search_from_options(gemm, "measure", step_proxy=8, memoize=False)
    s.close()
    assert s.stand_in is None and any("no stand-in with fewer time steps: no size counts" in n for n in s.notes)
    jacobi = parse_file(kernel_path("jacobi_2d"), "LARGE")
    s = search_from_options(jacobi, "model", step_proxy=8)
    assert s.stand_in is None and any("only a measuring search" in n for n in s.notes)
