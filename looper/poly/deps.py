"""Memory-based dependences (RAW, WAR, WAW), computed once per program with isl relation algebra.

Memory-based, not value-based: PolyBench kernels update arrays in place, so every pair of
accesses to the same cell (one of them a write) ordered by the original schedule constrains any
legal reordering.  Scalars are rank-0 arrays and get the same treatment; the dependences through
kernel-local scalars are also kept apart (`shared` leaves them out), because a parallel loop can
remove them by privatizing the scalar (`privatize.py`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import islpy as isl

from ..caching import Memo, per_content
from ..ir.program import Program
from ..ir.schedule import original
from .privatize import ScalarFlow, scalar_flows
from .relations import maps_of, split_by_statements


@dataclass(frozen=True, eq=False)
class Dependences:
    """Relations from source statement instances to the instances that must stay after them."""

    raw: isl.UnionMap  # flow: write -> later read
    war: isl.UnionMap  # anti: read -> later write
    waw: isl.UnionMap  # output: write -> later write
    shared: isl.UnionMap  # all of the above except those through the scalars below
    scalars: dict[str, ScalarFlow]  # kernel-local scalars the kernel writes: privatization candidates
    through: dict[str, isl.UnionMap]  # per such scalar, the dependences through it
    selected: Memo = field(default_factory=Memo, repr=False)  # `_select`'s answers
    # legality answers by the rows they are a function of (`legality.is_parallel`, `order_violation`)
    answers: Memo = field(default_factory=lambda: Memo(limit=50_000), repr=False)
    program: Program | None = field(default=None, repr=False)  # the program they are of

    def of(self, program: Program) -> "Dependences":
        """The dependences of `program`: these, when it is the program they were computed for;
        else its own (computed once per program).  A step that rewrites statements (an
        expansion gives each iteration its own copy of an array, a pack adds a copy) changes the
        dependences every later step must keep: an expansion removes those it was made for."""
        if self.program is None or program is self.program:
            return self
        return dependences_of(program)

    @cached_property
    def all(self) -> isl.UnionMap:
        return self.raw.union(self.war).union(self.waw).coalesce()

    @cached_property
    def pairs(self) -> dict[tuple[str, str], isl.Map]:
        """Every dependence, per (source statement, sink statement)."""
        return {(m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)): m
                for m in maps_of(self.all)}

    def kinds(self) -> dict[str, isl.UnionMap]:
        return {"flow": self.raw, "anti": self.war, "output": self.waw}

    def relation(self, kind: str | None) -> isl.UnionMap:
        """All dependences (None), one kind, "shared", or "scalar:NAME" (those through NAME)."""
        if kind is None:
            return self.all
        if kind == "shared":
            return self.shared
        if kind.startswith("scalar:"):
            return self.through[kind[len("scalar:"):]]
        return self.kinds()[kind]

    def direct(self, program: Program) -> isl.UnionMap:
        """The transitive reduction a scheduler wants: value-based flow (last writer), anti
        dependences up to the next write (writes kill), output dependences to the next write.
        Respecting these respects every memory-based dependence above."""
        sched = original(program).union_map.intersect_domain(program.domains())
        writes = program.access_union(writes=True)
        reads = program.access_union(writes=False)
        flow = isl.UnionAccessInfo.from_sink(reads).set_must_source(writes) \
            .set_schedule_map(sched).compute_flow().get_must_dependence()
        anti = isl.UnionAccessInfo.from_sink(writes).set_may_source(reads).set_kill(writes) \
            .set_schedule_map(sched).compute_flow().get_may_dependence()
        out = isl.UnionAccessInfo.from_sink(writes).set_must_source(writes) \
            .set_schedule_map(sched).compute_flow().get_must_dependence()
        return flow.union(anti).union(out).coalesce()

    def restricted_to(self, statements: set[str], kind: str | None = None) -> isl.UnionMap:
        """Dependences (of `kind`, see `relation`) between instances of the named statements only."""
        return self._select(frozenset(statements), "inner", kind)

    def touching(self, statements: set[str]) -> dict[str, isl.UnionMap]:
        """Per kind, the dependences with a source or a sink among the named statements: the only
        ones a step that changes just those statements' schedules can break."""
        return {kind: self._select(frozenset(statements), "touching", kind) for kind in self.kinds()}

    def touching_any(self, statements: set[str]) -> isl.UnionMap:
        """Every dependence (of any kind) with a source or a sink among the named statements."""
        return self._select(frozenset(statements), "touching")

    def crossing(self, statements: set[str]) -> isl.UnionMap:
        """Every dependence with exactly one end among the named statements."""
        return self._select(frozenset(statements), "crossing")

    def _select(self, statements: frozenset[str], part: str, kind: str | None = None) -> isl.UnionMap:
        """The dependences (of `kind`) with both ends among `statements` ("inner"), exactly one
        ("crossing"), or either ("touching")."""
        def compute():
            inner, crossing = split_by_statements(self.relation(kind), statements)
            return {"inner": inner, "crossing": crossing}.get(part) or inner.union(crossing)
        return self.selected.lookup((statements, part, kind), compute)


def _memory(writes: isl.UnionMap, reads: isl.UnionMap, before: isl.UnionMap):
    """RAW, WAR and WAW pairs among the given accesses, in `before` order."""
    raw = writes.apply_range(reads.reverse()).intersect(before).coalesce()
    war = reads.apply_range(writes.reverse()).intersect(before).coalesce()
    waw = writes.apply_range(writes.reverse()).intersect(before).coalesce()
    return raw, war, waw


def compute_dependences(program: Program) -> Dependences:
    """All memory-based dependences of the kernel, in its original order (once per program)."""
    sched = original(program).union_map.intersect_domain(program.domains())
    before = sched.lex_lt_union_map(sched)
    scalars = scalar_flows(program)
    raw, war, waw = _memory(program.access_union(writes=True, exclude=scalars),
                            program.access_union(writes=False, exclude=scalars), before)
    shared = raw.union(war).union(waw).coalesce()
    through = {}
    for name in scalars:
        r, a, o = _memory(program.access_union(writes=True, only={name}),
                          program.access_union(writes=False, only={name}), before)
        through[name] = r.union(a).union(o).coalesce()
        raw, war, waw = raw.union(r), war.union(a), waw.union(o)
    return Dependences(raw, war, waw, shared, scalars, through, program=program)


def self_flow(program: Program, statement: str) -> isl.UnionMap:
    """The flow dependences of one statement on itself: `Dependences.restricted_to({statement},
    "flow")` without the program's other dependences.  The cost terms ask it of every rewrite a
    search makes (deriche's expansions: 19 programs of 47 statements, 3.9 s of a 20 s search
    computing all their dependences for a few statements' own)."""
    only = {statement}
    writes, reads = (program.access_union(writes=w, statements=only) for w in (True, False))
    if writes.is_empty() or reads.is_empty():
        return isl.UnionMap.empty(writes.get_space())
    sched = original(program).schedule_of([statement]).intersect_domain(program.domains())
    return writes.apply_range(reads.reverse()).intersect(sched.lex_lt_union_map(sched)).coalesce()


@per_content(lambda program: program.content)
def dependences_of(program: Program) -> Dependences:
    """`compute_dependences`, once per program object, and once per distinct rewrite of a
    program: every candidate that expands an array or packs an operand builds its own program
    object, equal to its siblings' (doitgen's expansion of `sum` re-derived the same
    dependences for each of its register tiles: 30% of a model search's time)."""
    return compute_dependences(program)
