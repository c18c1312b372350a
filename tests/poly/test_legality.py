"""Known-illegal transformations are rejected by the isl legality check; their legal fixes pass."""
from __future__ import annotations

from looper.lang.parse import parse_file, parse_source
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_step
from looper.search.candidates import generate
from looper.transforms import Fuse, Interchange, Parallelize, Skew, Tile
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import TARGET, differential


def _check(s: Schedule, step, deps):
    return check_step(deps, s.lowered, step, s.then(step).lowered)


def test_jacobi_1d_time_space_interchange_is_rejected():
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    d = compute_dependences(p)
    fused = Schedule(p).then(Fuse(("S0",), ("S1",), 3, (1,)))
    assert _check(Schedule(p), Fuse(("S0",), ("S1",), 3, (1,)), d) is None
    why = _check(fused, Interchange(("S0", "S1"), 1, 3), d)
    assert why and "dependence" in why


def test_seidel_2d_parallel_i_needs_a_skew():
    p = parse_file(kernel_path("seidel_2d"), "MINI")
    d = compute_dependences(p)
    s = Schedule(p)
    why = _check(s, Parallelize(((("S0",), 3),)), d)
    assert why and "carries a dependence" in why
    # the skews the generator proposes make the band permutable (tilable); a wavefront frees a loop
    skews = [t for (t, *rest) in generate("affine", s, d, target=TARGET) if isinstance(t, Skew) and not rest]
    assert skews
    assert _check(s, Tile(((("S0",), (3, 5), (8, 8)),)), d)  # not tilable as written


READ_AHEAD = '''
SIZES = {"MINI": dict(N=40)}
def init(N: int, A: f64[N], B: f64[N], C: f64[N]):
    for i in range(N):
        A[i] = f64(i % 7) / 7
def kernel(N: int, A: f64[N], B: f64[N], C: f64[N]):
    for i in range(N):
        B[i] = A[i] * 2.0 + 1.0
    for i in range(N - 1):
        C[i] = B[i + 1] - B[i]
OUTPUTS = ["C"]
'''


def test_fusion_of_a_read_ahead_consumer_needs_a_shift(tmp_path):
    p = parse_source(READ_AHEAD, "ahead.py", "MINI")
    d = compute_dependences(p)
    s = Schedule(p)
    why = _check(s, Fuse(("S0",), ("S1",), 1, (0,)), d)
    assert why and "flow dependence S0 -> S1" in why
    proposed = [t for (t, *rest) in generate("fusion", s, d, target=TARGET) if isinstance(t, Fuse) and not rest]
    assert proposed and proposed[0].shifts == (1,)
    assert _check(s, proposed[0], d) is None
    assert differential(p, [s.then(proposed[0])], tmp_path) == []


DISJOINT = '''
SIZES = {"MINI": dict(N=40)}
def init(N: int, A: f64[N], B: f64[N], C: f64[N]):
    for i in range(N):
        A[i] = f64(i % 7) / 7
def kernel(N: int, A: f64[N], B: f64[N], C: f64[N]):
    for i in range(N):
        B[i] = A[i] * 2.0
    for i in range(N):
        C[i] = 3.0
    for i in range(N):
        C[i] = C[i] + A[N - 1 - i]
OUTPUTS = ["B", "C"]
'''


def test_fusion_is_offered_only_where_the_loops_share_data():
    """Loops that touch no common element in nearby iterations are not fused (nothing to reuse);
    producer/consumer and two readers of one array are."""
    p = parse_source(DISJOINT, "disjoint.py", "MINI")
    d = compute_dependences(p)
    fusions = [(t.first, t.second) for (t, *rest) in generate("fusion", Schedule(p), d, target=TARGET) if isinstance(t, Fuse) and not rest]
    assert (("S0",), ("S1",)) not in fusions  # B and A against C: nothing in common
    assert (("S1",), ("S2",)) in fusions  # C[i] produced, then consumed in the same iteration
    # S0 and S2 both read A, but in opposite directions: iteration i of one reads A[i], of the
    # other A[N-1-i]; only near the middle are they near each other
    from looper.poly.reuse import shares_data
    L = Schedule(p).then(Fuse(("S1",), ("S2",), 1, (0,))).then(Fuse(("S0",), ("S1", "S2"), 1, (0,))).lowered
    assert shares_data(L, ("S0",), ("S2",), 1)  # i = 19, 20: A[19], A[20] one iteration apart
    assert not shares_data(L, ("S0",), ("S2",), 1, window=0)  # i = 39 - i has no solution


