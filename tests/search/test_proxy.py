"""A measuring search's stand-in with fewer time steps or smaller sizes (search.proxy)."""
from __future__ import annotations

import pytest

from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule
from looper.search.beam import beam_search
from looper.tune import Evaluator, TuneOptions, prepare
from looper.search.policy import SearchPolicy
from looper.search.proxy import Proxy, carry, lowered_sizes, stand_in, step_sizes

from conftest import kernel_path
from helpers import TARGET, HashScores, differential


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
    made = stand_in(large, Proxy(steps=8))
    assert made.lowered == {"TSTEPS": (500, 100)}  # 500 / 8 = 63, raised to the minimum
    assert made.program.sizes == dict(large.sizes, TSTEPS=100)
    assert made.describe() == "TSTEPS=100 (of 500)"
    xl = stand_in(parse_file(kernel_path("jacobi_2d"), "EXTRALARGE"), Proxy(steps=8))
    assert xl.lowered == {"TSTEPS": (1000, 125)}
    assert "already small" in stand_in(parse_file(kernel_path("jacobi_2d"), "MEDIUM"), Proxy(steps=8))
    assert "no size counts time steps" in stand_in(parse_file(kernel_path("gemm"), "LARGE"), Proxy(steps=8))


def test_carry_replays_the_stand_ins_best_on_the_program_and_they_compute_the_same(tmp_path):
    program = parse_file(kernel_path("jacobi_1d"), "LARGE")
    made = stand_in(program, Proxy(steps=4))
    assert made.lowered == {"TSTEPS": (500, 125)}
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
    search = prepare(program, TuneOptions(evaluator=Evaluator.MEASURE, beam=1, max_affine=1, max_fusion=0, repeats=1,
                                          memo=False, proxy=Proxy(steps=4)), TARGET)
    assert search.stand_in is not None and search.stand_in.lowered == {"TSTEPS": (500, 125)}
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
    s = prepare(gemm, TuneOptions(evaluator=Evaluator.MEASURE, proxy=Proxy(steps=8), memo=False), TARGET)
    s.close()
    assert s.stand_in is None and any("no stand-in (time steps / 8): no size counts" in n for n in s.notes)
    jacobi = parse_file(kernel_path("jacobi_2d"), "LARGE")
    s = prepare(jacobi, TuneOptions(proxy=Proxy(steps=8)), TARGET)
    assert s.stand_in is None and any("only a measuring search" in n for n in s.notes)


def test_proxy_of_the_options():
    assert Proxy.of(None, None) is None and Proxy.of(1, 1) is None
    assert Proxy.of(8, None) == Proxy(steps=8)
    assert Proxy.of(None, 2).describe() == "sizes / 2"
    assert Proxy.of(8, 2).describe() == "time steps / 8 and sizes / 2"


def test_a_smaller_stand_in_divides_every_size_and_keeps_room_for_a_block():
    xl = parse_file(kernel_path("gemm"), "EXTRALARGE")
    made = stand_in(xl, Proxy(sizes=2))
    assert made.lowered == {"NI": (2000, 1000), "NJ": (2300, 1150), "NK": (2600, 1300)}
    assert made.program.sizes == {"NI": 1000, "NJ": 1150, "NK": 1300}
    assert [s.name for s in made.program.statements] == [s.name for s in xl.statements]
    small = parse_file(kernel_path("gemm"), "SMALL")  # NI=60 stays: below the minimum already
    assert lowered_sizes(small, Proxy(sizes=2)) == {"NJ": 64, "NK": 64}
    assert "its sizes are already small" in stand_in(parse_file(kernel_path("gemm"), "MINI"), Proxy(sizes=2))
    # both: the time steps are divided by the product, at least 100 kept
    jacobi = parse_file(kernel_path("jacobi_2d"), "EXTRALARGE")
    assert lowered_sizes(jacobi, Proxy(steps=4, sizes=2)) == {"TSTEPS": 125, "N": 1400}
    assert lowered_sizes(jacobi, Proxy(steps=16, sizes=2)) == {"TSTEPS": 100, "N": 1400}
    # without steps a time step is divided as a size, and still at least 100 are kept
    assert lowered_sizes(jacobi, Proxy(sizes=16)) == {"TSTEPS": 100, "N": 175}


IDLE_WHEN_SMALL = """
SIZES = {"LARGE": dict(N=200)}


def kernel(N: int, A: f64[N]):
    for i in range(150, N):
        A[i] = A[i] + 1.0


OUTPUTS = ["A"]
"""


def test_no_smaller_stand_in_where_a_statement_would_never_run(tmp_path):
    path = tmp_path / "tail.py"
    path.write_text(IDLE_WHEN_SMALL)
    program = parse_file(path, "LARGE")
    assert "a statement never runs at the stand-in's sizes" in stand_in(program, Proxy(sizes=2))


def test_carry_from_a_smaller_stand_in_replays_on_the_program_and_computes_the_same(tmp_path):
    program = parse_file(kernel_path("gemm"), "MEDIUM")
    made = stand_in(program, Proxy(sizes=2))
    assert made.program.sizes == {"NI": 100, "NJ": 110, "NK": 120}
    found = beam_search(made.program, compute_dependences(made.program), HashScores(),
                        SearchPolicy(beam=2, max_affine=1, grown=True))
    deps = compute_dependences(program)
    result = carry(found, program, deps, keep=4)
    carried = [e.schedule for e in result.evaluated if e.schedule.steps]
    assert carried and result.best.describe() == found.best.describe()
    assert all(s.program is program and check_schedule(deps, s) is None for s in carried)
    assert differential(program, carried, tmp_path) == []


def test_optimize_with_a_size_proxy_and_the_model_says_it_measures_nothing():
    from looper.api import optimize
    kernel = optimize(kernel_path("gemm"), "MEDIUM", evaluator="model", proxy=Proxy(sizes=2), verify=False,
                      speed_guard=False)
    assert any("no stand-in (sizes / 2): only a measuring search uses one" in n for n in kernel.notes)
