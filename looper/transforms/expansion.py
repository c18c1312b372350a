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
- it is not an output (its values after the kernel are not observed).
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
from ..ir.domain import access_relation
from ..ir.extract import rename_bound
from ..ir.program import Access, Affine, Array, Assign, Load, Program, Statement, map_loads
from ..ir.schedule import Lowered
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
        return replace(L, program=replace(program, arrays=arrays, statements=statements))

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
        return expansion_obstacle(before.program, self.array, self.statements, self.levels)

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["Expand"]:
        """In the grown space: every legal expansion (each set of shared loops) of every array
        the kernel writes that is not an output."""
        if ctx.grown:
            yield from expansions(ctx.lowered.program)


def expansions(program: Program) -> Iterator[Expand]:
    """The legal expansions of the program's temporaries, fewest added dimensions first."""
    outputs = {o.array for o in program.outputs}
    written = sorted({a.array for st in program.statements for a in st.accesses if a.is_write})
    for name in written:
        if name in outputs or name.startswith(EXPAND_PREFIX):
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
    if name in {o.array for o in program.outputs}:
        return f"{name} is an output: its values after the kernel are observed"
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
    return None


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