def test_fdtd_2d_column_loop_is_not_fused_into_the_row_loops():
    """fdtd-2d's S0 writes ey[0][j]; S1's outer loop walks rows ey[i][*], i >= 1: fused, the same
    iteration touches no common element (LARGE: 1.5x against the unfused 3.6x)."""
    p = parse_file(kernel_path("fdtd_2d"), "MINI")
    d = compute_dependences(p)
    fusions = [(t.first, t.second) for (t, *rest) in generate("fusion", Schedule(p), d, target=TARGET) if isinstance(t, Fuse) and not rest]
    assert (("S0",), ("S1",)) not in fusions
    assert (("S1",), ("S2",)) in fusions  # both read hz[i][j]
    assert (("S2",), ("S3",)) in fusions  # S3 reads what S2 wrote


def test_legality_answers_kept_by_rows_equal_each_schedule_s_own():
    """`is_parallel` and `order_violation` keep their answers on the dependences, by the rows
    they are a function of (a loop's: its statements' rows up to it).  Over the schedules a
    search of the whole space visits on adi (privatizable scalars, many nests), every loop's
    answer and every step's equal what a fresh computation says."""
    from looper import caching
    from looper.poly.legality import is_parallel, order_violation
    from looper.search.beam import beam_search
    from looper.search.policy import SearchPolicy
    from helpers import HashScores
    p = parse_file(kernel_path("adi"), "MINI")
    d = compute_dependences(p)
    result = beam_search(p, d, HashScores(2), SearchPolicy(beam=2, max_affine=1, grown=True))
    pairs = [(e.schedule, e.schedule.lowered) for e in result.explored if e.rejected is None and e.schedule.steps]
    assert len(pairs) > 50
    kept, fresh = [], []
    for s, L in pairs + pairs[::-1]:
        before = Schedule(s.program, s.steps[:-1]).lowered
        deps = d.of(L.program)
        kept.append(([is_parallel(deps, L, l.row, set(l.statements)) for l in L.tree.loops()],
                     order_violation(d.of(before.program), before, L)))
    with caching.disabled():
        for s, L in pairs + pairs[::-1]:
            before = Schedule(s.program, s.steps[:-1]).lowered
            deps = d.of(L.program)
            fresh.append(([is_parallel(deps, L, l.row, set(l.statements)) for l in L.tree.loops()],
                          order_violation(d.of(before.program), before, L)))
    assert kept == fresh
    assert any(not all(par) for par, _ in kept) and any(any(par) for par, _ in kept)


def test_order_checked_pair_by_pair_equals_the_whole_check():
    """`order_violation` asks each (source, sink) pair of statements whose dependences touch a
    moved statement, by those two statements' rows; its verdict equals one check of all those
    dependences at once, on every step a search of the whole space tries on adi and 2mm (legal
    and illegal ones)."""
    from looper.poly.legality import order_violation, respects
    from looper.search.beam import beam_search
    from looper.search.policy import SearchPolicy
    from helpers import HashScores
    broken = kept = 0
    for name in ("adi", "2mm", "cholesky"):
        p = parse_file(kernel_path(name), "MINI")
        d = compute_dependences(p)
        result = beam_search(p, d, HashScores(2), SearchPolicy(beam=2, max_affine=1, grown=True))
        for e in result.explored:
            s = e.schedule
            if not s.steps or s.steps[-1].level not in ("fusion", "affine"):
                continue
            before = Schedule(s.program, s.steps[:-1]).lowered
            try:
                after = s.lowered
                after.tree
            except Exception:  # noqa: BLE001 - ill-formed: no order to check
                continue
            deps = d.of(before.program)
            changed = {x for x in after.rows if after.rows[x] != before.rows[x]}
            whole = not changed or respects(deps.touching_any(changed), after)
            assert (order_violation(deps, before, after) is None) == whole, (name, s.describe())
            broken += not whole
            kept += whole
    assert broken > 5 and kept > 50
