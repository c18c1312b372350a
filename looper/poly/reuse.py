"""Data reuse between statements under a schedule, with isl.

Fusing two loops is worth trying only when the statements it brings together touch the same data
in the same or a neighbouring iteration of the fused loops: then the second finds in cache what the
first just touched (a producer and its consumer, two readers of one array).  Fusing loops that
share no data gains no locality; it only changes the loops' extents, and with them which thread
gets which iterations.  LARGE fdtd-2d: S0's loop over ey[0][j] fused with S1's loop over the rows
ey[i][*] (no element in common) runs 1.5x the original, the same program unfused 3.6x: the fused
parallel loop hands out rows 0-599 and 600-1199 to the two threads, the next nests 0-499 and
500-999, so a tenth of the arrays changes core every time step.  In the training data (one fusion
on the original program, `scripts/fusion_reuse_stats.py`), fusions of statements that share no
data ran 0.84x on the geometric mean (1,786 cases; 31% of them more than 10% slower, 11% more
than 10% faster), those that share data 1.005x (1,109; 19% slower, 25% faster).
"""
from __future__ import annotations

import islpy as isl

from ..ir.schedule import Lowered

# how far apart (in iterations of the innermost fused loop) two accesses may be and still count as
# reuse: a stencil's consumer reads what its producer wrote one or two iterations before
REUSE_WINDOW = 2


def _near(n: int, row: int, window: int) -> isl.Map:
    """{ [x0..] -> [y0..] : x_j = y_j for j < row, |y_row - x_row| <= window }"""
    xs = ", ".join(f"x{j}" for j in range(n))
    ys = ", ".join(f"y{j}" for j in range(n))
    cons = [f"x{j} = y{j}" for j in range(row)] + [f"-{window} <= y{row} - x{row} <= {window}"]
    return isl.Map(f"{{ [{xs}] -> [{ys}] : {' and '.join(cons)} }}")


def _touched(lowered: Lowered, statements, array: str) -> isl.Map | None:
    """{ [schedule time] -> array[element] } for every access of `statements` to `array`."""
    out = None
    for name in statements:
        st = lowered.program.statement(name)
        when = lowered.instance_map(name).reverse()
        for acc in st.accesses:
            if acc.array == array:
                m = when.apply_range(acc.relation)
                out = m if out is None else out.union(m)
    return out


def shares_data(lowered: Lowered, first, second, row: int, window: int = REUSE_WINDOW) -> bool:
    """Whether some statement of `first` and some of `second` access one array element at schedule
    times equal up to `row` and at most `window` apart at `row` (reads count: input reuse too)."""
    program = lowered.program
    arrays = {a.array for s in first for a in program.statement(s).accesses} & \
             {a.array for s in second for a in program.statement(s).accesses}
    near = _near(lowered.n_rows, row, window)
    for array in sorted(arrays):
        ta, tb = _touched(lowered, first, array), _touched(lowered, second, array)
        if ta is None or tb is None:
            continue
        # times of `first` -> times of `second` at which both touch one element
        together = ta.apply_range(tb.reverse())
        if not together.intersect(near).is_empty():
            return True
    return False
