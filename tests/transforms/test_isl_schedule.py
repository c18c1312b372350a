"""isl's Pluto-style schedule as a search candidate (transforms.isl_schedule)."""
from __future__ import annotations

import pytest

from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule
from looper.search.candidates import generate
from looper.transforms import IslSchedule, Transform
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import TARGET, differential


def _isl_schedules(kernel: str, size: str):
    p = parse_file(kernel_path(kernel), size)
    d = compute_dependences(p)
    s = Schedule(p)
    found = [s.then(*c) for c in generate("fusion", s, d, grown=True, target=TARGET) if isinstance(c[0], IslSchedule)]
    return p, d, s, found


def test_lu_gets_one_permutable_band_over_all_three_statements():
    """isl aligns the division by the pivot (S1[i, j]) with the updates' reduction loop: one
    3-deep band over every statement, which the tile level can tile whole."""
    p, d, s, found = _isl_schedules("lu", "SMALL")
    legal = [x for x in found if check_schedule(d, x) is None]
    assert legal
    L = legal[0].lowered
    tree = L.tree
    assert len(tree.nests) == 1 and len(tree.chain(tree.nests[0])) == 3
    assert tree.nests[0].statements == {"S0", "S1", "S2"}
    tiles = [c for c in generate("tile", legal[0], d, grown=True, target=TARGET) if len(c) == 1 and c[0].kind == "tile"
             and len(c[0].bands[0].rows) == 3]
    assert tiles and check_schedule(d, legal[0].then(*tiles[0])) is None


def test_only_offered_on_the_program_s_own_schedule_and_only_in_the_grown_space():
    p, d, s, found = _isl_schedules("gemm", "SMALL")
    assert found
    assert not any(isinstance(c[0], IslSchedule) for c in generate("fusion", s, d, target=TARGET))
    after = found[0]
    assert not any(isinstance(c[0], IslSchedule) for c in generate("fusion", after, d, grown=True, target=TARGET))


def test_json_round_trip_replays_the_same_rows_at_another_size():
    """The step carries its rows: replayed on the program at another size it sets the same ones
    (verification replays answers at SMALL), and isl checks them there."""
    p, d, s, found = _isl_schedules("trmm", "MEDIUM")
    step = found[0].steps[0]
    again = Transform.from_json(step.to_json())
    assert again == step
    small = parse_file(kernel_path("trmm"), "SMALL")
    L = Schedule(small, (again,)).lowered
    assert L.rows == found[0].lowered.rows


def test_a_scheduler_that_runs_out_of_time_offers_nothing(monkeypatch):
    import looper.transforms.isl_schedule as mod
    monkeypatch.setattr(mod, "BUDGET_SECONDS", 0.0)
    monkeypatch.setattr(mod, "_RAN_OUT", type(mod._RAN_OUT)())
    mod.isl_variants.cache_clear()
    p = parse_file(kernel_path("heat_3d"), "MINI")
    try:
        assert mod.isl_rows(p, "pluto") is None and mod.isl_variants(p) == (None, None)
    finally:
        mod.isl_variants.cache_clear()


def test_a_variant_that_ran_out_on_a_program_is_not_asked_of_its_rewrites(monkeypatch):
    """gramschmidt's expansion of `nrm` is a rewrite of the same program: once isl ran out of
    time on the program, the rewrite gets no schedule without waiting for one; a fresh process
    (nothing ran out) schedules the rewrite, and other programs are not affected."""
    import looper.transforms.isl_schedule as mod
    from looper.ir.schedule import original
    from looper.transforms.expansion import expansions
    monkeypatch.setattr(mod, "_RAN_OUT", type(mod._RAN_OUT)())
    p = parse_file(kernel_path("gramschmidt"), "SMALL")
    rewrite = next(e for e in expansions(p) if e.array == "nrm").apply(original(p)).program
    assert rewrite is not p and rewrite.rewritten
    mod.isl_variants.cache_clear()
    monkeypatch.setattr(mod, "BUDGET_SECONDS", 60.0)  # a busy machine must not run it out
    try:
        assert mod.isl_variants(rewrite)[0] is not None  # nothing ran out: it has a schedule
        mod.isl_variants.cache_clear()
        monkeypatch.setattr(mod, "BUDGET_SECONDS", 0.0)
        assert mod.isl_variants(p) == (None, None)
        monkeypatch.setattr(mod, "BUDGET_SECONDS", 60.0)

        class NoChildren:
            def Pipe(self, duplex):
                raise AssertionError("isl's scheduler was started")

        monkeypatch.setattr(mod.multiprocessing, "get_context", lambda kind: NoChildren())
        assert mod.isl_variants(rewrite) == (None, None)
        monkeypatch.undo()
        assert mod.isl_variants(parse_file(kernel_path("gemm"), "SMALL"))[0] is not None
    finally:
        mod.isl_variants.cache_clear()


