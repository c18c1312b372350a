"""The transformations, as small immutable values that rewrite a lowered schedule.

Each one names its loops structurally (the statements a loop encloses and its schedule row at the
moment it is applied), so a sequence replays exactly on a fresh parse of the same program, at any
size.  `apply` never checks legality: `looper.poly.legality.check_step` does, with isl.

Levels (the order the search applies them in): fusion (fuse, distribute, shift), affine
(interchange, reverse, skew), parallel, tile, unroll.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import ClassVar

from .schedule import Lowered, Row
from .tree import loop_tree, row_label

Stmts = tuple[str, ...]
LEVELS = ("fusion", "affine", "parallel", "tile", "unroll")


def _stmts(names) -> Stmts:
    return tuple(sorted(names, key=lambda s: int(s[1:])))


def _label(L: Lowered, statements: Stmts, row: int) -> str:
    st = statements[0]
    return row_label(L.rows[st][row], L.program.statement(st).iterators)


class Transform:
    """Base: a transformation rewrites rows and/or annotations of a `Lowered`."""

    kind: ClassVar[str] = ""
    level: ClassVar[str] = ""

    def apply(self, L: Lowered) -> Lowered:
        raise NotImplementedError

    def describe(self, L: Lowered) -> str:
        raise NotImplementedError

    def to_json(self) -> dict:
        out: dict = {"kind": self.kind}
        for f in fields(self):  # type: ignore[arg-type]
            out[f.name] = _jsonable(getattr(self, f.name))
        return out

    @staticmethod
    def from_json(d: dict) -> "Transform":
        cls = KINDS[d["kind"]]
        kwargs = {k: _tupled(v) for k, v in d.items() if k != "kind"}
        return cls(**kwargs)


def _jsonable(v):
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return v


def _tupled(v):
    if isinstance(v, list):
        return tuple(_tupled(x) for x in v)
    return v


def _set_rows(L: Lowered, statements: Stmts, fn) -> Lowered:
    """New Lowered with fn(rows of s) -> rows applied to each statement in `statements`."""
    rows = dict(L.rows)
    for s in statements:
        rows[s] = tuple(fn(list(rows[s])))
    return replace(L, rows=rows)


def _combine(rows: list[Row], coeffs: tuple[int, ...], which: tuple[int, ...]) -> Row:
    """sum_k coeffs[k] * rows[which[k]] (affine rows only)."""
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


# ----------------------------------------------------------------------------------------------
# affine level
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Interchange(Transform):
    statements: Stmts
    row_a: int
    row_b: int
    kind: ClassVar[str] = "interchange"
    level: ClassVar[str] = "affine"

    def apply(self, L: Lowered) -> Lowered:
        def fn(r):
            r[self.row_a], r[self.row_b] = r[self.row_b], r[self.row_a]
            return r
        return _set_rows(L, self.statements, fn)

    def describe(self, L: Lowered) -> str:
        return f"interchange({_label(L, self.statements, self.row_a)},{_label(L, self.statements, self.row_b)})"


@dataclass(frozen=True)
class Reverse(Transform):
    statements: Stmts
    row: int
    kind: ClassVar[str] = "reverse"
    level: ClassVar[str] = "affine"

    def apply(self, L: Lowered) -> Lowered:
        def fn(r):
            r[self.row] = _combine(r, (-1,), (self.row,))
            return r
        return _set_rows(L, self.statements, fn)

    def describe(self, L: Lowered) -> str:
        return f"reverse({_label(L, self.statements, self.row)})"


@dataclass(frozen=True)
class Skew(Transform):
    """A unimodular matrix over 2 or 3 loop rows of one band: new_k = sum_j matrix[k][j] * old_j."""

    statements: Stmts
    rows: tuple[int, ...]
    matrix: tuple[tuple[int, ...], ...]
    kind: ClassVar[str] = "skew"
    level: ClassVar[str] = "affine"

    def __post_init__(self):
        n = len(self.rows)
        if n not in (2, 3) or len(self.matrix) != n or any(len(r) != n for r in self.matrix):
            raise ValueError("skew takes a 2x2 or 3x3 matrix over 2 or 3 rows")
        if abs(_det(self.matrix)) != 1:
            raise ValueError(f"skew matrix {self.matrix} is not unimodular")

    def apply(self, L: Lowered) -> Lowered:
        def fn(r):
            new = [_combine(r, self.matrix[k], self.rows) for k in range(len(self.rows))]
            for k, row in enumerate(self.rows):
                r[row] = new[k]
            return r
        return _set_rows(L, self.statements, fn)

    def describe(self, L: Lowered) -> str:
        names = [_label(L, self.statements, r) for r in self.rows]
        m = self.matrix
        if len(m) == 2 and m[0] == (1, 0) and m[1][1] == 1:
            return f"skew({names[0]},{names[1]},factor={m[1][0]})"
        if len(m) == 2 and m[1] == (0, 1) and m[0][0] == 1:
            return f"wavefront({names[0]},{names[1]},factor={m[0][1]})"
        if len(m) == 3 and m[1:] == ((0, 1, 0), (0, 0, 1)) and m[0][0] == 1:
            return f"wavefront({','.join(names)},factors={m[0][1]},{m[0][2]})"
        if len(m) == 3 and m[0] == (1, 0, 0) and m[1][1:] == (1, 0) and m[2][2] == 1:
            return f"skew({','.join(names)},factors={m[1][0]},{m[2][0]},{m[2][1]})"
        return f"skew({','.join(names)},{[list(x) for x in m]})"


def _det(m: tuple[tuple[int, ...], ...]) -> int:
    if len(m) == 2:
        return m[0][0] * m[1][1] - m[0][1] * m[1][0]
    return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))


# ----------------------------------------------------------------------------------------------
# fusion level
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Shift(Transform):
    """Add a constant to one loop row of some statements (what makes a fusion legal)."""

    statements: Stmts
    row: int
    amount: int
    kind: ClassVar[str] = "shift"
    level: ClassVar[str] = "fusion"

    def apply(self, L: Lowered) -> Lowered:
        def fn(r):
            old = r[self.row]
            r[self.row] = Row(old.coeffs, old.const + self.amount, old.div)
            return r
        return _set_rows(L, self.statements, fn)

    def describe(self, L: Lowered) -> str:
        return f"shift({','.join(self.statements)},{_label(L, self.statements, self.row)},by={self.amount})"


def _siblings_after(L: Lowered, statements: Stmts, row: int) -> list[str]:
    """Statements sharing every static row before `row - 1` with `statements` and placed after them."""
    ref = L.rows[statements[0]]
    base = ref[row - 1].const
    out = []
    for s, r in L.rows.items():
        if s in statements:
            continue
        if all(r[k].is_constant and r[k].const == ref[k].const for k in range(0, row - 1, 2)) \
                and all(not r[k].is_constant for k in range(1, row - 1, 2)) \
                and r[row - 1].const > base:
            out.append(s)
    return out


@dataclass(frozen=True)
class Fuse(Transform):
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

    @property
    def innermost_row(self) -> int:
        """The row of the innermost loop pair this fusion makes one."""
        return self.row + 2 * (len(self.shifts) - 1)

    def apply(self, L: Lowered) -> Lowered:
        rows = dict(L.rows)
        for k, shift in enumerate(self.shifts):
            r = self.row + 2 * k
            target = rows[self.first[0]][r - 1].const
            after = max(rows[s][r + 1].const for s in self.first) + 1
            start = min(rows[s][r + 1].const for s in self.second)
            for s in self.second:
                new = list(rows[s])
                new[r - 1] = Row(new[r - 1].coeffs, target)
                loop = new[r]
                new[r] = Row(loop.coeffs, loop.const + shift, loop.div)
                new[r + 1] = Row(new[r + 1].coeffs, new[r + 1].const - start + after)
                rows[s] = tuple(new)
        return replace(L, rows=rows)

    def describe(self, L: Lowered) -> str:
        a = _label(L, self.first, self.row)
        text = f"fuse({a}:{','.join(self.first)} with {','.join(self.second)},depth={len(self.shifts)}"
        if any(self.shifts):
            text += f",shift={list(self.shifts)}"
        return text + ")"


@dataclass(frozen=True)
class Distribute(Transform):
    """Split loop (row, statements) into one loop per group of its children (fission).

    `cuts` are the child positions where a new loop starts (1 .. n_children-1).
    """

    statements: Stmts
    row: int
    cuts: tuple[int, ...]
    kind: ClassVar[str] = "distribute"
    level: ClassVar[str] = "fusion"

    def apply(self, L: Lowered) -> Lowered:
        tree = loop_tree(L)
        loop = tree.find(self.row, self.statements)
        if loop is None:
            raise ValueError("distribute: no such loop")
        groups: list[list[str]] = [[]]
        for pos, child in enumerate(loop.children):
            if pos in self.cuts:
                groups.append([])
            groups[-1].extend(sorted(child.statements) if not isinstance(child, str) else [child])
        n_new = len(groups) - 1
        rows = dict(L.rows)
        static = self.row - 1
        for s in _siblings_after(L, self.statements, self.row):
            r = list(rows[s])
            r[static] = Row(r[static].coeffs, r[static].const + n_new)
            rows[s] = tuple(r)
        base = L.rows[self.statements[0]][static].const
        for g, members in enumerate(groups):
            for s in members:
                r = list(rows[s])
                r[static] = Row(r[static].coeffs, base + g)
                rows[s] = tuple(r)
        return replace(L, rows=rows)

    def describe(self, L: Lowered) -> str:
        return f"distribute({_label(L, self.statements, self.row)}:{','.join(self.statements)}," \
               f"cuts={list(self.cuts)})"


# ----------------------------------------------------------------------------------------------
# annotations: parallel, tile, unroll
# ----------------------------------------------------------------------------------------------

Loop = tuple[Stmts, int]  # (statements, row)


@dataclass(frozen=True)
class Parallelize(Transform):
    """`#pragma omp parallel for` on each named loop."""

    loops: tuple[Loop, ...]
    kind: ClassVar[str] = "parallelize"
    level: ClassVar[str] = "parallel"

    def apply(self, L: Lowered) -> Lowered:
        extra = {(s, row) for stmts, row in self.loops for s in stmts}
        return replace(L, parallel=L.parallel | frozenset(extra))

    def describe(self, L: Lowered) -> str:
        return "parallelize(" + ",".join(_label(L, st, r) for st, r in self.loops) + ")"


Band = tuple[Stmts, tuple[int, ...], tuple[int, ...]]  # (statements, rows, tile sizes)


@dataclass(frozen=True)
class Tile(Transform):
    """Strip-mine perfectly nested bands of 2 or 3 loops and move the tile loops outside them.

    Several bands (of different nests) may be tiled in one step; each is named by its rows before
    the step, and rows inserted for an earlier band shift the later ones.
    """

    bands: tuple[Band, ...]
    kind: ClassVar[str] = "tile"
    level: ClassVar[str] = "tile"

    def apply(self, L: Lowered) -> Lowered:
        inserted: list[tuple[int, int]] = []  # (position in original numbering, width)
        for stmts, rows, sizes in self.bands:
            offset = sum(w for at, w in inserted if at <= rows[0])
            L = _tile_band(L, stmts, tuple(r + offset for r in rows), sizes)
            inserted.append((rows[0], 2 * len(rows)))
        return L

    def describe(self, L: Lowered) -> str:
        parts = []
        for stmts, rows, sizes in self.bands:
            names = [_label(L, stmts, r) for r in rows]
            parts.append(f"{','.join(names)},{','.join(map(str, sizes))}")
        return "tile(" + " ; ".join(parts) + ")" if len(parts) > 1 else f"tile({parts[0]})"


def _tile_band(L: Lowered, statements: Stmts, band: tuple[int, ...], sizes: tuple[int, ...]) -> Lowered:
    at = band[0]
    width = 2 * len(band)
    mine = set(statements)
    rows = {}
    for s, r in L.rows.items():
        r = list(r)
        if s in mine:
            ins = []
            for row, size in zip(band, sizes):
                base = r[row]
                ins += [Row(base.coeffs, base.const, size), Row((0,) * len(base.coeffs))]
        else:
            ins = [Row((0,) * len(r[0].coeffs))] * width
        rows[s] = tuple(r[:at] + ins + r[at:])

    def moved(s: str, row: int) -> int:
        if s in mine and row in band:
            return at + 2 * band.index(row)  # a parallel band loop -> its tile loop
        return row + width if row >= at else row

    parallel = frozenset((s, moved(s, r)) for s, r in L.parallel)
    unroll = tuple((s, r + width if r >= at else r, f) for s, r, f in L.unroll)
    vector = frozenset((s, r + width if r >= at else r) for s, r in L.vector)
    return replace(L, rows=rows, parallel=parallel, unroll=unroll, vector=vector)


@dataclass(frozen=True)
class Unroll(Transform):
    """Unroll innermost loops by `factor` (`#pragma GCC unroll`; gcc handles the remainder)."""

    loops: tuple[Loop, ...]
    factor: int
    kind: ClassVar[str] = "unroll"
    level: ClassVar[str] = "unroll"

    def apply(self, L: Lowered) -> Lowered:
        extra = tuple((s, row, self.factor) for stmts, row in self.loops for s in stmts)
        return replace(L, unroll=L.unroll + extra)

    def describe(self, L: Lowered) -> str:
        return "unroll(" + ",".join(_label(L, st, r) for st, r in self.loops) + f",{self.factor})"


KINDS: dict[str, type[Transform]] = {c.kind: c for c in (
    Interchange, Reverse, Skew, Shift, Fuse, Distribute, Parallelize, Tile, Unroll)}

__all__ = ["Transform", "Interchange", "Reverse", "Skew", "Shift", "Fuse", "Distribute",
           "Parallelize", "Tile", "Unroll", "KINDS", "LEVELS"]
