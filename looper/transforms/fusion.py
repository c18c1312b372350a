"""Fusion level: shift, fuse (with the shifts that make it legal), distribute.

Fusion changes which loop a statement runs in, so its legality obligation is that every
dependence still goes forward (`poly.legality.order_violation`).  Fusions are offered only where
the fused statements share data within two iterations (`poly.reuse`): fusing loops that share
nothing gains no locality.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable, ClassVar, Iterator

import islpy as isl
import networkx as nx

from .. import caching
from ..ir.looptree import IllFormed, LoopNode, LoopTree

from ..ir.schedule import loop_label
from ..ir.rows import (
    children_row, in_order, inner_loop_row, loop_rows_before, position_row, statement_index, static_rows_before,
)
from ..ir.schedule import Lowered, Row
from ..poly.deps import Dependences
from ..poly.legality import min_distance, order_violation
from ..poly.relations import maps_of
from ..poly.reuse import shares_data
from .registry import CandidateContext, Encoding, Transform, register

Stmts = tuple[str, ...]
MAX_FUSION_DEPTH = 3  # loops fused at once, outermost first
MAX_SHIFT = 16  # largest shift a fusion may need to be legal


class Reordering(Transform):
    """A transformation that moves statement instances in time: legal when every dependence
    still goes forward."""

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        return order_violation(deps, before, after, explain)


@register
@dataclass(frozen=True)
class Shift(Reordering):
    """Add a constant to one loop row of some statements (what makes a fusion legal)."""

    statements: Stmts
    row: int
    amount: int
    kind: ClassVar[str] = "shift"
    level: ClassVar[str] = "fusion"
    feature_slot: ClassVar[int] = 3

    def touched(self) -> frozenset[str]:
        return frozenset(self.statements)

    def apply(self, L: Lowered) -> Lowered:
        def fn(r):
            old = r[self.row]
            r[self.row] = Row(old.coeffs, old.const + self.amount, old.div)
            return r
        return L.with_rows(self.statements, fn)

    def describe(self, L: Lowered) -> str:
        return f"shift({','.join(self.statements)},{loop_label(L, self.statements, self.row)},by={self.amount})"

    def encoding(self) -> Encoding:
        return Encoding(rows=(self.row,), shifts=(self.amount,))


@register
@dataclass(frozen=True)
class Fuse(Reordering):
    """Fuse loop `second` into the loop `first` just before it, `len(shifts)` levels deep.

    At each level k the two loops (rows `row + 2k`) become one; `second`'s body runs after
    `first`'s in each iteration, shifted by `shifts[k]` iterations.
    """

    first: Stmts
    second: Stmts
    row: int
    shifts: tuple[int, ...] = (0,)
    kind: ClassVar[str] = "fuse"
    level: ClassVar[str] = "fusion"
    feature_slot: ClassVar[int] = 4
    feature_flag: ClassVar[str] = "fused"

    @property
    def innermost_row(self) -> int:
        """The row of the innermost loop pair this fusion makes one."""
        return inner_loop_row(self.row, len(self.shifts) - 1)

    def touched(self) -> frozenset[str]:
        return frozenset(self.first) | frozenset(self.second)

    def apply(self, L: Lowered) -> Lowered:
        rows = dict(L.rows)
        for k, shift in enumerate(self.shifts):
            r = inner_loop_row(self.row, k)
            at, kids = position_row(r), children_row(r)
            target = rows[self.first[0]][at].const
            after = max(rows[s][kids].const for s in self.first) + 1
            start = min(rows[s][kids].const for s in self.second)
            for s in self.second:
                new = list(rows[s])
                new[at] = Row(new[at].coeffs, target)
                loop = new[r]
                new[r] = Row(loop.coeffs, loop.const + shift, loop.div)
                new[kids] = Row(new[kids].coeffs, new[kids].const - start + after)
                rows[s] = tuple(new)
        return replace(L, rows=rows)

    def describe(self, L: Lowered) -> str:
        a = loop_label(L, self.first, self.row)
        text = f"fuse({a}:{','.join(self.first)} with {','.join(self.second)},depth={len(self.shifts)}"
        if any(self.shifts):
            text += f",shift={list(self.shifts)}"
        return text + ")"

    def encoding(self) -> Encoding:
        return Encoding(rows=(self.row,), depth=len(self.shifts), shifts=self.shifts)

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["Fuse"]:
        """Neighbouring loops fused 1..MAX_FUSION_DEPTH levels deep, with the smallest legal
        shifts, while the fused statements still share data."""
        L, tree = ctx.lowered, ctx.tree
        for children in _containers(tree):
            for a, b in zip(children, children[1:]):
                if not (isinstance(a, LoopNode) and isinstance(b, LoopNode)):
                    continue
                ca, cb = tree.chain(a), tree.chain(b)
                for depth in range(1, min(len(ca), len(cb), MAX_FUSION_DEPTH) + 1):
                    shifts = fusion_shifts(L, ctx.deps, a, b, depth)
                    if shifts is None:
                        break
                    fuse = Fuse(a.ref.statements, b.ref.statements, a.row, shifts)
                    # no data in common at this depth: none deeper either (poly.reuse says why)
                    if not shares_data(fuse.apply(L), fuse.first, fuse.second, fuse.innermost_row):
                        break
                    yield fuse


def _containers(tree: LoopTree) -> Iterator[tuple]:
    """Every sequence of siblings: the roots, then each loop's children."""
    yield tree.roots
    for loop in tree.loops():
        yield loop.children


