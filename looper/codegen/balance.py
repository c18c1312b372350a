"""Load balance of a parallel loop: does each iteration do about the same work?

`omp parallel for` splits its iterations into one contiguous block per thread.  Where the loops
inside shrink or grow with the parallel iterator (syrk's `j <= i`, lu's trailing matrix, a row of
tiles over a triangle), one thread gets most of the work: two threads on MEDIUM syrk's
`for i / for j <= i` split it 1:3.  Such loops are dealt cyclically (`schedule(static, k)`),
which evens the work and keeps each thread's share fixed from one run of the loop to the next,
as plain `static` does.  k is 1, unless the loop's iterator moves along the rows of an array it
writes (the last subscript): then a chunk is one cache line of elements, so two threads do not
write one line.

The work of one iteration is measured with isl on the schedule space: per statement below the
loop, the bounding box of its instances at that value of the iterator, summed.  A few values
from the first three quarters of the loop are compared; the last iteration is left out, since
a partial last tile of a rectangular nest is not an imbalance worth a different schedule."""
from __future__ import annotations

import islpy as isl

from ..ir.schedule import Lowered

# largest/smallest sampled work of an iteration beyond which the loop is dealt cyclically
UNEVEN = 1.25
_SAMPLES = (0, 1, 2, 3)  # quarters of the loop's range
CACHE_LINE = 64  # bytes


def cyclic_chunk(lowered: Lowered, row: int, statements: set[str]) -> int | None:
    """The chunk of a cyclic `schedule(static, chunk)` for the parallel loop of schedule row
    `row` around `statements`, or None where its iterations do even work (plain `static`)."""
    times = {name: lowered.instance_map(name) for name in sorted(statements)}
    if not uneven_work([m.range() for m in times.values()], row):
        return None
    chunk = 1
    for name, when in times.items():
        write = lowered.program.statement(name).accesses[0]
        if write.index and _moves_last_subscript(when.reverse().apply_range(write.relation), row):
            chunk = max(chunk, CACHE_LINE // lowered.program.arrays[write.array].dtype.nbytes)
    return chunk


def uneven_work(spaces: list[isl.Set], row: int) -> bool:
    """Whether the iterations of schedule row `row` over these statements' schedule times differ
    in work by more than UNEVEN, at one iteration of the loops outside it (the first from the
    middle of the outermost one's range on)."""
    if not spaces:
        return False
    outer = _middle_point(spaces, row)
    slices = []
    for space in spaces:
        for k, v in enumerate(outer):
            space = space.fix_val(isl.dim_type.set, k, _val(v))
        slices.append(space.project_out(isl.dim_type.set, 0, row))  # dimension 0 is now the loop's
    iterations = _leading(slices, 1)
    if iterations.is_empty():
        return False
    lo, hi = iterations.dim_min_val(0).to_python(), iterations.dim_max_val(0).to_python()
    work = []
    for q in _SAMPLES:
        # the first iteration at or after this quarter of the range (a strided loop skips values)
        at = iterations.lower_bound_val(isl.dim_type.set, 0, _val(lo + (hi - lo) * q // 4)).lexmin()
        if at.is_empty():
            continue
        v = at.dim_min_val(0).to_python()
        if v >= hi and hi > lo:
            continue
        work.append(sum(_box_volume(s.fix_val(isl.dim_type.set, 0, _val(v))) for s in slices))
    return len(work) > 1 and min(work) * UNEVEN < max(work)


def _leading(sets: list[isl.Set], n: int) -> isl.Set:
    """The union of the sets' first n dimensions."""
    out = None
    for s in sets:
        s = s.project_out(isl.dim_type.set, n, s.dim(isl.dim_type.set) - n)
        out = s if out is None else out.union(s)
    return out.coalesce()


def _middle_point(spaces: list[isl.Set], row: int) -> list[int]:
    """Values of schedule rows 0..row-1 at one iteration of the loops outside row `row`: the
    first from the middle of the outermost range on."""
    if row == 0:
        return []
    outer = _leading(spaces, row)
    lo, hi = outer.dim_min_val(0).to_python(), outer.dim_max_val(0).to_python()
    point = outer.lower_bound_val(isl.dim_type.set, 0, _val((lo + hi) // 2)).lexmin()
    return [point.dim_min_val(k).to_python() for k in range(row)]


def _moves_last_subscript(to_array: isl.Map, row: int) -> bool:
    """Whether the last subscript of a write, as a map from schedule times to array elements,
    changes with schedule row `row` (neighbouring iterations write neighbouring elements); True
    where that is not one function."""
    if not to_array.is_single_valued():
        return True
    last = isl.PwMultiAff.from_map(to_array).get_pw_aff(to_array.dim(isl.dim_type.out) - 1)
    return any(not aff.get_coefficient_val(isl.dim_type.in_, row).is_zero() for _set, aff in last.get_pieces())


def _val(v: int) -> isl.Val:
    return isl.Val.int_from_si(isl.DEFAULT_CONTEXT, v)


def _box_volume(s: isl.Set) -> int:
    """Instances in the bounding box of a set (0 if empty): the work of one iteration, up to the
    shape of the box, which is alike across the iterations compared."""
    if s.is_empty():
        return 0
    volume = 1
    for d in range(1, s.dim(isl.dim_type.set)):
        volume *= s.dim_max_val(d).to_python() - s.dim_min_val(d).to_python() + 1
    return volume
