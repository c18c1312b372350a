"""Hybrid search: the model ranks, measurement decides among the model's K best candidates."""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.program import Program
from ..poly.deps import Dependences
from ..transforms.schedule import Schedule
from .beam import REFINEMENTS, Score, SearchResult, _fingerprint, keeps_original_structure
from .evaluators import ExecutionEvaluator
from .simplify import drop_idle_enablers


@dataclass
class Verified:
    schedule: Schedule
    predicted: float
    measured: Score


def structure(schedule: Schedule) -> str:
    """The schedule's loop structure: its fusion and affine steps, without the refinements."""
    return Schedule(schedule.program, tuple(t for t in schedule.steps
                                            if t.kind not in REFINEMENTS)).describe()


def top_candidates(result: SearchResult, k: int, deps: Dependences | None = None
                   ) -> list[tuple[Schedule, float]]:
    """k distinct schedules to measure, best predicted first, one per loop structure before any
    second of a structure.  Why: the model's k best are typically one structure with k tile sizes
    and unroll factors (LARGE gemm: five variants of one strided interchange), so when the model
    misjudges the structure, measuring them cannot correct it; the best of the next structures
    (the original loop order parallelized, another interchange) can.  Structures whose best is
    predicted under 1.05x (the model's own answer margin) get no priority.

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
            if not keeps_original_structure(e.schedule):
                continue
        s = drop_idle_enablers(deps, e.schedule) if deps is not None else e.schedule
        fp = _fingerprint(s)
        if fp in seen or not s.steps:
            continue
        seen.add(fp)
        key, pred = structure(s), e.score.speedup
        if plain is None and pred >= 1.05 and keeps_original_structure(s):
            plain = (s, pred)
        if len(firsts) < k:
            (rest if key in structures or pred < 1.05 else firsts).append((s, pred))
            structures.add(key)
    chosen = (firsts + rest)[:k]
    if plain is not None and all(s is not plain[0] for s, _ in chosen):
        chosen = chosen[:k - 1] + [plain]
    return chosen


def verify_top(program: Program, result: SearchResult, k: int, evaluator: ExecutionEvaluator,
               deps: Dependences | None = None, rounds: int = 3) -> tuple[SearchResult, list[Verified]]:
    """Measure the model's k best candidates (without idle reversals and skews when given `deps`);
    the fastest (or the original) wins.  The evaluator checks each candidate's outputs (one run);
    those that compute the right thing are then timed with the original, interleaved over `rounds` rounds
    (candidates timed one after the other were picked by this machine's drift as often as by
    their speed), and their medians decide."""
    cands = top_candidates(result, k, deps)
    scores = evaluator.check(program, [Schedule(program)] + [s for s, _ in cands])
    verified = [Verified(s, p, sc) for (s, p), sc in zip(cands, scores[1:])]
    good = [v for v in verified if v.measured.status in ("ok", "slow")]
    if good and rounds > 0:
        _, timed = evaluator.time_together(program, [v.schedule for v in good], rounds)
        for v, (speedup, t) in zip(good, timed):
            if speedup:
                v.measured = Score(speedup, "ok", "timed interleaved with the original", t,
                                   predicted=v.predicted)
    best_s, best_sc = Schedule(program), Score(1.0, "ok", "original", scores[0].times, predicted=1.0)
    for v in verified:
        if v.measured.ok and v.measured.status == "ok" and v.measured.speedup > best_sc.speedup:
            best_s = v.schedule
            best_sc = Score(v.measured.speedup, "ok", "", v.measured.times, predicted=v.predicted)
    out = SearchResult(best_s, best_sc, result.explored, result.seconds, result.machinery_seconds,
                       result.levels)
    return out, verified
