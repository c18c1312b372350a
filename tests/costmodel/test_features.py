"""Featurization: every PolyBench kernel, transformed schedules, named layouts, strides."""
from __future__ import annotations

import numpy as np
import pytest

from looper.costmodel.features import (
    ACCESS, COMP, FEATURE_VERSION, LOOP, ProgramInfo, featurize,
)
from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.search.beam import beam_search
from looper.search.policy import SearchPolicy
from looper.transforms import Distribute, Interchange, Parallelize, Tile, Unroll
from looper.transforms.schedule import Schedule

from conftest import KERNELS, kernel_path
from helpers import HashScores


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_kernel_featurizes_with_its_search_candidates(kernel):
    program = parse_file(kernel_path(kernel), "LARGE")
    info = ProgramInfo(program)
    deps = compute_dependences(program)
    result = beam_search(program, deps, HashScores(2), SearchPolicy(beam=2, max_affine=1))
    for e in result.evaluated[:40]:
        f = featurize(e.schedule, info)
        assert len(f.comps) == len(program.statements)
        for c in f.comps:
            assert c.vector.shape == (COMP.width,) and np.isfinite(c.vector).all()
            assert len(c.expression) >= 2 and np.isfinite(c.expression).all()
            assert len(c.transforms) <= len(e.schedule.steps)
        assert f.signature()


def _access_rows(f, comp):
    return f.comps[comp].vector[COMP["accesses"]].reshape(-1, ACCESS.width)


def test_inner_strides_follow_the_schedule():
    p = parse_file(kernel_path("gemm"), "LARGE")  # S1: C[i, j] += alpha * A[i, k] * B[k, j]
    info = ProgramInfo(p)
    split = Schedule(p).then(Distribute(("S0", "S1"), 1, (1,)))
    ikj = _access_rows(featurize(split, info), 1)
    ijk = _access_rows(featurize(split.then(Interchange(("S1",), 3, 5)), info), 1)
    inner = ACCESS["inner_stride"]
    b = 4  # accesses: C (write), C, alpha, A, B
    assert ikj[b, inner] == pytest.approx(np.log1p(1))  # B[k, j] with j innermost: stride 1
    assert ijk[b, inner] == pytest.approx(np.log1p(1100))  # k innermost: a row of B (NJ = 1100)
    assert ijk[3, inner] == pytest.approx(np.log1p(1))  # A[i, k]


def test_loop_tags():
    p = parse_file(kernel_path("gemm"), "LARGE")
    s = Schedule(p).then(Parallelize(((("S0", "S1"), 1),))).then(
        Tile(((("S1",), (3, 5), (32, 64)),))).then(Unroll(((("S1",), 9),), 8))
    f = featurize(s, ProgramInfo(p))
    (kind, outer), = f.roots
    assert kind == "loop" and outer.vector[LOOP["parallel"]] == 1
    assert outer.vector[LOOP["extent"]] == pytest.approx(np.log1p(1000))
    tiles = [c for k, c in outer.children if k == "loop" and c.vector[LOOP["tile"]] > 0]
    assert tiles and tiles[0].vector[LOOP["tile"]] == 5  # log2(32)
    comp = f.comps[1].vector
    assert comp[COMP["unrolled"]].max() == 3  # log2(8)
    assert comp[COMP["tiled"]].max() == 6  # log2(64)
    kinds = f.comps[1].transforms
    assert len(kinds) == 3


def test_feature_version_is_an_int():
    assert isinstance(FEATURE_VERSION, int) and FEATURE_VERSION > 0
