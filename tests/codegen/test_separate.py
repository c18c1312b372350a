"""Separated loops (`codegen.astwalk.schedule_ast`): below the innermost parallel loop, isl splits
a loop wherever the statements it runs change, so full tiles carry no guard; the outputs stay the
original's, the parallel loops are not split, and the original schedule prints as isl's default."""
from __future__ import annotations

import re

import islpy as isl
import pytest

from looper.api import load_programs
from looper.codegen import astwalk
from looper.codegen.harness import kernel_function
from looper.ir.schedule import original
from looper.poly.deps import compute_dependences
from looper.transforms.isl_schedule import IslSchedule
from looper.transforms.registry import CandidateContext
from looper.transforms.schedule import Schedule
from looper.transforms.time_tiling import TimeTile

from helpers import differential, innermost_bodies, target_for


def _cholesky_wavefront(size: str) -> Schedule:
    """isl's schedule of cholesky, then its 3-loop band time-tiled 32x32x32 with a wavefront."""
    p = load_programs("polybench:cholesky", size=size)
    deps, target = compute_dependences(p), target_for(2)
    isl_step = next(c for c in IslSchedule.candidates(CandidateContext(original(p), deps, target, grown=True))
                    if c.variant == "pluto")
    s = Schedule(p).then(isl_step)
    tile = next(c for c in TimeTile.candidates(CandidateContext(s.lowered, deps, target, grown=True))
                if c.sizes == (32, 32, 32))
    return s.then(tile)


def _default_ast_c(lowered) -> str:
    sched = lowered.union_map.intersect_domain(lowered.program.domains())
    return isl.AstBuild.from_context(isl.Set("{ : }")).node_from_schedule_map(sched).to_C_str()


def test_a_full_tile_runs_its_reduction_without_a_guard(tmp_path):
    s = _cholesky_wavefront("SMALL")
    c = str(kernel_function(s.lowered, "k"))
    # the updated element is kept in a local inside the loop (`codegen.scalars`)
    reduction = re.compile(r"^(A\[c\d+\]\[c\d+\]|c\d+_\d+) -= A\[c\d+\]\[c\d+\] \* A\[c\d+\]\[c\d+\];$")
    assert any(reduction.match(b) for b in innermost_bodies(c)), c
    # isl's default keeps the division's guard inside that loop (what ran 2.6x slower at LARGE)
    default = _default_ast_c(s.lowered)
    assert not any(reduction.match(b) for b in innermost_bodies(default))
    assert c.count("#pragma omp parallel for") == 1  # the wavefront's tile loop, not split
    assert differential(s.program, [s], tmp_path) == []


def test_the_original_schedule_prints_as_isl_default():
    p = load_programs("polybench:cholesky", size="SMALL")
    L = original(p)
    assert astwalk.schedule_ast(L).to_C_str() == _default_ast_c(L)


@pytest.mark.parametrize("growth, separated", [(0, False), (astwalk.SEPARATE_GROWTH, True)])
def test_separation_that_multiplies_the_code_is_not_taken(monkeypatch, growth, separated):
    monkeypatch.setattr(astwalk, "SEPARATE_GROWTH", growth)
    L = _cholesky_wavefront("MINI").lowered  # a new schedule: nothing cached for it
    assert (astwalk.schedule_ast(L).to_C_str() != _default_ast_c(L)) is separated
