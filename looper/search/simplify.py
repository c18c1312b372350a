"""Dropping the reversals of a model-chosen sequence that no later step needs.

A loop reversal changes no locality on its own: the same iterations, the same strides with the
other sign.  Its use is as an enabler: an interchange or skew that is illegal before it may be
legal after.  Measured on the training data (47,554 candidates whose parent was measured too),
a reversal as the last step of a sequence costs 7.5% on the geometric mean (median 0.96x, faster
by more than 10% in only 10% of cases): on a parallel loop it changes which thread owns which
rows, so consecutive parallel nests stop finding their data in their own core's cache (PolyBench
fdtd-2d at LARGE: 0.59x with two such reversals, 4.46x without).  The cost model nevertheless
credits some reversals with gains of up to 18% at sizes it never saw, so a model-guided answer
keeps a reversal only when the sequence without it is illegal.
"""
from __future__ import annotations

from ..poly.deps import Dependences
from ..poly.legality import check_schedule
from ..transforms.primitives import Reverse
from ..transforms.schedule import Schedule


def legal_without(deps: Dependences, schedule: Schedule, k: int) -> Schedule | None:
    """`schedule` without its k-th step, when that sequence is still legal and well-formed."""
    trial = Schedule(schedule.program, schedule.steps[:k] + schedule.steps[k + 1:])
    try:
        return trial if check_schedule(deps, trial) is None else None
    except ValueError:  # a later step no longer finds its loop
        return None


def drop_idle_reversals(deps: Dependences, schedule: Schedule) -> Schedule:
    """The sequence with every reversal removed that a later step does not need to be legal
    (tried from the last one back, so an enabling reversal that another one needed stays)."""
    for k in reversed(range(len(schedule.steps))):
        if isinstance(schedule.steps[k], Reverse):
            schedule = legal_without(deps, schedule, k) or schedule
    return schedule
