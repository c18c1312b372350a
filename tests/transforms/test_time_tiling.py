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
