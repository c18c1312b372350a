"""Expanded temporaries along a parallel loop, stored as one slice per thread.

Expansion (`transforms.expansion`) gives each iteration of some loops its own copy of a
temporary, so that the loops no longer carry storage dependences.  When the outermost expanded
loop then runs in parallel, the copies of its iterations are never alive at the same time on one
thread: each iteration writes its slice before reading it, and no value crosses iterations.
Storing every slice wastes memory and time: doitgen at LARGE expanded along (r, q) allocates
27 MB for `sum`, every page of it touched once, and as PolyBench's programs call the kernel
once, each page is a fresh page fault (9 ms of a 23 ms answer on an AMD EPYC VM, against 14.5 ms
with one slice per thread).

So the C keeps one slice per thread instead, allocated once by each thread of the loop's team,
and each iteration works in its thread's slice; the dimension the loop indexes disappears.  The
copy-out of an output (`expansion.LiveOut`: the values after the kernel are those of one
iteration's copy) reads a shared slice that only that iteration writes to.  This is OpenMP's
`private` + `lastprivate` for an array, decided exactly:

- every access to the temporary below the loop indexes its leading dimension by a function of
  the loop's iterator alone, one slice per iteration and a different one for each (isl);
- every other access is a read of one slice (the copy-out), after the loop;
- isl prints the loop as one `for` of several iterations, outside any other parallel loop.

A loop printed `omp parallel for` becomes a team of its own whose threads allocate their slices
(`storage.own_slices`);
inside one region around the kernel (`codegen.region`) every thread allocates them as the region
starts, and the work-shared loop uses them.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod

import islpy as isl

from ..caching import per_object
from ..ir.program import Assign, Load, Statement, map_loads
from ..ir.rows import row_of_iterator
from ..ir.schedule import Lowered
from ..transforms.expansion import EXPAND_PREFIX
from .astwalk import for_loops, schedule_ast
from .cexpr import c_name


@dataclass(frozen=True)
class PrivateSlice:
    """Temporary `array` kept as one slice per thread of the parallel loop at schedule `row`
    over `statements`; `last`: the loop iteration (its iterator's value) whose slice the
    copy-out after the loop reads (None: nothing reads the array after the loop)."""

    array: str
    row: int
    statements: frozenset[str]
    last: int | None
    shape: tuple[int, ...]  # one slice's extents (the array's without its leading one)
    ctype: str
    element: int  # bytes

    @property
    def bytes(self) -> int:
        return prod(self.shape) * self.element


@per_object
def private_slices(lowered: Lowered) -> dict[str, PrivateSlice]:
    """The expanded temporaries of `lowered` that its C stores one slice per thread, by name."""
    if not lowered.parallel:
        return {}
    program = lowered.program
    out: dict[str, PrivateSlice] = {}
    for arr in program.arrays.values():
        if arr.role != "temp" or not arr.name.startswith(EXPAND_PREFIX) or arr.rank < 2:
            continue
        found = _slice(lowered, arr.name)
        if found is not None:
            out[arr.name] = found
    return out


def _slice(lowered: Lowered, name: str) -> PrivateSlice | None:
    program = lowered.program
    users = [st for st in program.statements if any(a.array == name for a in st.accesses)]
    tree = lowered.tree
    for loop in tree.loops():
        if not all((s, loop.row) in lowered.parallel for s in loop.statements):
            continue
        if any(any((s, outer.row) in lowered.parallel for s in outer.statements) for outer in tree.enclosing(loop)):
            continue  # printed inside another parallel loop: not a team of its own
        inside = [st for st in users if st.name in loop.statements]
        outside = [st for st in users if st.name not in loop.statements]
        if not inside:
            continue
        per_iteration = _slice_of_iteration(lowered, inside, name, loop.row)
        if per_iteration is None:
            return None
        last = None
        if outside:
            read = _read_slice(outside, name)
            if read is None:
                return None
            at = per_iteration.intersect_range(isl.Set(f"{{ [{read}] }}")).domain()
            if not at.is_singleton():
                return None
            last = int(at.sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python())
        if not _one_team(lowered, loop.row, loop.statements):
            return None
        arr = program.arrays[name]
        return PrivateSlice(name, loop.row, loop.statements, last, arr.extent[1:], arr.dtype.ctype, arr.dtype.nbytes)
    return None


def _one_team(lowered: Lowered, row: int, statements: frozenset[str]) -> bool:
    """Whether isl's AST prints the loop as one `for` (not split, not a single iteration, not a
    register tile's reduction loop): the one place the printer starts the team and its slices."""
    if len(statements) == 1 and lowered.microkernel(next(iter(statements)), row) is not None:
        return False
    found = [(below, degenerate) for it, below, degenerate in for_loops(schedule_ast(lowered))
             if row_of_iterator(it) == row and below & statements]
    return len(found) == 1 and not found[0][1] and found[0][0] >= statements


def _slice_of_iteration(lowered: Lowered, inside: list[Statement], name: str, row: int) -> isl.Map | None:
    """{ [iterator of the loop at `row`] -> [leading index of `name`] } over the accesses of
    `inside`, when it is a one-to-one function (one slice per iteration, none shared)."""
    rel = None
    for st in inside:
        sched = lowered.instance_map(st.name)
        for a in st.accesses:
            if a.array != name:
                continue
            m = sched.reverse().apply_range(a.relation)  # time -> element
            n_in, n_out = m.dim(isl.dim_type.in_), m.dim(isl.dim_type.out)
            m = m.project_out(isl.dim_type.out, 1, n_out - 1)
            m = m.project_out(isl.dim_type.in_, row + 1, n_in - row - 1).project_out(isl.dim_type.in_, 0, row)
            m = m.reset_tuple_id(isl.dim_type.in_).reset_tuple_id(isl.dim_type.out)
            rel = m if rel is None else rel.union(m)
    if rel is None or rel.is_empty():
        return None
    rel = rel.coalesce()
    return rel if rel.is_single_valued() and rel.is_injective() else None


def _read_slice(outside: list[Statement], name: str) -> int | None:
    """The one leading index at which statements outside the loop read `name` (only read)."""
    seen = set()
    for st in outside:
        for a in st.accesses:
            if a.array != name:
                continue
            if a.is_write or not a.index or not a.index[0].is_constant:
                return None
            seen.add(a.index[0].const)
    return seen.pop() if len(seen) == 1 else None


def sliced_statement(st: Statement, slices: dict[str, PrivateSlice]) -> Statement:
    """`st` as printed: a sliced temporary indexed without its leading dimension, in the
    loop's own slice inside it, in the shared last slice (`last_name`) outside it."""
    if not any(a.array in slices for a in st.accesses):
        return st

    def load(ld: Load) -> Load:
        s = slices.get(ld.array)
        if s is None:
            return ld
        array = ld.array if st.name in s.statements else last_name(c_name(ld.array))
        return Load(array, ld.index[1:], ld.dtype)

    body = st.body
    return replace(st, body=Assign(load(body.target), body.op, map_loads(body.value, load), body.line))


def last_name(array: str) -> str:
    """The C name of the slice the copy-out reads, beside the array's C name `array`."""
    return array + "_last"


def own_name(array: str) -> str:
    """The C name of a thread's own slice of the array named `array` in C."""
    return array + "_own"