def fusion_shifts(L: Lowered, deps: Dependences, a: LoopNode, b: LoopNode, depth: int
                  ) -> tuple[int, ...] | None:
    """Per-level shifts of `b` that keep every dependence a -> b non-negative once fused (None:
    a shift beyond MAX_SHIFT, or an unbounded one, would be needed)."""
    involved = deps.restricted_to(set(a.statements) | set(b.statements))
    shifts: list[int] = []
    for k in range(depth):
        trial = Fuse(a.ref.statements, b.ref.statements, a.row, tuple(shifts) + (0,)).apply(L)
        m = min_distance(involved, trial, inner_loop_row(a.row, k))
        if m is None or -m > MAX_SHIFT:
            return None
        shifts.append(max(0, -m))
    return tuple(shifts)


@register
@dataclass(frozen=True)
class Distribute(Reordering):
    """Split loop (row, statements) into one loop per group of its children (fission).

    `cuts` are the child positions where a new loop starts (1 .. n_children-1).
    """

    statements: Stmts
    row: int
    cuts: tuple[int, ...]
    kind: ClassVar[str] = "distribute"
    level: ClassVar[str] = "fusion"
    feature_slot: ClassVar[int] = 5
    feature_flag: ClassVar[str] = "distributed"

    def touched(self) -> frozenset[str]:
        return frozenset(self.statements)

    def apply(self, L: Lowered) -> Lowered:
        loop = L.tree.find(self.row, self.statements)
        if loop is None:
            raise ValueError("distribute: no such loop")
        groups: list[list[str]] = [[]]
        for pos, child in enumerate(loop.children):
            if pos in self.cuts:
                groups.append([])
            groups[-1].extend(sorted(child.statements) if not isinstance(child, str) else [child])
        n_new = len(groups) - 1
        rows = dict(L.rows)
        at = position_row(self.row)
        for s in _siblings_after(L, self.statements, self.row):
            r = list(rows[s])
            r[at] = Row(r[at].coeffs, r[at].const + n_new)
            rows[s] = tuple(r)
        base = L.rows[self.statements[0]][at].const
        for g, members in enumerate(groups):
            for s in members:
                r = list(rows[s])
                r[at] = Row(r[at].coeffs, base + g)
                rows[s] = tuple(r)
        return replace(L, rows=rows)

    def describe(self, L: Lowered) -> str:
        return f"distribute({loop_label(L, self.statements, self.row)}:{','.join(self.statements)}," \
               f"cuts={list(self.cuts)})"

    def encoding(self) -> Encoding:
        return Encoding(rows=(self.row,), cuts=len(self.cuts))

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["Distribute"]:
        """Every loop with several children split into one loop per child, and (with three or
        more children) split in two at each position."""
        for loop in ctx.tree.loops():
            n = len(loop.children)
            if n >= 2:
                yield Distribute(loop.ref.statements, loop.row, tuple(range(1, n)))
                if n >= 3:
                    for p in range(1, n):
                        yield Distribute(loop.ref.statements, loop.row, (p,))


