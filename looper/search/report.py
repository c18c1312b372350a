"""What `looper optimize` prints and writes: the chosen sequence, speedup, search statistics."""
from __future__ import annotations

import statistics

from ..ir.program import Program
from .scoring import SearchResult


def summary_lines(program: Program, result: SearchResult, evaluator: str) -> list[str]:
    """The answer, its speedup (measured or predicted: the report says which), search statistics."""
    sc = result.best_score
    lines = [f"{program.name} [{program.size_label}]: {result.best.describe()}"]
    kind = "measured" if evaluator in ("measure", "hybrid") and sc.status == "ok" else "predicted"
    if sc.speedup is not None:
        extra = ""
        if sc.times and kind == "measured":
            extra = f" (mean of {len(sc.times)} fresh runs: {statistics.fmean(sc.times):.6f} s)"
        lines.append(f"  {kind} speedup over the original: {sc.speedup:.2f}x{extra}")
        if sc.predicted is not None and kind == "measured":
            lines.append(f"  model's prediction for it: {sc.predicted:.2f}x")
    n_eval = len(result.evaluated) - 1
    lines.append(f"  search {result.seconds:.1f} s ({evaluator} evaluator); {len(result.explored) - 1} candidates "
                 f"explored: {n_eval} evaluated, {len(result.rejected)} rejected as illegal, "
                 f"{len(result.failed)} failed")
    return lines


def explain_lines(result: SearchResult) -> list[str]:
    """Why each dropped candidate was dropped (--explain): isl's reason, or its failed measurement."""
    out = []
    for e in result.explored[1:]:
        if e.rejected:
            out.append(f"  rejected  {e.description}\n            {e.rejected}")
        elif e.score is not None and not e.score.ok:
            out.append(f"  {e.score.status:9} {e.description}\n            {e.score.detail}")
    return out or ["  no candidate was rejected"]


def report_json(program: Program, result: SearchResult, evaluator: str, extra: dict | None = None) -> dict:
    """The whole search as JSON (--json): the answer, replayable transformations, every candidate."""
    sc = result.best_score
    return {
        "program": program.name,
        "file": program.path,
        "size": program.size_label,
        "sizes": program.sizes,
        "evaluator": evaluator,
        "sequence": result.best.describe(),
        "transformations": result.best.to_json(),
        "speedup": sc.speedup,
        "predicted_speedup": sc.predicted,
        "times": sc.times,
        "search_seconds": result.seconds,
        "machinery_seconds": result.machinery_seconds,
        "explored": len(result.explored) - 1,
        "evaluated": len(result.evaluated) - 1,
        "rejected": len(result.rejected),
        "failed": len(result.failed),
        "levels": result.levels,
        "candidates": [
            {"sequence": e.description, "level": e.level, "rejected": e.rejected,
             "status": e.score.status if e.score else None,
             "speedup": e.score.speedup if e.score else None,
             "predicted": e.score.predicted if e.score else None}
            for e in result.explored[1:]
        ],
        **(extra or {}),
    }


def environment_lines(program: Program, measure, schedule, rounds: int | None = None) -> list[str]:
    """How the answer's speed depends on the OpenMP environment: its speedup as the user's shell
    runs it and with looper's tuned settings, timed interleaved, and the command that gets the
    tuned speed when it is worth having (more than 5%)."""
    from ..runtime.ompenv import DEFAULT_ENV, TUNED_ENV
    env = measure.omp_env
    other = TUNED_ENV if env != TUNED_ENV else DEFAULT_ENV
    times = measure.compare_environments(program, schedule, [env, other], rounds)
    rounds = len(next(iter(times.values()))[0])
    med = {e: (statistics.fmean(o) if o else None, statistics.fmean(a) if a else None) for e, (o, a) in times.items()}
    if None in med[env] + med[other]:
        return ["  environments: a run failed; not compared"]
    lines = [f"  in {e.describe()}: answer {med[e][0] / med[e][1]:.2f}x the original (mean of {rounds} interleaved "
             f"fresh runs)" for e in (env, other)]
    gain = med[env][1] / med[TUNED_ENV][1] if env != TUNED_ENV else 1.0
    if gain > 1.05:
        lines.append(f"  the tuned environment runs the answer {gain:.2f}x faster still: "
                     f"{TUNED_ENV.command('./' + program.name)}")
    return lines
