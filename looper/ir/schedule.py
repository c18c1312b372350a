"""Lowered schedules: per-statement rows of quasi-affine schedule dimensions plus loop annotations.

Every statement gets the same number of rows (the 2d+1 layout of `ir.rows`).  A row is
`floor((coeffs . iterators + const) / div)`; `div > 1` only for tile loops.  Annotations name
(statement, row) pairs, which is how a pragma finds its `for` in the AST (`rows.iterator_name`).

The program's own schedule (`original`) is an IR fact: dependences are computed in its order.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable
from functools import cached_property

import islpy as isl

from ..caching import memoized
from .looptree import LoopTree, build_tree
from .program import Program
from .rows import Row, first_statement, n_rows, row_label


@dataclass(frozen=True)
class Microkernel:
    """A register tile (`transforms.register_tiling`): statement `stmt`'s tile loops at rows `tile_i`,
    `tile_j`, its reduction loop at row `k` inside them, and its point loops at rows `i`, `j`
    inside that (`mr` x `nr` instances per tile, `j` along vectors of `lanes` elements).  Code
    generation keeps the tile's target elements in vector registers across the `k` loop."""

    stmt: str
    tile_i: int
    tile_j: int
    k: int
    i: int
    j: int
    mr: int
    nr: int
    lanes: int

    def shifted(self, at: int, width: int) -> "Microkernel":
        """The same tile with every row at or after `at` moved down by `width` rows."""
        move = lambda r: r + width if r >= at else r  # noqa: E731
        return replace(self, tile_i=move(self.tile_i), tile_j=move(self.tile_j), k=move(self.k),
                       i=move(self.i), j=move(self.j))


@dataclass(frozen=True, eq=False)
class Lowered:
    """A program's schedule in the form codegen and legality checks consume."""

    program: Program
    rows: dict[str, tuple[Row, ...]]
    parallel: frozenset[tuple[str, int]] = frozenset()
    unroll: tuple[tuple[str, int, int], ...] = ()  # (statement, row, factor)
    vector: frozenset[tuple[str, int]] = field(default_factory=frozenset)
    microkernels: tuple[Microkernel, ...] = ()
    # one OpenMP parallel region around all parallel loops, work-shared (`codegen.region`)
    region: bool = False
    # the original's loops written as an answer (`Schedule.rewrite`): printed with what looper's
    # code adds to any answer (`codegen.scalars`), which the original as a baseline goes without
    written: bool = False

    @property
    def n_rows(self) -> int:
        return len(next(iter(self.rows.values())))

    def statement_map_text(self, name: str) -> str:
        """isl text of one statement's schedule map (iterators named positionally)."""
        return _map_text(name, self.program.statement(name).depth, tuple(self.rows[name]))

    def statement_map(self, name: str) -> isl.Map:
        return _parsed_map("{ " + self.statement_map_text(name) + " }")

    def instance_map(self, name: str) -> isl.Map:
        """The statement's instances (its domain) to their schedule times."""
        return self.statement_map(name).intersect_domain(self.program.statement(name).domain)

    def schedule_of(self, statements) -> isl.UnionMap:
        """The schedule of some statements as an isl union map (domains not intersected).  A
        legality check needs only the statements its dependences name (deriche: a few of 47)."""
        out = None
        for name in statements:
            m = self.statement_map(name)
            out = isl.UnionMap.from_map(m) if out is None else out.add_map(m)
        if out is None:
            raise ValueError("no statements")
        return out

    @cached_property
    def union_map(self) -> isl.UnionMap:
        """The schedule as one isl union map (domains not intersected)."""
        return self.schedule_of(s.name for s in self.program.statements)

    @cached_property
    def identity(self) -> tuple:
        """What makes two lowered schedules the same program: rows, annotations and the storage
        the statements use (an expansion changes that alone).  Schedules reached by different
        sequences with equal identities print the same C."""
        return (tuple(sorted(self.rows.items())),) + self.annotations

    @cached_property
    def annotations(self) -> tuple:
        """What besides its rows sets the program this schedule prints: its loops' marks and the
        storage its statements use."""
        ident = (self.parallel, tuple(sorted(self.unroll)), self.vector)
        if self.microkernels:
            ident += (self.microkernels,)
        if self.program.rewritten:
            ident += (self.program.rewritten,)
        if self.written:
            ident += ("written",)
        return ident + ("region",) if self.region else ident

    @cached_property
    def tree(self) -> LoopTree:
        """The loop tree (built once per schedule: legality, features and code generation all ask
        for it).  Raises `looptree.IllFormed` for rows that do not form a loop tree."""
        return build_tree(self.rows, [s.name for s in self.program.statements])

    def with_rows(self, statements, fn: Callable[[list[Row]], list[Row]]) -> "Lowered":
        """A copy with `fn(rows of s)` as the rows of each statement s in `statements`."""
        rows = dict(self.rows)
        for s in statements:
            rows[s] = tuple(fn(list(rows[s])))
        return replace(self, rows=rows)

    def microkernel(self, stmt: str, k_row: int) -> Microkernel | None:
        """The register tile of `stmt` whose reduction loop is at `k_row`, if any."""
        for m in self.microkernels:
            if m.stmt == stmt and m.k == k_row:
                return m
        return None

    def unroll_factor(self, stmt: str, row: int) -> int:
        for s, r, f in self.unroll:
            if s == stmt and r == row:
                return f
        return 0