@register
@dataclass(frozen=True)
class Fission(Reordering):
    """Split a nest into one nest per strongly connected component of its statements' dependence
    graph, in an order that keeps every dependence between them (Kennedy and Allen's maximal
    distribution; Pluto's --nofuse).  Unlike `Distribute` it may reorder: symm's update of the
    rows below C[i][j] must run after every C[i][j] is final, so its nest goes last.  Only the
    root position of each statement changes; inside its nest it keeps its loops."""

    groups: tuple[Stmts, ...]  # the new nests' statements, in execution order
    kind: ClassVar[str] = "fission"
    feature_slot: ClassVar[int] = 9
    level: ClassVar[str] = "fusion"

    def touched(self) -> frozenset[str]:
        return frozenset(s for g in self.groups for s in g)

    def apply(self, L: Lowered) -> Lowered:
        members = self.touched()
        base = min(L.rows[s][0].const for s in members)
        rows = dict(L.rows)
        for s, r in L.rows.items():
            if s not in members and r[0].const > base:
                rows[s] = (Row(r[0].coeffs, r[0].const + len(self.groups) - 1),) + r[1:]
        for g, group in enumerate(self.groups):
            for s in group:
                r = rows[s]
                rows[s] = (Row(r[0].coeffs, base + g),) + r[1:]
        return replace(L, rows=rows)

    def describe(self, L: Lowered) -> str:
        return "fission(" + " | ".join(",".join(g) for g in self.groups) + ")"

    def encoding(self) -> Encoding:
        return Encoding(cuts=len(self.groups) - 1)

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["Fission"]:
        """In the grown space, each nest with more than one component."""
        if not ctx.grown:
            return
        for nest in ctx.tree.nests:
            groups = components(ctx.deps, nest.statements)
            if len(groups) > 1:
                yield cls(groups)


def components(deps: Dependences, statements: frozenset[str]) -> tuple[Stmts, ...]:
    """The strongly connected components of the dependence graph among `statements`, in a
    topological order (ties: textual order), each in textual order."""
    graph = nx.DiGraph()
    graph.add_nodes_from(statements)
    for m in maps_of(deps.restricted_to(set(statements))):
        src, dst = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
        if src != dst and not m.is_empty():
            graph.add_edge(src, dst)
    dag = nx.condensation(graph)
    first = {c: min(statement_index(s) for s in dag.nodes[c]["members"]) for c in dag.nodes}
    order = nx.lexicographical_topological_sort(dag, key=lambda c: first[c])
    return tuple(in_order(dag.nodes[c]["members"]) for c in order)


def _siblings_after(L: Lowered, statements: Stmts, row: int) -> list[str]:
    """Statements in the same enclosing loops as the loop (row, statements) and placed after it."""
    ref = L.rows[statements[0]]
    at = position_row(row)
    out = []
    for s, r in L.rows.items():
        if s in statements:
            continue
        if all(r[k].is_constant and r[k].const == ref[k].const for k in static_rows_before(row)) \
                and all(not r[k].is_constant for k in loop_rows_before(row)) \
                and r[at].const > ref[at].const:
            out.append(s)
    return out


