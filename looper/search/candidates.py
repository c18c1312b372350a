"""Candidate transformations per search level, read off the current loop tree.

Levels follow LOOPer's order: fusion (fuse with shifting, distribute) -> affine x N (interchange,
reversal, skew) -> parallelization -> tiling -> unrolling.  Each transformation proposes its own
candidates (`transforms.registry`); the isl legality check (`poly.legality.check_step`) disposes.
"""
from __future__ import annotations

from ..poly.deps import Dependences
from ..target import Target
from ..transforms import TRANSFORMS, Candidate, RegisterTile
from ..transforms.schedule import Schedule


def level_plan(max_fusion: int = 2, max_affine: int = 4, grown: bool = False) -> list[str]:
    """The levels a search runs, in order: fusion x max_fusion, affine x max_affine, then one
    each of parallel, tile, (in the grown space: pack, register,) unroll."""
    refine = ["parallel", "tile", "pack", "register", "unroll"] if grown else ["parallel", "tile", "unroll"]
    return ["fusion"] * max_fusion + ["affine"] * max_affine + refine


# In the grown space the tile level also offers the register tiles of its schedule, with the packs
# that enable them.  A register tile is itself a tiling, and the cache tile measured best on its
# own can leave no loop order a register tile applies to: LARGE syrk's measuring search kept
# tile(k,j,64,64) (11% of peak) and reached the register level with nothing to tile.
AHEAD = {"tile": ("pack", "register")}


def ahead(level: str, schedules: list[Schedule], grown: bool = False):
    """A block in which the background work of `level`'s candidates for `schedules` has
    started (isl's scheduler on each program it will be asked of, `Transform.ahead`)."""
    return TRANSFORMS.ahead(level, [s.lowered for s in schedules], grown)


def generate(level: str, schedule: Schedule, deps: Dependences, target: Target,
             grown: bool = False) -> list[Candidate]:
    """Every distinct candidate of `level` for `schedule` on `target`: one step or a short
    sequence each (`grown`: also what the grown search space adds, e.g. rectangular tiles, and
    the register tiles offered ahead of their level, `AHEAD`)."""
    found = TRANSFORMS.generate(level, schedule.lowered, deps, target, grown)
    if grown:
        for later in AHEAD.get(level, ()):
            found += [c for c in TRANSFORMS.generate(later, schedule.lowered, deps, target, grown)
                      if isinstance(c[-1], RegisterTile)]
    return found
