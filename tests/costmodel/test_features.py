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


# -- the grown space (feature version 4) ----------------------------------------------------------

def _gemm_split(size: str = "MINI"):
    p = parse_file(kernel_path("gemm"), size)  # S1: C[i, j] += alpha * A[i, k] * B[k, j]
    return p, Schedule(p).then(Distribute(("S0", "S1"), 1, (1,)))  # S1's rows: i 1, k 3, j 5


def test_a_pack_is_featurized_on_the_rewritten_program():
    """A pack's copy is a computation of its own, and the statement that reads the copy shows it:
    the model sees what a pack does, not only that one happened."""
    from looper.transforms import Pack
    p, split = _gemm_split()
    info = ProgramInfo(p)
    plain = featurize(split, info)
    packed = featurize(split.then(Pack("A", ("S1",))), info)
    assert len(plain.comps) == 2 and len(packed.comps) == 3
    copy = packed.comps[2].vector
    assert copy[COMP["added"]] == 1 and plain.comps[1].vector[COMP["added"]] == 0
    assert packed.comps[1].vector[COMP["reads_copy"]] == 1 and plain.comps[1].vector[COMP["reads_copy"]] == 0
    # S1 reads A's transposed copy: A[i, k] walked along k (row 3, inner to i) had stride 1 ...
    assert not np.array_equal(_access_rows(packed, 1), _access_rows(plain, 1))
    # ... and the copy's nest is a loop of the tree, as the code runs it
    assert len(list(packed.loops())) > len(list(plain.loops()))


def test_register_tile_vector_loops_and_region_are_read_from_the_lowered_schedule():
    from looper.transforms import ParallelRegion, RegisterTile, Vectorize
    p, split = _gemm_split()
    info = ProgramInfo(p)
    reg = featurize(split.then(RegisterTile((("S1", 1, 5, 3, 4, 16, 8),))), info)
    mk = reg.comps[1].vector[COMP["microkernel"]]
    assert mk.tolist() == [2.0, 4.0, 3.0]  # log2 of MR 4, NR 16, 8 lanes
    assert not reg.comps[0].vector[COMP["microkernel"]].any()
    assert any(l.vector[LOOP["microkernel"]] for l in reg.loops())

    vec = featurize(split.then(Vectorize(((("S1",), 5),))), info)
    assert vec.comps[1].vector[COMP["vector"]].sum() == 1
    inner = [l for l in vec.loops() if l.vector[LOOP["vector"]]]
    assert len(inner) == 1 and inner[0].vector[LOOP["innermost"]] == 1

    par = split.then(Parallelize(((("S0", "S1"), 1),)))
    one = featurize(par.then(ParallelRegion()), info)
    assert all(c.vector[COMP["region"]] == 1 for c in one.comps)
    assert not any(c.vector[COMP["region"]] for c in featurize(par, info).comps)
    assert any(l.vector[LOOP["region"]] for l in one.loops())


def test_a_time_tile_marks_its_wavefront_loop():
    from looper.search.candidates import generate
    from looper.transforms import TimeTile
    from helpers import TARGET
    p = parse_file(kernel_path("seidel_2d"), "MINI")  # one nest: time tiles apply to the original
    deps = compute_dependences(p)
    tiles = [c for c in generate("tile", Schedule(p), deps, grown=True, target=TARGET) if isinstance(c[0], TimeTile)]
    assert tiles
    f = featurize(Schedule(p).then(*tiles[0]), ProgramInfo(p))
    assert any(l.vector[LOOP["wavefront"]] for l in f.loops())
    assert not any(l.vector[LOOP["wavefront"]] for l in featurize(Schedule(p)).loops())


