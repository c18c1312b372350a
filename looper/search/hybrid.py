"""What the model-guided searches share: the measured candidates (`Verified`), one candidate per
loop structure (`top_candidates`, for the stand-ins' carry), and the parallel region a model
answer gets (`with_region`)."""
from __future__ import annotations

from dataclasses import dataclass

from ..poly.deps import Dependences
from ..transforms.parallel import ParallelRegion, forks_more_than_once
from ..transforms.schedule import Schedule
from .scoring import Score, SearchResult
from .policy import PREDICTED_MIN_ANSWER_GAIN
from .simplify import drop_idle_enablers


@dataclass
class Verified:
    """One of the model's candidates, with its prediction and what measuring it gave."""

    schedule: Schedule
    predicted: float
    measured: Score


def structure(schedule: Schedule) -> str:
    """The schedule's loop structure: its fusion and affine steps, without the refinements."""
    return schedule.structure().describe()


def top_candidates(result: SearchResult, k: int, deps: Dependences | None = None,
                   margin: float = PREDICTED_MIN_ANSWER_GAIN) -> list[tuple[Schedule, float]]:
    """k distinct schedules to measure, best predicted first, one per loop structure before any
    second of a structure.  Why: the model's k best are typically one structure with k tile sizes
    and unroll factors (LARGE gemm: five variants of one strided interchange), so when the model
    misjudges the structure, measuring them cannot correct it; the best of the next structures
    (the original loop order parallelized, another interchange) can.  Structures whose best is
    predicted under 1 + `margin` (the model's own answer margin) get no priority.

    The original loop structure's best refinement always has a place (the last one, if the k
    best structures leave it out): the model's worst mistakes are structural (LARGE fdtd-2d: its
    five best structures all fuse S0's loop into S1's and measure 1.5x, the original loops
    parallelized 3.6x), and that candidate is the one no structural mistake touches.

    With `deps`, each schedule loses the reversals and skews it does not need (search.simplify;
    its prediction is the one of the sequence with them).  The original is excluded (verify_top
    always times it)."""
    seen: set = set()
    firsts, rest, structures = [], [], set()
    plain: tuple[Schedule, float] | None = None
    for e in sorted((e for e in result.evaluated if e.schedule.steps and e.score and e.score.ok),
                    key=lambda e: -e.score.speedup):
        if len(firsts) == k:  # only the original structure's place can still be open
            if plain is not None:
                break  # nothing later can enter the answer: spare its simplification
            if not e.schedule.keeps_original_structure():
                continue
        s = drop_idle_enablers(deps, e.schedule) if deps is not None else e.schedule
        if s.identity in seen or not s.steps:
            continue
        seen.add(s.identity)
        key, pred = structure(s), e.score.speedup
        worth = pred >= 1 + margin
        if plain is None and worth and s.keeps_original_structure():
            plain = (s, pred)
        if len(firsts) < k:
            (rest if key in structures or not worth else firsts).append((s, pred))
            structures.add(key)
    chosen = (firsts + rest)[:k]
    if plain is not None and all(s is not plain[0] for s, _ in chosen):
        chosen = chosen[:k - 1] + [plain]
    return chosen


def with_region(s: Schedule) -> Schedule:
    """`s` with one parallel region when it would fork a team more than once (the model-guided
    search's finishing step, `policy.regions`)."""
    return s.then(ParallelRegion()) if forks_more_than_once(s.lowered) else s
