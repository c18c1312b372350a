"""Restraint: a kernel shorter than what starting a thread team costs stays sequential.

After LOOPer, which does not parallelize small loop nests: on p threads a parallel answer takes at
least T/p plus the cost of its first parallel region (the team created, `Limits.fork_seconds`,
measured by `looper machine` in fresh processes as a one-call program pays it), so it can only
win when T > fork * p / (p - 1).  With a margin for imperfect scaling (the threshold is
`MARGIN` times that), shorter kernels get no parallel candidates at all: at SMALL a one-call
program of 38 us ran 50x slower once looper parallelized it, while a warm in-process timing had
called the same answer 1.68x faster.  The threshold is measured on the target, not a constant.

A program whose timer starts the team before the kernel (PolyBench's cache flush is an OpenMP
loop, `Program.preamble`) is charged the same: after the flush a first region took 3 us on
average, but the kernel still stalls on the other vCPU's wake-up now and then.  Charged only a
later region's cost, the MEDIUM campaign's default went parallel on short kernels and lost to
those stalls as PolyBench times them (gesummv 0.58x gcc: 0.09 ms in 23 fresh runs, 7.4 ms in one;
gemm's parallel register tiles 0.3-14.9 ms against the original's steady 1.0 ms), 1.83x gcc
over 30 kernels, where the a376725 campaign, restrained, had 2.60x.

A search that measures compares it with the original's measured time; one that measures nothing
(`--evaluator model`) with the analytic cost terms' estimate of it (`estimated_seconds`), so the
model alone keeps short kernels sequential too: its training labels were timed warm, where a
team's start was already paid, and never show that cost.
"""
from __future__ import annotations

from ..target import Target

MARGIN = 2.0


def team_start(target: Target) -> float:
    """What the target's first parallel region costs on average (0: one thread, or unmeasured)."""
    lim = target.limits
    return lim.fork_seconds if target.threads > 1 and lim is not None and lim.fork_seconds else 0.0


def team_cost(s, first_region: float) -> float:
    """What starting schedule `s`'s thread team adds to a fresh run on average (0: it has no
    parallel loop)."""
    return first_region if s.steps and s.lowered.parallel else 0.0


def threshold(target: Target) -> float | None:
    """Kernel seconds under which threads cannot pay on `target` (None: one thread, or the cost
    of a team was never measured there)."""
    p = target.threads
    fork = target.limits.fork_seconds if target.limits is not None else None
    if p <= 1 or not fork:
        return None
    return MARGIN * fork * p / (p - 1)


# measured / estimated seconds of the originals of the 2,795 programs in data/ (median; 10% of
# them 0.096, 90% 1.23): the terms' absolute seconds are pessimistic (scripts/terms_calibration.py).
# With the third grown round (2,915 programs, feature version 7) the median is 0.350 (10% 0.090,
# 90% 1.15); kept at 0.39, a little above it: where the estimate errs short a kernel loses
# its threads, where it errs long the speed guard still times the answer against the original
# (0.35 would have put PolyBench's 3mm at MEDIUM, 23 ms as gcc runs it, under the 20 ms threshold)
TERMS_SCALE = 0.39


def estimated_seconds(program, target: Target) -> float:
    """The original's kernel time on `target` as the analytic cost terms estimate it, scaled by
    what they overestimate on the training programs (`TERMS_SCALE`)."""
    from ..costmodel.terms import estimate
    from ..transforms.schedule import Schedule
    return TERMS_SCALE * estimate(Schedule(program).lowered, target).seconds


def restraint(original_seconds: float | None, target: Target, estimated: bool = False) -> str | None:
    """Why a kernel whose original runs `original_seconds` (`estimated`: by the cost terms, not
    measured) stays sequential on `target` (None: threads may pay)."""
    limit = threshold(target)
    if limit is None or original_seconds is None or original_seconds >= limit:
        return None
    fork = target.limits.fork_seconds  # type: ignore[union-attr]
    runs = "is estimated to run" if estimated else "runs"
    return (f"kept sequential: the original {runs} {original_seconds * 1e6:.0f} us, under {limit * 1e6:.0f} us "
            f"({MARGIN:g}x what {target.threads} threads need to pay for their first parallel region, "
            f"{fork * 1e6:.0f} us on this machine)")
