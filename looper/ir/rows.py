"""The 2d+1 layout of a schedule: every piece of row arithmetic looper does, in one place.

A lowered schedule gives every statement the same number of rows.  Even rows are static
("beta") positions that order statements and loops at one nesting level; odd rows are loops (or
all-zero rows where a statement has fewer loops than the deepest).  Loop row `r` at nesting
level `(r - 1) / 2` sits between static row `r - 1` (which loops share it: statements that agree
on every static row up to here) and static row `r + 1` (the order of its children).  Tiling
inserts a (tile loop, static) pair of rows per tiled loop.

isl's AST generator names the iterator of the loop built from row `r` `c{r}`: `iterator_name` and
`row_of_iterator` are the only two functions that know it.

Statements are named `S0, S1, ...` in textual order by `ir.extract`; `statement_name` and
`statement_index` are the only two functions that know that either.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, NamedTuple

import numpy as np

ROWS_PER_LEVEL = 2  # a loop row and the static row after it
TILE_ROWS = 2  # rows a tiled loop adds: its tile loop and a static row


def statement_name(index: int, prefix: str = "S") -> str:
    """The name of the statement at position `index` in textual order (`I` for init's)."""
    return f"{prefix}{index}"


def statement_index(name: str) -> int:
    """The textual position of a statement, from its name."""
    return int(name[1:])


def in_order(names: Iterable[str]) -> tuple[str, ...]:
    """Statement names sorted in textual order: the canonical form of a statement set."""
    return tuple(sorted(names, key=statement_index))


def first_statement(names: Iterable[str]) -> str:
    """The textually first of some statements (the representative of a loop's statements)."""
    return min(names, key=statement_index)


def n_rows(depth: int) -> int:
    """Rows of a schedule whose deepest statement has `depth` loops: 2 * depth + 1."""
    return ROWS_PER_LEVEL * depth + 1


def loop_row(level: int) -> int:
    """The row of the loop at nesting `level` (0 outermost) of an untiled schedule."""
    return ROWS_PER_LEVEL * level + 1


def static_row(level: int) -> int:
    """The static row that orders the children at nesting `level`."""
    return ROWS_PER_LEVEL * level


def is_loop_row(row: int) -> bool:
    """Odd rows are loops (or padding), even rows are static positions."""
    return row % 2 == 1


def position_row(loop: int) -> int:
    """The static row that places the loop at row `loop` among its siblings."""
    return loop - 1


def children_row(loop: int) -> int:
    """The static row that orders the children of the loop at row `loop`."""
    return loop + 1


def inner_loop_row(loop: int, k: int = 1) -> int:
    """The row of the loop `k` levels inside the one at row `loop` (same statements)."""
    return loop + ROWS_PER_LEVEL * k


def static_rows_before(loop: int) -> range:
    """The static rows above the loop at row `loop` (its position row excluded)."""
    return range(0, position_row(loop), ROWS_PER_LEVEL)


def loop_rows_before(loop: int) -> range:
    """The loop rows enclosing the loop at row `loop`."""
    return range(1, position_row(loop), ROWS_PER_LEVEL)


def nesting_level(row: int) -> float:
    """How deep the loop at `row` is, counted in levels (0 outermost)."""
    return (row - 1) / ROWS_PER_LEVEL


def iterator_name(row: int) -> str:
    """The name isl gives the AST iterator of the loop built from schedule row `row`."""
    return f"c{row}"


def row_of_iterator(name: str) -> int:
    """The schedule row an AST iterator was built from (inverse of `iterator_name`)."""
    return int(name[1:])


def is_iterator_name(name: str) -> bool:
    """Whether `name` has the form of an AST iterator, or of a local variable holding an element
    for loop `cK` (`cK_J`, `codegen.scalars`): a user name that would clash with one."""
    return name[:1] == "c" and all(part.isdigit() for part in name[1:].split("_", 1))


class LoopRef(NamedTuple):
    """A loop named structurally: the statements it encloses and its schedule row."""

    statements: tuple[str, ...]
    row: int

    def __repr__(self) -> str:  # a sequence's repr keys its explored set and datagen's sampling
        return repr(tuple(self))


class BandRef(NamedTuple):
    """A perfectly nested band of loops over the same statements, with a tile size per loop."""

    statements: tuple[str, ...]
    rows: tuple[int, ...]
    sizes: tuple[int, ...]

    def __repr__(self) -> str:
        return repr(tuple(self))


@dataclass(frozen=True)
class Row:
    """One schedule dimension of one statement: floor((coeffs . iterators + const) / div), plus
    the `extra` terms' values (each a Row: a wavefront over tile loops sums several floors)."""

    coeffs: tuple[int, ...]
    const: int = 0
    div: int = 1
    extra: tuple["Row", ...] = ()

    @cached_property
    def is_constant(self) -> bool:
        """Whether the row is a static (position) row; asked millions of times by the loop trees
        of a search's candidates, so kept once known."""
        return not any(self.coeffs) and all(e.is_constant for e in self.extra)

    def render(self, names: list[str]) -> str:
        """isl text of the row over the iterator names `names`."""
        return " + ".join([self._render_term(names)] + [e.render(names) for e in self.extra])

    def _render_term(self, names: list[str]) -> str:
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


def row_label(row: Row, iterators: tuple[str, ...]) -> str:
    """A readable name for a schedule row of one statement: i, -i, t+i, i_t (tile of i)."""
    terms = []
    for c, n in zip(row.coeffs, iterators):
        if c == 0:
            continue
        if c == 1:
            terms.append(f"+{n}")
        elif c == -1:
            terms.append(f"-{n}")
        else:
            terms.append(f"{c:+d}{n}")
    text = "".join(terms).lstrip("+") or str(row.const)
    if row.div != 1:
        return f"{text}_t" if len(terms) == 1 and text.isidentifier() else f"({text})_t"
    return text


def fixed_rows(rows: tuple[Row, ...], loop_rows: list[int]) -> frozenset[int]:
    """Point rows (no tile, no wavefront) that combine the point rows before them: the loops
    around them already fix their value, so they run once and move nothing.  isl's schedules
    repeat a statement's rows where the statement has fewer loops than the band (cholesky's
    `A[i][i] = sqrt(..)` under isl's Pluto schedule: rows i, i, i)."""
    fixed: set[int] = set()
    basis: list[tuple[int, ...]] = []
    for k in loop_rows:
        r = rows[k]
        if r.div != 1 or r.extra:
            continue
        if basis and np.linalg.matrix_rank(np.array(basis + [r.coeffs], dtype=float)) == len(basis):
            fixed.add(k)
        else:
            basis.append(r.coeffs)
    return frozenset(fixed)


def inverse_steps(depth: int, rows: tuple[Row, ...], loop_rows: list[int],
                  fixed: frozenset[int] | None = None) -> np.ndarray:
    """How a unit step of each loop row moves a statement's `depth` iterators, one row of the
    result per entry of `loop_rows`.  The point rows that are not `fixed` (`fixed_rows`) span the
    iterators; a step of one moves them by the matching column of their (pseudo-)inverse: the
    exact inverse when they are square, as for any unimodular nest.  A tile row steps by its
    size along its point row's direction; a fixed row, or one outside the point rows, moves
    nothing.  All zeros when the point rows do not span the iterators."""
    out = np.zeros((len(loop_rows), depth))
    if depth == 0:
        return out
    fixed = fixed_rows(rows, loop_rows) if fixed is None else fixed
    point = [k for k in loop_rows if rows[k].div == 1 and k not in fixed]
    T = np.array([rows[k].coeffs for k in point], dtype=float).reshape(len(point), depth)
    if T.shape[0] < depth:
        return out
    inv = np.linalg.pinv(T)
    for j, k in enumerate(loop_rows):
        r = rows[k]
        if k in fixed:
            continue
        if r.div == 1:
            out[j] = inv[:, point.index(k)]
        else:
            same = [p for p in point if rows[p].coeffs == r.coeffs]
            if same:
                out[j] = inv[:, point.index(same[0])] * r.div
    return out
