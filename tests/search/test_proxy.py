"""A measuring search's stand-in with fewer time steps or smaller sizes (search.proxy)."""
from __future__ import annotations

import pytest

from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule
from looper.search.beam import beam_search
from looper.tune import Evaluator, TuneOptions, prepare
from looper.search.policy import SearchPolicy
from looper.lang.resize import Origin
from looper.search.proxy import Proxy, automatic, carry, lowered_sizes, stand_in, step_sizes

from conftest import SHARED, kernel_path
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
    s = prepare(jacobi, TuneOptions(evaluator=Evaluator.MODEL, proxy=Proxy(steps=8)), TARGET)
    assert s.stand_in is None and any("a search that measures nothing needs none" in n for n in s.notes)


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
    assert any("no stand-in (sizes / 2): a search that measures nothing needs none" in n for n in kernel.notes)


def test_the_hybrid_takes_a_stand_in_for_a_long_program():
    """A run of a second or more: sizes divided by the least factor that brings a nest of depth
    d near a quarter of a second (the work shrinks as the factor to the d), at most 4."""
    gemm, mvt = parse_file(kernel_path("gemm"), "MINI"), parse_file(kernel_path("mvt"), "MINI")
    assert automatic(gemm, None) is None and automatic(gemm, 0.9) is None
    assert automatic(gemm, 2.0) == Proxy(sizes=2)  # 2 s / 8 = 0.25 s
    assert automatic(gemm, 6.0) == Proxy(sizes=3) and automatic(gemm, 8.0) == Proxy(sizes=4)
    assert automatic(gemm, 500.0) == Proxy(sizes=4)
    assert automatic(mvt, 1.0) == Proxy(sizes=2) and automatic(mvt, 3.0) == Proxy(sizes=4)


PB = SHARED / "polybench-c"
needs_polybench = pytest.mark.skipif(not (PB / "utilities" / "polybench.c").exists(),
                                     reason=f"PolyBench/C sources not found in {PB}")


@needs_polybench
def test_a_c_scops_stand_in_is_the_file_preprocessed_with_smaller_sizes():
    from looper.lang.c.cfile import parse_c_file
    flags = (f"-I{PB / 'utilities'}", "-DLARGE_DATASET")
    cfile = parse_c_file(PB / "linear-algebra/blas/gemm/gemm.c", flags)
    program = cfile.scops[0].program
    made = stand_in(program, Proxy(sizes=2), Origin(cfile, 0))
    assert made.lowered == {"NI": (1000, 500), "NJ": (1100, 550), "NK": (1200, 600)}
    assert [s.name for s in made.program.statements] == [s.name for s in program.statements]
    assert made.program.statements[1].domain.count_val().to_python() == 500 * 550 * 600
    assert "time steps are not told" in stand_in(program, Proxy(steps=4), Origin(cfile, 0))
    # the sizes a file sets itself do not move with -D: no stand-in
    fixed = parse_c_file(PB / "linear-algebra/blas/gemm/gemm.c", flags + ("-DNI=1000", "-DNJ=1100", "-DNK=1200"))
    assert Origin(fixed, 0).sizes(fixed.scops[0].program) == {"NI": 1000, "NJ": 1100, "NK": 1200}


def test_sizes_a_c_file_sets_itself_give_no_stand_in(tmp_path):
    from looper.lang.c.cfile import parse_c_file
    src = tmp_path / "k.c"
    src.write_text("void k(double A[300][300])\n{\n  int i, j, n = 300;\n#pragma scop\n"
                   "  for (i = 0; i < n; i++)\n    for (j = 0; j < n; j++)\n      A[i][j] = A[i][j] * 2.0;\n"
                   "#pragma endscop\n}\n")
    cfile = parse_c_file(src)
    why = stand_in(cfile.scops[0].program, Proxy(sizes=2), Origin(cfile, 0))
    assert isinstance(why, str) and "do not follow -D flags" in why, why