def test_a_candidate_carries_its_cost_terms_on_the_target():
    """Version 5: each candidate carries its analytic cost terms and the target's limits.  A
    parallel tiled gemm is estimated faster than the original on a measured machine (its compute
    term shorter), and the same candidate on a machine with twice the peak and a tenth of the
    fork cost shows those limits in its vector."""
    import dataclasses
    from looper.costmodel.features import TERMS, reference_target
    from looper.target.limits import Limits
    from helpers import TARGET
    p = parse_file(kernel_path("gemm"), "MEDIUM")
    s = (Schedule(p).then(Distribute(("S0", "S1"), 1, (1,))).then(Parallelize(((("S1",), 1),)))
         .then(Tile(((("S1",), (3, 5), (32, 32)),))))
    slow = dataclasses.replace(TARGET, threads=2, limits=Limits(2, 100.0, 200.0, 20.0, 8, fork_seconds=1e-3,
                                                                region_seconds=1e-5))
    fast = dataclasses.replace(slow, limits=dataclasses.replace(slow.limits, peak_double=200.0, fork_seconds=1e-4))
    original, tiled = (featurize(x, ProgramInfo(p, slow)).terms for x in (Schedule(p), s))
    assert tiled[TERMS["estimate"]] < original[TERMS["estimate"]]
    assert tiled[TERMS["terms"]][0] < original[TERMS["terms"]][0]  # log10 of the compute term
    on_fast = featurize(s, ProgramInfo(p, fast)).terms
    assert on_fast[TERMS["peak"]] == pytest.approx(tiled[TERMS["peak"]] + np.log10(2))
    assert on_fast[TERMS["fork"]] == pytest.approx(tiled[TERMS["fork"]] - 1)
    assert on_fast[TERMS["terms"]][0] < tiled[TERMS["terms"]][0]  # the same flops at twice the peak
    assert tiled[TERMS["measured"]] == 1
    assert featurize(s, ProgramInfo(p)).terms[TERMS["measured"]] == 0  # reference_target: not measured
    assert reference_target(4).threads == 4 and reference_target().limits is None


def test_a_point_s_machine_column_is_its_target():
    """The target a point's terms are computed on is the machine it recorded: its caches and
    measured limits; none recorded (the first fourteen parts) is the reference target."""
    import json
    from looper.datagen.schema import target_of
    machine = json.dumps({"cpu": "AMD EPYC (family 25, model 17, stepping 1)",
                          "caches": ["L1d 32 KiB", "L1i 32 KiB", "L2 1 MiB", "L3 32 MiB, shared by CPUs 0-1"],
                          "limits": {"threads": 2, "peak_double": 115.8, "peak_single": 231.9, "bandwidth": 39.5,
                                     "lanes_double": 8, "fork_seconds": 0.0057, "region_seconds": 4.2e-5}})
    t = target_of(machine, 2)
    assert (t.cache_bytes(1), t.cache_bytes(2), t.cache_bytes(3)) == (32 << 10, 1 << 20, 32 << 20)
    assert t.limits.peak_double == 115.8 and t.limits.fork_seconds == 0.0057 and t.vector_bytes == 64
    assert t.threads == 2 and t.cpu.startswith("AMD EPYC (family 25")
    none = target_of(None, 2)
    assert none.limits is None and none.caches == ()


def test_a_statement_whose_rows_isl_repeats_keeps_its_strides():
    """isl's schedules repeat a statement's rows where it has fewer loops than the band
    (cholesky's `A[i][i] = sqrt(A[i][i])` under isl's Pluto schedule: rows i, i, i): its first loop
    walks the diagonal and the repeats move nothing.  Version 5 gave every loop of it stride zero
    (its point rows were not square); the strides now come from the terms' steps (`rows.inverse_steps`)."""
    from looper.transforms.isl_schedule import VARIANTS, IslSchedule, isl_variants
    p = parse_file(kernel_path("cholesky"), "SMALL")
    rows = dict(zip(VARIANTS, isl_variants(p)))["pluto"]
    f = featurize(Schedule(p, (IslSchedule(rows, "pluto"),)), ProgramInfo(p))
    k = next(j for j, st in enumerate(p.statements) if st.depth == 1)
    strides = _access_rows(f, k)[0, ACCESS["stride"]]
    assert strides[0] == pytest.approx(np.log1p(p.sizes["N"] + 1))  # A[i][i] along i: a row and one
    assert not strides[1:].any()