@pytest.mark.parametrize("kernel", ["lu", "cholesky", "seidel_2d", "jacobi_2d", "fdtd_2d", "gemm", "2mm",
                                    "trmm", "syrk", "floyd_warshall", "mvt", "bicg"])
def test_isl_schedules_and_their_tiles_compute_what_the_original_does(kernel, tmp_path):
    """Every legal isl schedule, and a few tilings of it, computes the original's outputs exactly
    (at 1 and 4 threads, with whatever the parallel level then marks)."""
    p, d, s, found = _isl_schedules(kernel, "SMALL")
    legal = [x for x in found if check_schedule(d, x) is None]
    if not legal:
        pytest.skip(f"{kernel}: isl's schedules are not expressible or not legal at SMALL")
    variants = list(legal)
    for base in legal:
        for level in ("parallel", "tile"):
            more = [base.then(*c) for c in generate(level, base, d, grown=True, target=TARGET)]
            variants += [v for v in more if check_schedule(d, v) is None][:3]
    for threads in (1, 4):
        assert differential(p, variants, tmp_path, threads=threads) == []


def test_a_scheduler_started_ahead_is_collected_and_an_unclaimed_one_stopped(monkeypatch):
    """`start` runs isl's scheduler in the background (the search starts it for every program a
    level will ask about); `isl_variants` then collects those children, starting none, with the
    answer a direct computation gives.  `abandon` stops children nobody collected: none is left
    running (nothing may run beside a timing)."""
    import multiprocessing
    import looper.transforms.isl_schedule as mod
    from looper import caching
    monkeypatch.setattr(mod, "BUDGET_SECONDS", 60.0)  # a busy machine must not run it out
    p, q = parse_file(kernel_path("gemm"), "SMALL"), parse_file(kernel_path("lu"), "SMALL")
    with caching.disabled():
        direct = mod.isl_variants(p)
    mod.isl_variants.cache_clear()
    try:
        mod.start(p)
        mod.start(p)  # once
        assert len(mod._STARTED) == 1

        class NoChildren:
            def Pipe(self, duplex):
                raise AssertionError("isl's scheduler was started again")

        real = mod.multiprocessing.get_context
        monkeypatch.setattr(mod.multiprocessing, "get_context", lambda kind: NoChildren())
        assert mod.isl_variants(p) == direct and direct[0] is not None
        monkeypatch.setattr(mod.multiprocessing, "get_context", real)
        mod.start(q)
        children = [c for c, _ in filter(None, mod._STARTED[q].children)]
        assert children  # running or done: a fast scheduler may have finished already
        mod.abandon()
        assert not mod._STARTED and all(c.exitcode is not None for c in children)
        assert not multiprocessing.active_children()
    finally:
        mod.abandon()
        mod.isl_variants.cache_clear()


def test_the_registry_starts_and_stops_every_transformations_work_ahead():
    """What `tune.prepare` and `Search.close` call: `start_ahead` reaches isl's scheduler through
    the registry (no caller names the transformation), and `abandon` stops it."""
    import multiprocessing
    import looper.transforms.isl_schedule as mod
    from looper.ir.schedule import original
    from looper.transforms import TRANSFORMS
    p = parse_file(kernel_path("lu"), "SMALL")
    mod.isl_variants.cache_clear()
    try:
        TRANSFORMS.start_ahead(original(p), grown=True)
        assert list(mod._STARTED) == [p]
        TRANSFORMS.abandon()
        assert not mod._STARTED and not multiprocessing.active_children()
    finally:
        mod.abandon()
        mod.isl_variants.cache_clear()
