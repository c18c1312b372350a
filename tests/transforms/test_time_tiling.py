"""Time tiling: stencils skewed, tiled in time and space, tiles run as a parallel wavefront."""
from __future__ import annotations

import pytest

from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule, is_parallel
from looper.search.candidates import generate
from looper.transforms import TimeTile
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import TARGET, differential


def _time_tiled(kernel: str, size: str):
    p = parse_file(kernel_path(kernel), size)
    d = compute_dependences(p)
    s = Schedule(p)
    out = []
    for base in [s] + [s.then(*c) for c in generate("fusion", s, d, target=TARGET)]:
        if check_schedule(d, base) is not None:
            continue
        for c in generate("tile", base, d, grown=True, target=TARGET):
            if isinstance(c[0], TimeTile) and check_schedule(d, base.then(*c)) is None:
                out.append(base.then(*c))
    return p, d, out


def test_seidel_gets_a_skewed_wavefront_with_a_parallel_tile_loop():
    p, d, tiled = _time_tiled("seidel_2d", "MINI")
    assert tiled and generate("tile", Schedule(p), d, target=TARGET) == [c for c in generate("tile", Schedule(p), d, target=TARGET)
                                                          if not isinstance(c[0], TimeTile)]
    L = tiled[0].lowered
    (stmt, row), = L.parallel
    assert L.rows[stmt][row - 2].extra  # the wavefront: w = T0 + T1
    assert is_parallel(d, L, row, {stmt})
    assert "skew" in tiled[0].describe()


@pytest.mark.parametrize("kernel", ["seidel_2d", "jacobi_1d", "jacobi_2d", "heat_3d"])
def test_time_tiled_stencils_compute_what_the_original_does(kernel, tmp_path):
    p, d, tiled = _time_tiled(kernel, "SMALL")
    assert tiled
    for threads in (1, 4):
        assert differential(p, tiled[:4], tmp_path, threads=threads) == []


def _sizes(kernel: str, size: str, depth: int, target=TARGET) -> set[tuple[int, ...]]:
    """The sizes time tiling proposes for `kernel`'s bands of `depth` loops (after any fusion)."""
    p = parse_file(kernel_path(kernel), size)
    d = compute_dependences(p)
    s = Schedule(p)
    bases = [s] + [s.then(*c) for c in generate("fusion", s, d, target=target)]
    return {c[0].sizes for base in bases for c in generate("tile", base, d, grown=True, target=target)
            if isinstance(c[0], TimeTile) and len(c[0].rows) == depth}


def test_a_time_tile_that_would_hold_the_whole_grid_gets_a_fitted_size():
    """heat-3d LARGE (n = 120): over the menu's 64 (or 32) steps the skewed `2t + i` spans 246 (182)
    values, so a 512 (256) wide tile holds every i and tiles time alone; the fitted tile is the
    largest power of two whose step (32 planes of 120 x 120 points of two arrays: 7.4 MB) fits
    half of a thread's share of the 32 MiB L3."""
    from looper.transforms.time_tiling import SIZES
    got = _sizes("heat_3d", "LARGE", 2)
    assert got == set(SIZES[2]) | {(32, 32)}
    # with a quarter of the cache (8 threads share it) the step must be 4x smaller: 8 planes
    assert _sizes("heat_3d", "LARGE", 2, TARGET.with_threads(8)) == set(SIZES[2]) | {(8, 8)}


def test_a_menu_size_that_reuses_its_grid_keeps_the_menu():
    """jacobi-2d LARGE (1300 x 1300): a 32 x 256 tile of (t, i) cuts the i loop and its step (256 rows
    of two arrays, 5.3 MB) fits the budget, so nothing is added; nor to the 3-loop bands."""
    from looper.transforms.time_tiling import SIZES
    assert _sizes("jacobi_2d", "LARGE", 2) == set(SIZES[2])
    assert _sizes("jacobi_2d", "LARGE", 3) == set(SIZES[3])
    assert _sizes("heat_3d", "LARGE", 3) == set(SIZES[3])


def test_fitted_time_tiles_compute_what_the_original_does(tmp_path):
    """The fitted size at SMALL (heat-3d, n = 30: 16 x 16 cuts the grid in two), run on 1 and 3 threads."""
    from looper.transforms.time_tiling import SIZES
    p, d, tiled = _time_tiled("heat_3d", "SMALL")
    fitted = [t for t in tiled if t.steps[-1].sizes == (16, 16)]
    assert fitted and _sizes("heat_3d", "SMALL", 2) - {(16, 16)} == set(SIZES[2])
    for threads in (1, 3):
        assert differential(p, fitted[:2], tmp_path, threads=threads) == []


def test_tiles_in_order_keep_the_parallel_loop_inside_and_compute_what_the_original_does(tmp_path):
    """heat-3d with `i` and `j` fused and `j` parallel: besides the wavefront, the (t, i) band is
    skewed and tiled in order around the parallel `j`, which stays parallel (and carries no
    dependence); run on 1 and 3 threads, it computes what the original does."""
    from looper.transforms import Parallelize
    from looper.transforms.fusion import Fuse
    p = parse_file(kernel_path("heat_3d"), "SMALL")
    d = compute_dependences(p)
    fused = Schedule(p).then(Fuse(("S0",), ("S1",), 3, (1, 0)))
    j = fused.lowered.tree.chain(fused.lowered.tree.nests[0])[2]
    base = fused.then(Parallelize(((j.ref.statements, j.row),)))
    assert check_schedule(d, base) is None
    in_order = [c[0] for c in generate("tile", base, d, grown=True, target=TARGET)
                if isinstance(c[0], TimeTile) and not c[0].wavefront]
    assert in_order and all(len(t.rows) == 2 for t in in_order)
    tiled = [base.then(t) for t in in_order if check_schedule(d, base.then(t)) is None]
    assert tiled
    for s in tiled:
        L = s.lowered
        assert not any(r.extra for rows in L.rows.values() for r in rows)  # no wavefront row
        (row,) = {r for _, r in L.parallel}
        assert is_parallel(d, L, row, {"S0", "S1"})
        assert s.describe().endswith(",in order)")
    for threads in (1, 3):
        assert differential(p, tiled, tmp_path, threads=threads) == []
