"""Restraint: a kernel shorter than what starting a thread team costs stays sequential.

After LOOPer, which does not parallelize small loop nests: on p threads a parallel answer takes at
least T/p plus the cost of its first parallel region (the team created, `Limits.fork_seconds`,
measured by `looper machine` in fresh processes as a one-call program pays it), so it can only
win when T > fork * p / (p - 1).  With a margin for imperfect scaling (the threshold is
`MARGIN` times that), shorter kernels get no parallel candidates at all: at SMALL a one-call
program of 38 us ran 50x slower once looper parallelized it, while a warm in-process timing had
called the same answer 1.68x faster.  The threshold is measured on the target, not a constant.
"""
from __future__ import annotations

from ..target import Target

MARGIN = 2.0


def threshold(target: Target) -> float | None:
    """Kernel seconds under which threads cannot pay on `target` (None: one thread, or the cost
    of a team was never measured there)."""
    p = target.threads
    fork = target.limits.fork_seconds if target.limits is not None else None
    if p <= 1 or not fork:
        return None
    return MARGIN * fork * p / (p - 1)


def restraint(original_seconds: float | None, target: Target) -> str | None:
    """Why a kernel whose original runs `original_seconds` stays sequential on `target` (None:
    threads may pay)."""
    limit = threshold(target)
    if limit is None or original_seconds is None or original_seconds >= limit:
        return None
    fork = target.limits.fork_seconds  # type: ignore[union-attr]
    return (f"kept sequential: the original runs {original_seconds * 1e6:.0f} us, under {limit * 1e6:.0f} us "
            f"({MARGIN:g}x what {target.threads} threads need to pay for starting their team, "
            f"{fork * 1e6:.0f} us on this machine)")
