"""Array expansion: each iteration of some loops gets its own copy of a temporary array.

doitgen's `sum[p]` is rewritten by every (r, q) iteration.  The anti and output dependences
through it tie those iterations together: the product it holds cannot be split from the copy
that reads it, tiled across q, or run in parallel over r.  No *value* crosses iterations,
though: every value read from `sum` was written in the same (r, q) iteration.  Expanded to
`looper_exp_sum[r][q][p]` (or `[q][p]`), the storage dependences are gone and only the flow
stays (Feautrier's array expansion; Pluto and Polly leave it to the user).  symm's scalar
`temp2` expands the same way, along (i, j).

Legal, by isl's value-based flow (last writer) in the program's own order, when
- every statement that touches the array runs inside the expanded loops,
- every value read from it was written in the same iteration of those loops (none from another
  iteration, none from before the kernel), and
- it is not an output (its values after the kernel are not observed), or the value each of its
  elements holds after the kernel was written in one iteration of those loops, the same for all
  (`LiveOut`): then a copy-out after every nest writes that iteration's copy back.  PolyBench's
  own doitgen passes `sum` to the kernel as a parameter, which a caller could read afterwards:
  the last (r, q) iteration writes every `sum[p]`, so `sum[p] = looper_exp_sum[NR-1][NQ-1][p]`.
Then each read finds the same value in its iteration's copy.  A legal schedule of the program
stays legal: the expanded program's dependences are a subset of the original's (`Dependences.of`
gives later steps the smaller set).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations
from typing import ClassVar, Iterator

import islpy as isl

from ..caching import Memo, per_object
from ..ir.domain import LoopContext, access_relation
from ..ir.extract import make_statement, rename_bound
from ..ir.program import Access, Affine, Array, Assign, Load, Program, Statement, map_loads
from ..ir.rows import statement_name
from ..ir.schedule import Lowered, original, own_nest_rows
from ..poly.deps import Dependences
from ..poly.privatize import value_flow
from ..poly.relations import maps_of
from .registry import CandidateContext, Encoding, Transform, register

EXPAND_PREFIX = "looper_exp_"  # user names cannot start with "looper_": no clash
MAX_EXPANDED_BYTES = 1 << 27  # 128 MiB: doitgen at EXTRALARGE along (r, q) needs 119 MB


@register
@dataclass(frozen=True)
class Expand(Transform):
    """Give `array` one leading dimension per loop depth in `levels` (0: the outermost loop of the
    program's own nests), indexed by that loop's iterator, in every statement touching it."""

    array: str
    statements: tuple[str, ...]
    levels: tuple[int, ...]
    kind: ClassVar[str] = "expand"
    feature_slot: ClassVar[int] = 15
    level: ClassVar[str] = "fusion"

    @property
    def buffer(self) -> str:
        return EXPAND_PREFIX + self.array

    def touched(self) -> frozenset[str]:
        return frozenset(self.statements)

    def apply(self, L: Lowered) -> Lowered:
        program = L.program
        arr = program.arrays[self.array]
        lows, extents = _ranges(program, self.statements, self.levels)
        shape = tuple(Affine.constant(e) for e in extents) + arr.shape
        new = Array(self.buffer, arr.dtype, shape, tuple(extents) + arr.extent, "temp")
        arrays = {**program.arrays, self.buffer: new}
        statements = tuple(self._rewritten(st, lows, program) if st.name in self.statements else st
                           for st in program.statements)
        out = live_out(program, self.array, self.statements, self.levels) \
            if program.is_output(self.array) else None
        if not isinstance(out, LiveOut):
            return replace(L, program=replace(program, arrays=arrays, statements=statements))
        # the copy-out, in its own nest after every other (`LiveOut`)
        copy = out.copy_statement(program, new, lows, arrays, len(program.statements))
        rows = {**L.rows, copy.name: own_nest_rows(L, copy.depth, first=False)}
        return replace(L, program=replace(program, arrays=arrays, statements=statements + (copy,)), rows=rows)

    def _rewritten(self, st: Statement, lows: tuple[int, ...], program: Program) -> Statement:
        """The statement reading and writing its iteration's copy."""
        lead = tuple(Affine.of(st.iterators[l]) - Affine.constant(lo) for l, lo in zip(self.levels, lows))

        def copy(ld: Load) -> Load:
            return Load(self.buffer, lead + ld.index, ld.dtype) if ld.array == self.array else ld

        body = Assign(copy(st.body.target), st.body.op, map_loads(st.body.value, copy), st.body.line)
        env = {v: f"i{k}" for k, v in enumerate(st.iterators)}
        positional = tuple(env.values())

        def access(a: Access) -> Access:
            if a.array != self.array:
                return a
            index = lead + a.index
            rel = access_relation(st.name, positional, st.domain, self.buffer,
                                  tuple(rename_bound(x, env) for x in index), program.sizes)
            return Access(self.buffer, index, a.is_write, rel)

        return replace(st, body=body, accesses=tuple(access(a) for a in st.accesses))

    def describe(self, L: Lowered) -> str:
        st = L.program.statement(self.statements[0])
        loops = ",".join(st.iterators[l] for l in self.levels)
        return f"expand({self.array} along {loops})"

    def encoding(self) -> Encoding:
        return Encoding(depth=len(self.levels))

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        why = expansion_obstacle(before.program, self.array, self.statements, self.levels)
        if why is None and before.program.is_output(self.array) \
                and not all(rows[0].is_constant and rows[0].div == 1 for rows in before.rows.values()):
            # the copy-out goes after every nest by the outermost static row: there must be one
            why = f"{self.array} is an output and the schedule's outermost row is a loop: no place after it"
        return why

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["Expand"]:
        """In the grown space: every legal expansion (each set of shared loops) of every array
        the kernel writes that is not an output."""
        if ctx.grown:
            yield from expansions(ctx.lowered.program)


def expansions(program: Program) -> Iterator[Expand]:
    """The legal expansions of the program's temporaries, fewest added dimensions first."""
    written = sorted({a.array for st in program.statements for a in st.accesses if a.is_write})
    for name in written:
        if name.startswith(EXPAND_PREFIX) or EXPAND_PREFIX + name in program.arrays:
            continue
        users = tuple(st.name for st in program.statements if any(a.array == name for a in st.accesses))
        shared = _shared_levels(program, users)
        for n in range(1, len(shared) + 1):
            for levels in combinations(shared, n):
                if _bytes(program, name, users, levels) <= MAX_EXPANDED_BYTES \
                        and expansion_obstacle(program, name, users, levels) is None:
                    yield Expand(name, users, levels)


def expansion_obstacle(program: Program, name: str, statements: tuple[str, ...], levels: tuple[int, ...]
                       ) -> str | None:
    """Why expanding `name` along `levels` would change what the kernel computes (None: it
    would not)."""
    if name not in program.arrays:
        return f"no array {name}"
    users = {st.name for st in program.statements if any(a.array == name for a in st.accesses)}
    if users != set(statements):
        return f"{name} is touched by {','.join(sorted(users))}, not just {','.join(statements)}"
    missing = [l for l in levels if l not in _shared_levels(program, statements)]
    if missing:
        return f"the statements touching {name} do not share a loop at depth {missing[0]}"
    flow = _flows(program).lookup(name, lambda: value_flow(program, name))
    early = [m for m in maps_of(flow.get_must_no_source()) if not m.is_empty()]
    if early:
        return f"{early[0].get_tuple_name(isl.dim_type.in_)} reads a value of {name} from before the kernel"
    for m in maps_of(flow.get_must_dependence()):
        if not m.is_subset(_same_iteration(m, levels)):
            src, dst = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
            return f"a value of {name} flows from {src} to {dst} across iterations of an expanded loop"
    if program.is_output(name):
        out = live_out(program, name, statements, levels)
        if not isinstance(out, LiveOut):
            return out
    return None


@dataclass(frozen=True)
class LiveOut:
    """Where an output's values after the kernel are, once it is expanded: every element's last
    write runs in the iteration `at` of the expanded loops (their iterators' values), and the
    elements written form the box `low`..`high` (inclusive), which the copy-out walks."""

    at: tuple[int, ...]
    low: tuple[int, ...]
    high: tuple[int, ...]

    def copy_statement(self, program: Program, buffer: Array, lows: tuple[int, ...],
                       arrays: dict[str, Array], index: int) -> Statement:
        """`A[x] = looper_exp_A[at - lows][x]` over the box, a statement of its own nest."""
        name = buffer.name.removeprefix(EXPAND_PREFIX)
        dtype = program.arrays[name].dtype
        its = [f"looper_e{k}" for k in range(len(self.low))]
        loops = [LoopContext(v, Affine.constant(lo), Affine.constant(hi + 1), 1)
                 for v, lo, hi in zip(its, self.low, self.high)]
        lead = tuple(Affine.constant(a - lo) for a, lo in zip(self.at, lows))
        x = tuple(Affine.of(v) for v in its)
        body = Assign(Load(name, x, dtype), "=", Load(buffer.name, lead + x, dtype), 0)
        last = max(st.beta[0] for st in program.statements)
        return make_statement(statement_name(index), body, loops, [], (last + 1,) + (0,) * len(its),
                              arrays, program.sizes, program.path)


def live_out(program: Program, name: str, statements: tuple[str, ...], levels: tuple[int, ...]
             ) -> LiveOut | str:
    """Where output `name`'s values after the kernel are written (see `LiveOut`), or why they
    are not in one iteration of `levels`' loops."""
    return _live_outs(program).lookup((name, statements, levels),
                                      lambda: _live_out(program, name, statements, levels))


@per_object
def _live_outs(program: Program) -> Memo:
    return Memo()


def _live_out(program: Program, name: str, statements: tuple[str, ...], levels: tuple[int, ...]
              ) -> LiveOut | str:
    arr = program.arrays[name]
    if arr.rank == 0 or arr.rank > program.max_depth:
        return f"{name} is an output of rank {arr.rank}: no copy-out nest for it"
    writes = isl.UnionMap.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
    for st in (program.statement(s) for s in statements):
        for a in st.accesses:
            if a.array == name and a.is_write:
                writes = writes.union(isl.UnionMap.from_map(a.relation))
    sched = original(program).union_map.intersect_domain(program.domains())
    # per element, the instance that writes it last in the program's order
    last = writes.apply_domain(sched).reverse().lexmax().apply_range(sched.reverse())
    at: set[tuple[int, ...]] = set()
    elements = None
    for m in maps_of(last):
        if m.is_empty():
            continue
        where = m.range()
        keep = set(levels)
        for d in reversed(range(where.dim(isl.dim_type.set))):
            if d not in keep:
                where = where.project_out(isl.dim_type.set, d, 1)
        if not where.is_singleton():
            return f"the last writes of {name}'s elements run in different iterations of the expanded loops"
        p = where.sample_point()
        at.add(tuple(int(p.get_coordinate_val(isl.dim_type.set, k).to_python()) for k in range(len(levels))))
        elements = m.domain() if elements is None else elements.union(m.domain())
    if elements is None:
        return f"{name} is never written"
    if len(at) != 1:
        return f"the last writes of {name}'s elements run in different iterations of the expanded loops"
    elements = elements.coalesce()
    n = elements.dim(isl.dim_type.set)
    low = tuple(int(elements.dim_min_val(k).to_python()) for k in range(n))
    high = tuple(int(elements.dim_max_val(k).to_python()) for k in range(n))
    box = isl.Set("{ %s[%s] : %s }" % (name, ", ".join(f"x{k}" for k in range(n)),
                                      " and ".join(f"{lo} <= x{k} <= {hi}" for k, (lo, hi) in enumerate(zip(low, high)))))
    if not elements.is_equal(box):
        return f"the elements of {name} the kernel writes are not a box: no simple copy-out"
    return LiveOut(at.pop(), low, high)


@per_object
def _flows(program: Program) -> Memo:
    """Per array, its value flow (each subset of loops is asked about the same flow)."""
    return Memo()


def _same_iteration(m: isl.Map, levels: tuple[int, ...]) -> isl.Map:
    """The pairs of `m`'s space whose iterators at `levels` are equal."""
    eq = isl.Map.universe(m.get_space())
    for l in levels:
        eq = eq.equate(isl.dim_type.in_, l, isl.dim_type.out, l)
    return eq


def _shared_levels(program: Program, statements: tuple[str, ...]) -> list[int]:
    """The loop depths at which all the statements run in one loop of the program's own nests."""
    sts = [program.statement(s) for s in statements]
    depth = min(st.depth for st in sts)
    out = []
    for l in range(depth):
        if len({st.beta[:l + 1] for st in sts}) != 1:
            break
        out.append(l)
    return out


def _ranges(program: Program, statements: tuple[str, ...], levels: tuple[int, ...]
            ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Per expanded level, its iterator's smallest value and the number of values it takes."""
    sts = [st for st in (program.statement(s) for s in statements) if not st.domain.is_empty()]
    if not sts:
        return (0,) * len(levels), (1,) * len(levels)
    lows, extents = [], []
    for l in levels:
        lo = min(int(st.domain.dim_min_val(l).to_python()) for st in sts)
        hi = max(int(st.domain.dim_max_val(l).to_python()) for st in sts)
        lows.append(lo)
        extents.append(max(hi - lo + 1, 1))
    return tuple(lows), tuple(extents)


def _bytes(program: Program, name: str, statements: tuple[str, ...], levels: tuple[int, ...]) -> int:
    arr = program.arrays[name]
    n = arr.dtype.nbytes
    for e in _ranges(program, statements, levels)[1] + arr.extent:
        n *= e
    return n
