"""Scalar privatization: which kernel-local scalars a parallel loop can give each thread a copy of.

A scalar that every iteration of a loop writes (symm's `temp2`, deriche's `ym1`) makes the loop
carry anti and output dependences, so the loop looks sequential.  Those dependences are on the
storage, not on the values: when every value the loop's statements read from the scalar was
written in the same iteration, and no value written in the loop is read outside of it, each
thread can work on its own copy (`omp parallel for private(temp2)`).  isl's value-based
(last-writer) dataflow decides this exactly.

Value-based flow is computed on the original schedule; it holds for every legal schedule too,
because a schedule that keeps all memory-based dependences keeps each read's last writer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..caching import Memo, per_object
from ..ir.program import Program
from ..ir.schedule import original
from .relations import maps_of, split_by_statements


@dataclass(frozen=True, eq=False)
class ScalarFlow:
    """The dataflow through one kernel-local scalar that the kernel writes."""

    name: str
    writers: frozenset[str]  # statements that write it
    values: isl.UnionMap  # value-based flow: the last write -> each read
    unsourced: frozenset[str]  # statements that read the value it had before any write
    _inside: Memo = field(default_factory=Memo, repr=False)

    def written_in(self, statements) -> bool:
        """Whether one of `statements` writes the scalar.  If none does, no dependence through it
        joins two of them (each has a write at one end), and no loop over them need privatize it."""
        return not self.writers.isdisjoint(statements)

    def inside(self, statements: frozenset[str]) -> isl.UnionMap | None:
        """The value flow among `statements`; None when a value crosses into or out of them."""
        def compute():
            inner, crossing = split_by_statements(self.values, statements)
            entering = bool(self.unsourced & statements)  # a read of the value before the kernel
            return None if entering or not crossing.is_empty() else inner
        return self._inside.lookup(statements, compute)


@per_object
def scalar_flows(program: Program) -> dict[str, ScalarFlow]:
    """Per kernel-local scalar that some statement writes, its dataflow (once per program)."""
    names = sorted(a.name for a in program.arrays.values() if a.role == "local" and a.rank == 0)
    writers: dict[str, set[str]] = {}
    for st in program.statements:
        for a in st.accesses:
            if a.is_write and a.array in names:
                writers.setdefault(a.array, set()).add(st.name)
    if not writers:
        return {}
    out: dict[str, ScalarFlow] = {}
    for name in sorted(writers):
        flow = value_flow(program, name)
        unsourced = frozenset(m.get_tuple_name(isl.dim_type.in_) for m in maps_of(flow.get_must_no_source())
                              if not m.is_empty())
        out[name] = ScalarFlow(name, frozenset(writers[name]), flow.get_must_dependence().coalesce(),
                               unsourced)
    return out



def value_flow(program: Program, name: str) -> isl.UnionFlow:
    """isl's value-based flow through one array or scalar in the program's own order: each
    read's last writer (`get_must_dependence`) and the reads of values from before the kernel
    (`get_must_no_source`)."""
    sched = original(program).union_map.intersect_domain(program.domains())
    w, r = program.access_union(writes=True, only={name}), program.access_union(writes=False, only={name})
    return isl.UnionAccessInfo.from_sink(r).set_must_source(w).set_schedule_map(sched).compute_flow()
