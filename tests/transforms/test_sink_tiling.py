"""Tiling one loop of an imperfect nest with its point loop sunk innermost (transforms.sink_tiling)."""
from __future__ import annotations

import pytest

from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule, is_parallel
from looper.search.candidates import generate
from looper.transforms import Parallelize, SinkTile, Transform
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import TARGET, differential


def _sink_tiled(kernel: str, size: str, base_level: str | None = None):
    p = parse_file(kernel_path(kernel), size)
    d = compute_dependences(p)
    bases = [Schedule(p)]
    if base_level:
        bases += [bases[0].then(*c) for c in generate(base_level, bases[0], d, target=TARGET)]
    legal, illegal = [], []
    for base in bases:
        if check_schedule(d, base) is not None:
            continue
        for c in generate("tile", base, d, grown=True, target=TARGET):
            if isinstance(c[0], SinkTile):
                s = base.then(*c)
                (legal if check_schedule(d, s) is None else illegal).append(s)
    return p, d, legal, illegal


def test_gramschmidt_gets_pluto_s_column_blocks():
    """The column loop j (a statement and two row loops inside) becomes a parallel loop of column
    blocks, each statement walking its block row by row; the k loop, which carries everything,
    cannot be sunk."""
    p, d, legal, illegal = _sink_tiled("gramschmidt", "SMALL")
    assert not any(isinstance(c[0], SinkTile) for c in generate("tile", Schedule(p), d, target=TARGET))  # grown only
    names = {s.describe() for s in legal}
    assert "sinktile(j,32) ; parallelize(j_t)" in names
    assert all(s.describe().startswith("sinktile(k,") for s in illegal)
    s = next(s for s in legal if s.describe() == "sinktile(j,32) ; parallelize(j_t)")
    L = s.lowered
    names5 = p.statement("S5").iterators
    rendered = [r.render(names5) for r in L.rows["S5"]]
    assert rendered[3] == "floor((j)/32)" and rendered[5] == "i" and rendered[7] == "j"  # j below i
    (stmt, row), = {(s_, r) for s_, r in L.parallel if s_ == "S5"}
    assert row == 3 and is_parallel(d, L, row, {"S4", "S5", "S6"})


def test_json_round_trip():
    step = SinkTile((("S4", "S5", "S6"), 3), 64)
    assert Transform.from_json(step.to_json()) == step


@pytest.mark.parametrize("kernel", ["gramschmidt", "correlation", "covariance", "doitgen", "adi", "gemm"])
def test_sink_tiled_schedules_compute_what_the_original_does(kernel, tmp_path):
    """Every legal sink tile of the original and of its distributions computes the original's
    outputs exactly, at 1 and 4 threads (parallel tile loops included)."""
    p, d, legal, _ = _sink_tiled(kernel, "SMALL", base_level="fusion")
    if kernel == "gramschmidt":
        assert any(isinstance(s.steps[-1], Parallelize) for s in legal)
    if not legal:
        pytest.skip(f"{kernel}: no legal sink tile")
    for threads in (1, 4):
        assert differential(p, legal[:8], tmp_path, threads=threads) == []
