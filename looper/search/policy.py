"""The search policy: how a beam search decides, apart from how candidates are scored.

The defaults per evaluator live here (`policy_for`) and nowhere else: a measuring search goes
deeper and asks a child to beat its parent by the timing noise; a model-guided search goes as
deep as its model's training data went, simplifies its answer and asks the answer to beat the
original by the model's error.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .candidates import level_plan

if TYPE_CHECKING:
    from ..target import Target
    from .scoring import Evaluator

DEFAULT_MAX_AFFINE = 4  # affine levels of a measurement-guided search (a model's own depth otherwise)
# A child must be 2% faster than its parent to replace it when both are measured: timing noise.
MEASURED_MIN_GAIN = 0.02
# An answer predicted less than 5% faster than the original is not worth the risk: the model's
# median error on held-out programs is 18%.  MEDIUM gesummv and trisolv: predicted 1.01x and
# 1.05x, measured 0.57x and 0.80x.  (The same 5% asked of every step, as `min_gain`, cut the
# tiling from LARGE gemm's answer and left its strided interchange: 0.35x.)
PREDICTED_MIN_ANSWER_GAIN = 0.05
# A measuring search's answer is timed again with its 3 best runners-up (`search.confirm`).
CONFIRM_TOP = 4


@dataclass(frozen=True)
class SearchPolicy:
    """Everything a beam search decides by, besides its evaluator's scores."""

    beam: int = 3  # schedules kept per level
    max_fusion: int = 2  # fusion / distribution levels
    max_affine: int = DEFAULT_MAX_AFFINE  # interchange / reversal / skew levels
    # a child replaces its parent only if faster by this fraction (a guard against noise or error)
    min_gain: float = 0.0
    # the answer must beat the original by this fraction, or the original is the answer
    min_answer_gain: float = 0.0
    # drop the answer's reversals and skews that no later step needs (search.simplify): a model
    # credits them with gains they do not have
    drop_idle_enablers: bool = False
    # the best schedule of the original loop structure (the original itself at the fusion and
    # affine levels, its best parallelization, tiling, unrolling after) stays in the beam as an
    # extra member at every level
    keep_root: bool = True
    # seconds: after it no level starts and no more candidates are scored (the best so far wins)
    time_budget: float | None = None
    # seconds for the levels that choose the loop structure (fusion, affine): after it no more of
    # their candidates are scored, while the refinement levels (parallel, tile, ..., unroll)
    # still run.  At LARGE a stencil's candidate runs for seconds and an affine level scores
    # dozens of skews that pay only once tiled (adi: 42 minutes of search)
    structure_budget: float | None = None
    max_per_parent: int | None = None  # sample at most this many candidates per schedule and level
    seed: int = 0  # for that sampling (data collection), so a rerun explores the same candidates
    # ... drawn from each kind of candidate in turn (`beam.stratified`): grown-space data
    # collection, where a level's hundreds of cache tiles would crowd out its register tiles
    stratified: bool = False
    # data collection: this many exploration lanes beside the beam.  A measured beam refines only
    # the best loop structures, so a model trained on it never sees a poor structure tiled and
    # parallelized, which is what the model's own beam visits (LARGE gemm: a strided interchange,
    # tiled, predicted above the order measurement found, measured at a third of its speed).  A
    # lane starts at a random schedule the beam drops, walks at random through the fusion and
    # affine levels, then follows its best refinement (`beam.explore_lanes`)
    explore: int = 0
    # ... or, given an evaluator here (a cost model), the lanes are its own beam: at every level its
    # favourites among the lanes and all new candidates (`beam.guided_lanes`), measured by the
    # search's evaluator, so the data covers what a search guided by that model visits, where it errs
    explore_guide: "Evaluator | None" = None
    explain: bool = False  # name the dependences a rejected candidate breaks (costs a second check)
    # the grown search space: register tiles (micro-kernels), cache-sized rectangular tiles, ...
    # A model-guided search explores it when its model's data did (`search_space.grown`)
    grown: bool = False
    # give the answer one parallel region around its parallel loops when it would fork a team
    # more than once (`transforms.parallel.ParallelRegion`): a model cannot score that choice
    # (it changes no loop), and waking sleeping threads per loop is what made answers slower
    # than the original when run without looper's timing environment
    regions: bool = False
    # the machine the answer is for (None: this one, as `Target.detect` finds it): cache tiles,
    # register tiles and tiles that split a parallel loop evenly among its threads follow it
    target: "Target | None" = None
    # a measuring search's answer and its runners-up timed again together (`search.confirm`):
    # how many (0: the best single score is the answer)
    confirm_top: int = 0
    # why this kernel gets no parallel candidates (`search.restraint`: too short for a thread
    # team to pay); None: threads allowed
    sequential: str | None = None
    # the best schedule without parallel loops stays in the beam as an extra member at every
    # level: a ranking that puts threads first at the parallel level (the plain nest split two
    # ways beats it run alone) would otherwise never refine a sequential nest into a register
    # tile, which a kernel of a few milliseconds runs faster than a team it must start (3mm
    # MEDIUM: 1.3 ms sequential, 2.7 ms parallel on a 3.4 ms mean first region)
    keep_sequential: bool = False
    # when every member of the beam starts from isl's schedule, or none does, the best schedule
    # of the other origin stays in the beam as an extra member at every level: isl's schedule
    # and its wavefronts are ranked by the analytic terms alone, and three of them filled the
    # beam of jacobi-2d LARGE from the first affine level, so the fused nest whose time tile
    # runs 3.06x (isl's time tiles: 0.9-1.1x) was never refined
    keep_both_origins: bool = False
    # when no member of the beam has a loop that may run in parallel and another candidate has
    # one, the best of those stays in the beam as an extra member at every level: a skew that
    # frees a loop of its dependences (a wavefront) runs slower than the original until that loop
    # runs on threads, and the beam cut nussinov's `wavefront(-i,j)` at the affine levels, so its
    # parallel j (3.5x gcc at LARGE, the ranking's best 2.5x) was never ranked
    keep_parallel: bool = False

    @property
    def levels(self) -> list[str]:
        return level_plan(self.max_fusion, self.max_affine, self.grown)

    def with_(self, **changes) -> "SearchPolicy":
        """A copy with some fields changed (None values are ignored: "keep the default")."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def policy_for(evaluator: str, model_meta: dict | None = None, **overrides) -> SearchPolicy:
    """The default policy of a search scored by `evaluator` ("measure", "model" or "hybrid"),
    with `overrides` (None: keep the default)."""
    if evaluator == "measure":
        base = SearchPolicy(max_affine=DEFAULT_MAX_AFFINE, min_gain=MEASURED_MIN_GAIN, grown=True,
                            confirm_top=CONFIRM_TOP)
    elif evaluator == "model":
        # as deep as the model's data went, and the grown space when its data searched it
        space = (model_meta or {}).get("search_space", {})
        base = SearchPolicy(max_affine=int(space.get("max_affine", DEFAULT_MAX_AFFINE)),
                            min_answer_gain=PREDICTED_MIN_ANSWER_GAIN, drop_idle_enablers=True, regions=True,
                            grown=bool(space.get("grown")))
    elif evaluator == "hybrid":
        # the whole space, ranked without compiling (`search.budget`): the model's depth for the
        # structure it knows; what the beam keeps is measured, so no margin on the answer
        depth = (model_meta or {}).get("search_space", {}).get("max_affine", DEFAULT_MAX_AFFINE)
        base = SearchPolicy(max_affine=int(depth), grown=True, regions=True, keep_sequential=True,
                            keep_both_origins=True, keep_parallel=True)
    else:
        raise ValueError(f"unknown evaluator {evaluator!r} (measure, model, hybrid)")
    return base.with_(**overrides)


# Levels of interchange / reversal / skew a refining search may add before the refinements: the
# reversal and interchange a time tile of isl's wavefront needs (seidel-2d).
REFINE_AFFINE = 2
# Seconds a refining search may take at least; at most half of what the ranking it grows took
# beyond that (deriche MEDIUM's ranking takes minutes).
REFINE_SECONDS = 5.0


def refining(policy: SearchPolicy, ranking_seconds: float | None = None) -> SearchPolicy:
    """The policy of a search that refines a given loop structure (`beam_search(start=...)`):
    no fusion levels, `REFINE_AFFINE` affine levels, the refinement levels; the start's structure
    refined keeps a place in the beam (`keep_root`: an estimate that prefers the original would
    otherwise undo the start's interchange at the first level), the other origin none; at most
    `REFINE_SECONDS` or half of `ranking_seconds` (None: no limit); no exploration lanes."""
    seconds = None if ranking_seconds is None else max(REFINE_SECONDS, ranking_seconds / 2)
    return replace(policy, max_fusion=0, max_affine=REFINE_AFFINE, keep_root=True, keep_both_origins=False,
                   time_budget=seconds, explore=0, explore_guide=None)
