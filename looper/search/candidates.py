"""Candidate transformations per search level, read off the current loop tree.

Levels follow LOOPer's order: fusion (fuse with shifting, distribute) -> affine x N (interchange,
reversal, skew) -> parallelization -> tiling -> unrolling.  Each transformation proposes its own
candidates (`transforms.registry`); the isl legality check (`poly.legality.check_step`) disposes.
"""
from __future__ import annotations

from ..poly.deps import Dependences
from ..transforms import TRANSFORMS, Candidate
from ..transforms.schedule import Schedule


def level_plan(max_fusion: int = 2, max_affine: int = 4, grown: bool = False) -> list[str]:
    """The levels a search runs, in order: fusion x max_fusion, affine x max_affine, then one
    each of parallel, tile, (in the grown space: pack, register,) unroll."""
    refine = ["parallel", "tile", "pack", "register", "unroll"] if grown else ["parallel", "tile", "unroll"]
    return ["fusion"] * max_fusion + ["affine"] * max_affine + refine


def generate(level: str, schedule: Schedule, deps: Dependences, grown: bool = False) -> list[Candidate]:
    """Every distinct candidate of `level` for `schedule`: one step or a short sequence each
    (`grown`: also what the grown search space adds, e.g. rectangular tiles)."""
    return TRANSFORMS.generate(level, schedule.lowered, deps, grown)
