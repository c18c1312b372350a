"""The analytic cost terms: what they see in a schedule, checked on schedules whose effect is known.

No timing: the terms are compared with each other and with exact counts."""
from __future__ import annotations

import math

import pytest

from helpers import TARGET
from looper.costmodel import terms
from looper.ir.rows import inverse_steps
from looper.ir.schedule import Row
from looper.lang.parse import parse_file
from looper.poly.count import count_points
from looper.target.limits import Limits
from looper.search.budget import Ranking, ranked
from looper.search.beam import beam_search
from looper.search.policy import policy_for
from looper.poly.deps import compute_dependences, self_flow
from looper.transforms.schedule import Schedule

from conftest import kernel_path

# seidel-2d's measuring search's answer at MEDIUM: isl's schedule, a wavefront over its three
# rows, a time tile.  Its innermost loop carries no dependence; the original's (j) carries
# A[i][j-1] -> A[i][j] at distance 1.
SEIDEL_WAVEFRONT = [
    {"kind": "islschedule", "rows": [["S0", [[[0, 0, 0], 0], [[1, 0, 0], 0], [[0, 0, 0], 0], [[1, 1, 0], 0],
                                             [[0, 0, 0], 0], [[2, 1, 1], 0], [[0, 0, 0], 0]]]], "variant": "pluto"},
    {"kind": "skew", "statements": ["S0"], "rows": [1, 3, 5], "matrix": [[1, 1, 1], [0, 1, 0], [0, 0, 1]]},
]
SEIDEL_TIMETILE = SEIDEL_WAVEFRONT + [
    {"kind": "reverse", "statements": ["S0"], "row": 5},
    {"kind": "interchange", "statements": ["S0"], "row_a": 1, "row_b": 3},
    {"kind": "timetile", "statements": ["S0"], "rows": [1, 3, 5], "matrix": [[1, 0, 0], [0, 1, 0], [0, 1, 1]],
     "sizes": [16, 32, 64]},
]


@pytest.fixture(scope="module")
def seidel():
    return parse_file(kernel_path("seidel-2d"), "MEDIUM")


def test_a_recurrence_in_the_innermost_loop_runs_at_its_latency(seidel):
    """seidel-2d's j loop waits for A[i][j-1]; the wavefront's innermost loop waits for nothing."""
    before = terms.estimate(Schedule(seidel).lowered, TARGET)
    after = terms.estimate(Schedule.from_json(seidel, SEIDEL_WAVEFRONT).lowered, TARGET)
    assert before.chain_share == 1.0 and after.chain_share == 0.0
    assert after.compute < before.compute / 2


@pytest.mark.parametrize("seq", [[], SEIDEL_TIMETILE], ids=["original", "timetile"])
def test_measured_limits_are_read_in_their_units(seidel, seq):
    """`Limits` keeps GFLOP/s and GB/s: a target that measured what the terms assume without
    measurements estimates the same seconds.  (The peak was once read as flop/s: every compute and
    cache term a billion times too long on a machine `looper machine` had measured, and the fork,
    barrier and DRAM terms lost beside them.)"""
    lanes = TARGET.lanes(8)
    peak = 4 * lanes * terms.DEFAULT_GHZ * TARGET.threads  # GFLOP/s: two FMA pipes per thread
    measured = TARGET.with_limits(Limits(
        TARGET.threads, peak, 2 * peak, terms.DEFAULT_DRAM_PER_THREAD * TARGET.threads / 1e9, lanes_double=lanes,
        fork_seconds=terms.DEFAULT_FORK, region_seconds=terms.DEFAULT_REGION))
    L = Schedule.from_json(seidel, seq).lowered if seq else Schedule(seidel).lowered
    assumed, read = terms.estimate(L, TARGET), terms.estimate(L, measured)
    assert read.seconds == pytest.approx(assumed.seconds, rel=1e-9)
    assert read.compute == pytest.approx(assumed.compute, rel=1e-9) and read.forks == assumed.forks
    assert 1e-3 < read.seconds < 10.0  # seidel-2d MEDIUM: 1.4e8 flops, about 0.1 s as gcc runs it


def test_a_reduction_is_a_chain_and_a_parallel_innermost_loop_is_not():
    mm = parse_file(kernel_path("2mm"), "MINI")  # k innermost: tmp[i][j] += ... along k
    assert terms.estimate(Schedule(mm).lowered, TARGET).chain_share > 0.5
    jacobi = parse_file(kernel_path("jacobi-1d"), "MINI")  # i innermost: reads A, writes B
    assert terms.estimate(Schedule(jacobi).lowered, TARGET).chain_share == 0.0