def combine(rows: list[Row], coeffs: tuple[int, ...], which: tuple[int, ...]) -> Row:
    """sum_k coeffs[k] * rows[which[k]]: a new affine row (tile rows cannot be combined)."""
    n = len(rows[which[0]].coeffs)
    c = [0] * n
    const = 0
    for a, r in zip(coeffs, which):
        row = rows[r]
        assert row.div == 1, "affine transformations apply before tiling"
        for j in range(n):
            c[j] += a * row.coeffs[j]
        const += a * row.const
    return Row(tuple(c), const)


@memoized(maxsize=4096)
def _map_text(name: str, depth: int, rows: tuple[Row, ...]) -> str:
    """A statement's schedule map as isl text, printed once per rows: every legality check of a
    candidate asks for the maps of the statements it touches, most of them its parent's."""
    names = [f"i{k}" for k in range(depth)]
    return f"{name}[{', '.join(names)}] -> [{', '.join(r.render(names) for r in rows)}]"


@memoized(maxsize=8192)
def _parsed_map(text: str) -> isl.Map:
    """isl parses each statement's schedule once: a candidate changes a few statements' rows and
    shares the others' (and their text) with its parent."""
    return isl.Map(text)


def own_nest_rows(L: Lowered, depth: int, first: bool) -> tuple[Row, ...]:
    """2d+1 rows placing a new nest of `depth` plain loops in `L`, alone at the outermost row:
    before every other nest (`first`: a pack's copy, earlier copies included), else after every
    other (a copy-out).  A position taken by another nest would share its loops."""
    outer = [rows[0].const for rows in L.rows.values()]
    position, n_rows = (min(outer) - 1 if first else max(outer) + 1), L.n_rows
    rows = []
    for level in range((n_rows + 1) // 2):
        rows.append(Row((0,) * depth, position if level == 0 else 0))
        if len(rows) < n_rows:
            coeffs = tuple(int(k == level) for k in range(depth)) if level < depth else (0,) * depth
            rows.append(Row(coeffs))
    return tuple(rows[:n_rows])


def original(program: Program) -> Lowered:
    """The program's own 2d+1 schedule: [b0, ±i0, b1, ±i1, ..., bd], padded to the deepest nest."""
    depth = program.max_depth
    rows: dict[str, tuple[Row, ...]] = {}
    for st in program.statements:
        n = st.depth
        out: list[Row] = []
        for level in range(depth + 1):
            out.append(Row((0,) * n, st.beta[level] if level <= n else 0))
            if level < depth:
                if level < n:
                    coeffs = [0] * n
                    coeffs[level] = st.steps[level]
                    out.append(Row(tuple(coeffs)))
                else:
                    out.append(Row((0,) * n))
        assert len(out) == n_rows(depth)
        rows[st.name] = tuple(out)
    return Lowered(program, rows)


def loop_label(lowered: Lowered, statements, row: int) -> str:
    """A readable name for the loop at `row` over `statements` (its first statement's row)."""
    st = first_statement(statements)
    return row_label(lowered.rows[st][row], lowered.program.statement(st).iterators)
