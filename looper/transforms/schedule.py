"""Lowered schedules: per-statement rows of quasi-affine schedule dimensions plus loop annotations.

Every statement gets the same number of rows (2d+1 form: even rows are the static "beta" positions
that order statements, odd rows are loops).  A row is `floor((coeffs . iterators + const) / div)`;
`div > 1` only for tile loops.  Annotations name (statement, row) pairs, which is how a pragma finds
its `for` in the AST: isl names the AST iterator of row k `c{k}`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import islpy as isl

from ..ir.program import Program


@dataclass(frozen=True)
class Row:
    coeffs: tuple[int, ...]
    const: int = 0
    div: int = 1

    @property
    def is_constant(self) -> bool:
        return not any(self.coeffs)

    def render(self, names: list[str]) -> str:
        terms = []
        for c, n in zip(self.coeffs, names):
            if c == 1:
                terms.append(n)
            elif c == -1:
                terms.append(f"-{n}")
            elif c:
                terms.append(f"{c}*{n}")
        if self.const or not terms:
            terms.append(str(self.const))
        text = " + ".join(terms).replace("+ -", "- ")
        return f"floor(({text})/{self.div})" if self.div != 1 else text


@dataclass(frozen=True, eq=False)
class Lowered:
    """A program's schedule in the form codegen and legality checks consume."""

    program: Program
    rows: dict[str, tuple[Row, ...]]
    parallel: frozenset[tuple[str, int]] = frozenset()
    unroll: tuple[tuple[str, int, int], ...] = ()  # (statement, row, factor)
    vector: frozenset[tuple[str, int]] = field(default_factory=frozenset)

    @property
    def n_rows(self) -> int:
        return len(next(iter(self.rows.values())))

    def statement_map_text(self, name: str) -> str:
        st = self.program.statement(name)
        names = [f"i{k}" for k in range(st.depth)]
        rows = ", ".join(r.render(names) for r in self.rows[name])
        return f"{name}[{', '.join(names)}] -> [{rows}]"

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

    def unroll_factor(self, stmt: str, row: int) -> int:
        for s, r, f in self.unroll:
            if s == stmt and r == row:
                return f
        return 0


@lru_cache(maxsize=8192)
def _parsed_map(text: str) -> isl.Map:
    """isl parses each statement's schedule once: a candidate changes a few statements' rows and
    shares the others' (and their text) with its parent."""
    return isl.Map(text)


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
        rows[st.name] = tuple(out)
    return Lowered(program, rows)


class Schedule:
    """A program plus an ordered sequence of transformations (what the search explores).

    Lowering replays the sequence on the original schedule; a child built with `then` reuses its
    parent's lowered form, so a beam never replays a prefix twice.
    """

    __slots__ = ("program", "steps", "_lowered")

    def __init__(self, program: Program, steps: tuple = (), _lowered: Lowered | None = None):
        self.program = program
        self.steps = tuple(steps)
        self._lowered = _lowered

    def then(self, *steps) -> "Schedule":
        """This schedule followed by `steps` (lowered incrementally from this one's form)."""
        L = self.lowered
        for t in steps:
            L = t.apply(L)
        return Schedule(self.program, self.steps + tuple(steps), L)

    @property
    def lowered(self) -> Lowered:
        if self._lowered is None:
            L = original(self.program)
            for t in self.steps:
                L = t.apply(L)
            self._lowered = L
        return self._lowered

    @property
    def key(self) -> str:
        """Identity of the sequence (the explored-set key)."""
        return repr(self.steps)

    def describe(self) -> str:
        if not self.steps:
            return "original"
        out = []
        L = original(self.program)
        for t in self.steps:
            out.append(t.describe(L))
            L = t.apply(L)
        return " ; ".join(out)

    def to_json(self) -> list[dict]:
        return [t.to_json() for t in self.steps]

    @staticmethod
    def from_json(program: Program, data: list[dict]) -> "Schedule":
        from .primitives import Transform
        return Schedule(program, tuple(Transform.from_json(d) for d in data))

    def __repr__(self) -> str:
        return f"Schedule({self.program.name}: {self.describe()})"