def test_a_sparse_short_flow_runs_scalar_and_a_recurrence_as_a_chain(seidel):
    """floyd-warshall's j loop reads the path[i][k] its iteration j = k wrote (one source per row):
    no chain, but gcc's alias check sends it to the scalar loop, where it ran 82 ms at MEDIUM
    against the 7 ms vector speed was estimated at.  seidel-2d's j loop waits for A[i][j-1]
    everywhere: a recurrence.  jacobi-1d's innermost loop carries nothing."""
    from looper.poly.legality import ShortFlow, short_flow
    floyd = parse_file(kernel_path("floyd-warshall"), "MINI")
    jacobi = parse_file(kernel_path("jacobi-1d"), "MINI")
    lanes = TARGET.lanes(8)

    def innermost(program):
        L = Schedule(program).lowered
        st = program.statements[0]
        row = terms._chain(st, L, terms._facts(program)[st.name])[-1].row
        return short_flow(self_flow(program, st.name), L, st.name, row, lanes)

    assert innermost(floyd) is ShortFlow.SPARSE
    assert innermost(seidel) is ShortFlow.RECURRENCE
    assert innermost(jacobi) is ShortFlow.NONE
    t = terms.estimate(Schedule(floyd).lowered, TARGET)
    assert t.vector_share == 0.0 and t.chain_share == 0.0  # scalar: neither lanes nor a chain


def test_the_compute_term_counts_operations_not_flops():
    """An integer kernel's add, compare and select cost time although they are no flops: the
    terms count floyd-warshall's four operations a point (compare, add, select, the add of the
    branch it takes), its flop count stays 0; a floating statement's operations are its flops."""
    from looper.poly.flops import statement_flops, statement_operations
    floyd = parse_file(kernel_path("floyd-warshall"), "MINI").statements[0]
    assert (statement_operations(floyd), statement_flops(floyd)) == (4, 0)
    gemm = parse_file(kernel_path("gemm"), "MINI")
    for st in gemm.statements:
        assert statement_operations(st) == max(1, statement_flops(st))
    fw = parse_file(kernel_path("floyd-warshall"), "MINI")
    assert terms.estimate(Schedule(fw).lowered, TARGET).flops == 0


def _chain_product(program, seq) -> tuple[float, int]:
    st = program.statements[0]
    L = (Schedule.from_json(program, seq) if seq else Schedule(program)).lowered
    facts = terms._facts(program)[st.name]
    return math.prod(l.extent for l in terms._chain(st, L, facts)), count_points(st.domain)


@pytest.mark.parametrize("seq", [[], SEIDEL_WAVEFRONT, SEIDEL_TIMETILE], ids=["original", "wavefront", "timetile"])
def test_loop_counts_of_skewed_and_tiled_nests_follow_the_instances(seidel, seq):
    """The product of a statement's loop counts is its instances within a small factor (partial
    tiles), where bounding boxes overstated a skewed time tile's by 50x."""
    product, instances = _chain_product(seidel, seq)
    assert instances <= product * 1.01 and product < 2.5 * instances


def test_a_skewed_loop_runs_its_projection_not_its_bounding_box():
    """rows (t, t+i, 2t+i+j) over a box T x N x N: the second and third loops run N times each
    per outer iteration (their bounding boxes say T + N and 2T + 2N)."""
    box = [(0, 9), (0, 99), (0, 99)]
    rows = (Row((1, 0, 0)), Row((1, 1, 0)), Row((2, 1, 1)))
    assert terms._extents(rows, [0, 1, 2], box) == pytest.approx([10, 100, 100])
    tiled = (Row((1, 0, 0), div=4), Row((1, 1, 0), div=16), Row((1, 0, 0)), Row((1, 1, 0)))
    ext = terms._extents(tiled, [0, 1, 2, 3], box)
    assert ext[2:] == [4, 16] and ext[0] == 3 and 7 <= ext[1] <= 9  # (100 + 9) / 16 <= 7 + a partial


