"""Dropping the reversals and skews of a model-chosen sequence that no later step needs.

Reversal and skewing are enablers: an interchange, a parallel loop or a tiled band that is illegal
before them may be legal after.  On their own they buy nothing.  A reversal runs the same
iterations backwards; a skew of an inner loop by an outer one keeps the execution order and only
complicates the bounds; a wavefront (an outer loop that combines several) walks the iteration
space diagonally, which breaks the locality of row-major arrays.  Measured on the training data
(candidates whose parent was measured too), a reversal as the last step costs 7.5% on the
geometric mean (6,686 cases; faster by more than 10% in only 10%), a skew 4% (1,217).  On a
parallel loop a reversal also changes which thread owns which rows, so consecutive parallel nests
stop finding their data in their core's cache: PolyBench fdtd-2d at LARGE ran 0.51x with two such
reversals, 3.69x without.  The cost model nevertheless credits some of them with gains of up to
18% at sizes it never saw, so a model-guided answer keeps a reversal or a skew only when the
sequence without it is illegal.
"""
from __future__ import annotations

from ..poly.deps import Dependences
from ..poly.legality import check_schedule
from ..transforms.schedule import Schedule


def legal_without(deps: Dependences, schedule: Schedule, k: int) -> Schedule | None:
    """`schedule` without its k-th step, when that sequence is still legal and well-formed."""
    trial = Schedule(schedule.program, schedule.steps[:k] + schedule.steps[k + 1:])
    try:
        return trial if check_schedule(deps, trial) is None else None
    except ValueError:  # a later step no longer finds its loop
        return None


def drop_idle_enablers(deps: Dependences, schedule: Schedule) -> Schedule:
    """The sequence without every enabler (reversal, skew: `Transform.enabler`) that no later step
    needs to be legal (tried from the last one back, so that an enabler another one needed stays)."""
    for k in reversed(range(len(schedule.steps))):
        if schedule.steps[k].enabler:
            schedule = legal_without(deps, schedule, k) or schedule
    return schedule