def distributions(L: Lowered, ctx: CandidateContext, depth: int,
                  settled: frozenset[str] = frozenset()) -> Iterator[tuple[tuple, Lowered]]:
    """Sequences of 1..depth distributions of `L` (shortest first) with their results: what the
    later levels offer ahead of what a distribution frees (a register tile, a parallel loop),
    because the fusion levels score a distribution by itself.  The packs, the register tiles
    and the parallel blocks all ask for them, of the same schedules (adi: 76 walks of 33
    schedules, a loop tree built for each of 17,700 results), so the latest schedules' walks are
    kept, as far as they went (`_Walk`).  No loop whose statements are all `settled` is
    split: a caller that asks what a distribution frees has nothing to gain there."""
    if not caching.enabled():
        yield from _distributions(L, ctx, depth, settled)
        return
    key = (id(L), depth, ctx.target, ctx.grown, settled)
    walk = _WALKS.get(key)
    if walk is None or walk.of is not L or walk.broken:
        walk = _WALKS[key] = _Walk(L, _distributions(L, ctx, depth, settled))
        while len(_WALKS) > 8:
            _WALKS.popitem(last=False)
    else:
        _WALKS.move_to_end(key)
    yield from walk


class _Walk:
    """An iterator's items, replayed to every later reader and extended as far as one reads."""

    def __init__(self, of: Lowered, items: Iterator):
        self.of, self._items, self._seen = of, items, []
        self.broken = False  # the iterator raised (an interrupt): its end is not the walk's end

    def __iter__(self) -> Iterator:
        k = 0
        while True:
            if k == len(self._seen):
                try:
                    item = next(self._items, _END)
                except BaseException:
                    self.broken = True
                    raise
                if item is _END:
                    return
                self._seen.append(item)
            yield self._seen[k]
            k += 1


_END = object()
_WALKS: "OrderedDict[tuple, _Walk]" = OrderedDict()


def _distributions(L: Lowered, ctx: CandidateContext, depth: int,
                   settled: frozenset[str] = frozenset()) -> Iterator[tuple[tuple, Lowered]]:
    frontier: list[tuple[tuple, Lowered]] = [((), L)]
    for _ in range(depth):
        nxt = []
        for steps, cur in frontier:
            here = CandidateContext(cur, ctx.deps, ctx.target, grown=ctx.grown)
            for t in Distribute.candidates(here):  # not the whole fusion level: isl's scheduler is slow
                if t.touched() <= settled:
                    continue
                try:
                    after = t.apply(cur)
                    after.tree
                except IllFormed:
                    continue
                nxt.append((steps + (t,), after))
        yield from nxt
        frontier = nxt


MAX_DISTRIBUTIONS = 2  # a product inside `for i { for j { init; for k {...} } }` needs two


def freeing_distributions(L: Lowered, ctx: CandidateContext, free: Callable[[Lowered], frozenset[str]],
                          depth: int = MAX_DISTRIBUTIONS, unreachable: frozenset[str] = frozenset()
                          ) -> Iterator[tuple[tuple, Lowered, frozenset[str]]]:
    """(steps, result, freed): the distributions of `L` (fewest first) after which `free` names
    statements it does not name in `L`, each set of newly freed statements once.  `free` says
    what a later level can do to a statement (a register tile, packs, a parallel loop at its
    nest's top), which that level then offers behind the distribution.  What `free` says of a
    statement depends only on the loops around it, so a loop whose statements `free` names
    already is not split (deriche's parallel blocks walked 5,172 distributions, 5.8 s of its
    20 s model search at MEDIUM), nor one whose statements are free or `unreachable` (those the
    caller knows no `depth` distributions can free).  Only a distribution that keeps every
    dependence stands for its freed set: an illegal one seen first would hide a legal one that
    frees the same statements (the check is the one the search makes of the steps anyway, and
    its answers are kept by rows)."""
    before = free(L)
    seen: set[frozenset[str]] = set()
    for steps, after in distributions(L, ctx, depth, before | unreachable):
        new = free(after) - before
        if new and new not in seen and order_violation(ctx.deps, L, after) is None:
            seen.add(new)
            yield steps, after, new