def test_a_row_the_loops_around_it_fix_runs_once_and_moves_nothing():
    """isl repeats a statement's rows where it has fewer loops than the band: rows (i, j, j) run
    N x N x 1 times, and the second j moves nothing (it took half of j's step before, and its
    bounding box's N times: cholesky's diagonal update ran N^3 times)."""
    box = [(0, 99), (0, 99)]
    rows = (Row((1, 0)), Row((0, 1)), Row((0, 1)))
    assert terms._extents(rows, [0, 1, 2], box) == pytest.approx([100, 100, 1])
    steps = inverse_steps(2, rows, [0, 1, 2])
    assert steps.tolist() == [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    skewed = (Row((1, 0)), Row((1, 1)), Row((2, 1)))  # (i, i+j, 2i+j): the third is fixed too
    assert terms._extents(skewed, [0, 1, 2], box) == pytest.approx([100, 100, 1])


def test_isl_schedules_of_a_triangular_solver_count_its_instances():
    """cholesky under isl's schedules: every statement's loops run about its instances (the
    bounding box of a triangle, up to 6x, not N^2 more: its one-loop statement under rows i, i,
    i ran N^3 times, and the terms put a schedule that runs 1.4x at 0.008x)."""
    from looper.transforms.isl_schedule import VARIANTS, IslSchedule, isl_variants
    program = parse_file(kernel_path("cholesky"), "SMALL")
    variants = [IslSchedule(rows, v) for v, rows in zip(VARIANTS, isl_variants(program)) if rows is not None]
    assert variants
    facts = terms._facts(program)
    for step in variants:
        L = Schedule(program, (step,)).lowered
        for st in program.statements:
            product = math.prod(l.extent for l in terms._chain(st, L, facts[st.name]))
            assert count_points(st.domain) <= product * 1.01 and product <= 6.5 * count_points(st.domain), st.name
        assert terms.estimate(L, TARGET).seconds < 4 * terms.estimate(Schedule(program).lowered, TARGET).seconds


def test_the_ranking_puts_a_seidel_line_without_an_inner_recurrence_first(seidel):
    """The default's ranking on seidel-2d MEDIUM (nothing compiled): its best candidate's innermost
    loop carries no recurrence, and it is estimated well above the skewed time tile whose
    innermost loop still waits on A[i][j-1] (the default's answer before: 0.26x the measuring
    search's, measured in PolyBench's harness)."""
    d = compute_dependences(seidel)
    result = beam_search(seidel, d, Ranking(seidel, TARGET), policy_for("hybrid", target=TARGET))
    best = ranked(result, regions=True)[0]
    assert terms.estimate(best.schedule.lowered, TARGET).chain_share == 0.0
    assert best.family == "timetile" or best.threaded


def test_a_register_tile_inside_a_cache_tile_runs_within_it():
    """gemm's cache tile (168 x 192 x 672 over i, k, j) around a register tile (8 x 24): the register
    tile's loops run 168/8 and 672/24 times per cache tile, not over the whole matrix (counting
    them over the whole matrix made every cache tile around a register tile look 10x costlier)."""
    box = [(0, 1999), (0, 2599), (0, 2299)]  # i, k, j
    rows = (Row((1, 0, 0), div=168), Row((0, 1, 0), div=192), Row((0, 0, 1), div=672),
            Row((1, 0, 0), div=8), Row((0, 0, 1), div=24), Row((0, 1, 0)), Row((1, 0, 0)), Row((0, 0, 1)))
    assert terms._extents(rows, list(range(8)), box) == [12, 14, 4, 21, 28, 192, 8, 24]


ROW_AND_ROWS = '''
SIZES = {"L": dict(N=4000, M=4000)}
def kernel(N: int, M: int, A: f64[N, M], s: f64[N]):
    for j in range(N):
        for k in range(M):
            s[j] += A[0, k] * A[j, k]
OUTPUTS = ["s"]
'''


def test_a_reference_the_loop_does_not_move_comes_once():
    """Along j, A[0][k] stays where A[j][k] moves on: under a j loop whose footprint does not fit,
    row 0 comes once and each row of A[j][k] once.  Reuse counted per array brought row 0 again
    every j, since another access of A moves (cholesky's A[i][k] beside A[j][k])."""
    from looper.lang.parse import parse_source
    p = parse_source(ROW_AND_ROWS, "row.py", "L")
    L = Schedule(p).lowered
    facts = terms._facts(p)
    chains = {st.name: terms._chain(st, L, facts[st.name]) for st in p.statements}
    mem = terms._Memory(L, terms._rates(TARGET, 8), facts, chains, p)
    l2 = mem.capacities(1.0)[1]
    row = 4000 * 8
    assert row * 3 < l2 < 4000 * row  # a few rows fit, the matrix does not
    traffic = mem._traffic(L.tree.roots[0], l2)
    of_a = sorted(b for ref, b in traffic.items() if ref[0] == "A")
    assert of_a == pytest.approx([row, 4000 * row], rel=0.01)


@pytest.mark.parametrize("kernel", ["symm", "doitgen"])
def test_the_terms_kept_across_a_search_equal_each_candidate_s_terms_alone(kernel):
    """`Estimates` keeps each program's facts, loops and nest traffic across candidates (by the
    rows they are a function of, and by content for the rewrites every expansion builds anew):
    every candidate a search of the whole space visits gets exactly the terms it gets alone."""
    from helpers import HashScores
    from looper.search.policy import SearchPolicy
    p = parse_file(kernel_path(kernel), "MINI")
    d = compute_dependences(p)
    result = beam_search(p, d, HashScores(1), SearchPolicy(beam=2, max_affine=1, grown=True))
    legal = [e.schedule.lowered for e in result.explored if e.rejected is None]
    assert any(L.program.rewritten for L in legal) and len(legal) > 50
    kept = terms.Estimates(TARGET)
    for L in legal + legal[::-1]:
        assert kept.of(L) == terms.estimate(L, TARGET), L.identity
    assert len(kept.known) < len({id(L.program) for L in legal})  # rewrites shared their facts