@needs_polybench
@pytest.mark.parametrize("team_start", [0.0, 1.0])
def test_the_default_search_measures_its_rounds_on_a_stand_in_of_a_c_file(tmp_path, team_start):
    """`looper optimize gemm.c --size-proxy 2` with the hybrid: every round's candidate runs at
    half the sizes, the finalists and the original at the file's own, and the answer written
    is verified (its outputs the original's).  The notes say once where the rounds ran: on the
    stand-in where a team starts for free, on the program where it costs a second
    (the stand-in's candidates would run a few team starts: the next test)."""
    import dataclasses

    import looper
    from looper.target import Limits, Target
    from looper.tune import HybridOptions
    limits = Limits(2, 100.0, 200.0, 20.0, 8, fork_seconds=team_start, region_seconds=1e-6)
    target = dataclasses.replace(Target.detect(threads=2), limits=limits)
    done = looper.optimize(PB / "linear-algebra/blas/gemm/gemm.c", "MEDIUM", includes=[str(PB / "utilities")],
                           evaluator="hybrid", hybrid=HybridOptions(1, 4, 2, 0), size_proxy=2, memo=False,
                           target=target)
    [k] = done.kernels
    where = [n for n in k.notes if n.startswith("candidates measured with") or n.startswith("rounds measured")]
    want = ("candidates measured with NI=100 (of 200), NJ=110 (of 220), NK=120 (of 240)" if team_start == 0
            else "rounds measured at the program's sizes after all")
    assert len(where) == 1 and where[0].startswith(want), k.notes
    assert 1 <= len(k.verified) <= 4 and all(v.schedule.program is k.program for v in k.verified)
    assert k.check is not None and k.check.skipped is None  # verified at SMALL before it was written


def test_the_rounds_leave_a_stand_in_whose_candidates_would_run_a_few_team_starts():
    """2mm LARGE on this project's EPYC: the original 1.4 s, its half-size stand-in 175 ms, the
    ranking's best 11.7x, a first parallel region of 5.1 ms: the stand-in's candidates would run
    15 ms (3 team starts), the program's 120 ms, so the rounds run on the program.  A long
    program (floyd-warshall, 23 s, 2x) keeps its stand-in, and so does a machine whose team
    starts in 74 us."""
    from looper.search.proxy import rounds_on_program
    why = rounds_on_program(0.175, 1.4, 11.7, 0.0051)
    assert why is not None and "15 ms on the stand-in" in why and "120 ms on the program" in why
    assert rounds_on_program(0.36, 23.0, 2.0, 0.0051) is None  # candidates of 11 s on the program
    assert rounds_on_program(0.175, 1.4, 11.7, 74e-6) is None  # a team's start is cheap there
    assert rounds_on_program(0.175, 1.4, 1.0, 0.0051) is None  # nothing predicted faster: no basis
    assert rounds_on_program(0.175, 1.4, 11.7, 0.0) is None  # one thread


def test_the_rounds_leave_a_stand_in_that_runs_in_a_faster_memory_regime():
    """nussinov LARGE on this project's EPYC: the original 3.1 s, its stand-in (N=834 of 2500,
    27x fewer statement instances) 60 ms, 52x faster: its table fits the caches the program's
    outgrows, and every candidate ran 40-60 ms there, where at its size a time tile ran 1.2 s and
    a plain tile 1.5 s.  At the ranking's 2.5x, 24 candidates run about a minute on the program, so
    the rounds run there.  A stand-in whose time scales with its work keeps the rounds, as does a
    program whose rounds would take minutes (floyd-warshall LARGE, 15 s) or one too short for a
    ratio of times to mean anything."""
    from looper.search.proxy import regime_apart
    why = regime_apart(0.060, 3.1, 27.0, 2.5, 24)
    assert why is not None and "52x as long as the stand-in's for 27x the work" in why and "about 60 s" in why
    assert regime_apart(0.120, 3.1, 27.0, 2.5, 24) is None  # 26x for 27x: one regime
    assert regime_apart(0.030, 15.4, 256.0, 1.5, 24) is None  # 513x for 256x, but 493 s of rounds on the program
    assert regime_apart(0.060, 3.1, 27.0, 0.5, 24) is None  # nothing predicted faster: 149 s at the original's pace
    assert regime_apart(0.060, 3.1, 27.0, 0.5, 16) is not None  # 99 s
    assert regime_apart(0.002, 0.5, 8.0, 2.0, 24) is None  # half a second: noise
    assert regime_apart(0.0, 3.1, 27.0, 2.5, 24) is None  # the stand-in's original failed


def test_a_programs_work_is_its_statement_instances():
    """The work ratio of a stand-in: gemm's two statements, NI*NJ and NI*NJ*NK instances."""
    from looper.poly.flops import instances
    gemm = parse_file(kernel_path("gemm"), "MEDIUM")
    ni, nj, nk = (gemm.sizes[k] for k in ("NI", "NJ", "NK"))
    assert instances(gemm) == ni * nj + ni * nj * nk
    half = stand_in(gemm, Proxy(sizes=2))
    assert not isinstance(half, str)
    assert instances(gemm) / instances(half.program) == pytest.approx(8.0, rel=0.05)
