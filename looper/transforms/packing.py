"""Pack level: copy a read-only operand into a transposed buffer that a statement reads instead.

A register tile's columns (`register_tiling`) are loaded as vectors along j.  An operand whose
*first* subscript moves with j (syrk's `A[j][k]`, syr2k's `A[j][k]` and `B[j][k]`) is a column
walk: one element per row, no vector.  Copied once into `looper_pack_A[k][j]` (BLIS and Polly
pack their operands the same way, tile by tile), it is read row-wise: contiguous vectors, and the
statement becomes register-tilable.  A broadcast operand whose first subscript moves with the
reduction k (trmm's `A[k][i]`) walks a column too, one row (at large sizes one page) per k step;
packed, it streams.  The copy costs one pass over the array; the product reads it hundreds of
times.

The program grows a statement (the copy, in its own nest before every other) and a temporary
array; the reading statements' references change.  Legal when the array is written nowhere in
the kernel: then the copy, placed first, holds the array's values wherever they are read, and
reading the copy adds no dependence a later step could break.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Iterator

import islpy as isl

from ..ir.domain import LoopContext
from ..ir.extract import make_statement
from ..ir.program import Access, Affine, Array, Assign, Expr, Load, Program, Statement, map_loads, walk
from ..ir.rows import statement_name
from ..ir.schedule import Lowered, own_nest_rows
from ..poly.deps import Dependences
from .registry import CandidateContext, Encoding, Transform, register
from .fusion import freeing_distributions
from .register_tiling import eligible_band, tileable, tiles_after

PACK_PREFIX = "looper_pack_"  # user names cannot start with "looper_": no clash


@register
@dataclass(frozen=True)
class Pack(Transform):
    """Copy 2-D array `array` transposed before the kernel; `statements` read the copy (on the
    kernel's threads, unless `parallel` is off: a search kept sequential packs too)."""

    array: str
    statements: tuple[str, ...]
    parallel: bool = True
    kind: ClassVar[str] = "pack"
    feature_slot: ClassVar[int] = 11
    level: ClassVar[str] = "pack"

    @property
    def buffer(self) -> str:
        return PACK_PREFIX + self.array

    def touched(self) -> frozenset[str]:
        return frozenset(self.statements)

    def apply(self, L: Lowered) -> Lowered:
        program = L.program
        arr = program.arrays[self.array]
        packed = Array(self.buffer, arr.dtype, arr.shape[::-1], arr.extent[::-1], "temp")
        arrays = {**program.arrays, self.buffer: packed}
        copy = _copy_statement(program, arr, packed, arrays, len(program.statements),
                               min(st.beta[0] for st in program.statements) - 1)
        statements = tuple(_reading_copy(st, arr, packed) if st.name in self.statements else st
                           for st in program.statements) + (copy,)
        new = replace(program, arrays=arrays, statements=statements)
        rows = dict(L.rows)
        rows[copy.name] = own_nest_rows(L, len(copy.iterators), first=True)
        return replace(L, program=new, rows=rows, parallel=L.parallel | {(copy.name, 1)} if self.parallel else L.parallel)

    def describe(self, L: Lowered) -> str:
        alone = "" if self.parallel else ", one thread"
        return f"pack({self.array}^T for {','.join(self.statements)}{alone})"

    def sequential(self) -> "Pack":
        return replace(self, parallel=False)

    def to_json(self) -> dict:
        out = super().to_json()
        if self.parallel:  # the records written before the field existed, unchanged
            del out["parallel"]
        return out

    def encoding(self) -> Encoding:
        # what the pack does shows in the rewritten program the features read: the copy's own
        # computation, and the reading statements' accesses to the packed buffer
        return Encoding(depth=len(self.statements))

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        """The array is read-only in the kernel and two-dimensional."""
        arr = before.program.arrays.get(self.array)
        if arr is None or arr.rank != 2:
            return f"{self.array} is not a 2-D array"
        if any(a.is_write and a.array == self.array for st in before.program.statements for a in st.accesses):
            return f"{self.array} is written in the kernel: a copy made before it would go stale"
        return None

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator:
        """For each statement a register tile cannot vectorize only because a read-only 2-D
        operand walks a column along j: that operand packed (all such operands at once), alone
        and followed by each register tile of the statement it enables (`_with_tiles`); and for
        a statement that shares its loops with others, the distributions that free it, its
        packs and its register tiles (`_after_distribution`)."""
        if not ctx.grown:
            return
        for stmt, packs in _sites(ctx.lowered):
            yield packs
            yield from _with_tiles(ctx, packs, stmt)
        yield from _after_distribution(ctx)


def _sites(L: Lowered) -> Iterator[tuple[str, tuple[Pack, ...]]]:
    """Each statement alone in its three innermost loops whose register tile only a pack
    enables, with those packs."""
    if L.n_rows < 5:
        return
    written = {a.array for st in L.program.statements for a in st.accesses if a.is_write}
    for loop in L.tree.loops():
        if not loop.is_innermost or len(loop.statements) != 1:
            continue
        (stmt,) = loop.statements
        found = eligible_band(L, stmt, allow_columns=True)
        if found is None:
            continue
        st, (_i, j, k), _rows = found
        arrays = sorted({ld.array for ld in _column_reads(st, j, k)})
        if arrays and not set(arrays) & written and all(L.program.arrays[a].rank == 2 for a in arrays):
            yield stmt, tuple(Pack(a, (stmt,)) for a in arrays)


def _after_distribution(ctx: CandidateContext) -> Iterator[tuple]:
    """The fewest distributions that leave a statement alone in its three loops, then its packs
    and register tiles, as one candidate.  syrk's product shares its i loop with the statement
    that scales C; when the fusion levels spent no distribution there, the beam kept a plain
    cache tile (20% of the FMA peak at LARGE).  None when no statement could ever have a
    register tile (`register_tiling.tileable`)."""
    if not tileable(ctx.lowered.program):
        return
    done: set[str] = set()
    for steps, after, new in freeing_distributions(ctx.lowered, ctx, _packable):
        for stmt, packs in _sites(after):
            if stmt in new and stmt not in done:
                done.add(stmt)
                yield from _with_tiles(ctx, packs, stmt, steps, after)


def _packable(L: Lowered) -> frozenset[str]:
    return frozenset(stmt for stmt, _packs in _sites(L))


def _with_tiles(ctx: CandidateContext, packs: tuple[Pack, ...], stmt: str, steps: tuple = (),
                start: Lowered | None = None) -> Iterator[tuple]:
    """`steps` and `packs` followed by each register tile of `stmt` on the packed program
    (`start`, the result of `steps`; by default the context's): measured alone a pack is a loss
    (the copy, and the same column walk in the product), so a beam that scores one step at a
    time drops it before the register level (LARGE syrk kept a plain tile, 11% of peak)."""
    packed = ctx.lowered if start is None else start
    for p in packs:
        packed = p.apply(packed)
    yield from tiles_after(ctx, steps + packs, packed, frozenset({stmt}))


def _column_reads(st: Statement, j: str, k: str) -> list[Load]:
    """2-D reads that walk a column: their first subscript (and only it) moves with j (one element
    per vector lane), or, for an operand the tile broadcasts (j-invariant), with the reduction k
    (trmm's `A[k][i]`: every k step a new row, a new page at large sizes; packed, the tile's MR
    rows stream along k as gemm's `A[i][k]` do)."""
    def down(ld: Load, v: str) -> bool:
        return bool(ld.index[0].coeff(v)) and not ld.index[1].coeff(v)

    return [e for e in walk(st.body.value)
            if isinstance(e, Load) and len(e.index) == 2
            and (down(e, j) or (down(e, k) and not any(a.coeff(j) for a in e.index)))]


def _copy_statement(program: Program, arr: Array, packed: Array, arrays: dict[str, Array],
                    index: int, position: int) -> Statement:
    """`packed[b][a] = arr[a][b]` over the whole array, at textual `position` of the outermost
    level (before every statement: the program's own order, its dependences, runs it first)."""
    a, b = "looper_p0", "looper_p1"
    loops = [LoopContext(a, Affine.constant(0), Affine.constant(arr.extent[0]), 1),
             LoopContext(b, Affine.constant(0), Affine.constant(arr.extent[1]), 1)]
    body = Assign(Load(packed.name, (Affine.of(b), Affine.of(a)), arr.dtype), "=",
                  Load(arr.name, (Affine.of(a), Affine.of(b)), arr.dtype), 0)
    return make_statement(statement_name(index), body, loops, [], (position, 0, 0), arrays, program.sizes,
                          program.path)


def _reading_copy(st: Statement, arr: Array, packed: Array) -> Statement:
    """The statement with its reads of `arr` redirected to the transposed copy."""
    swap = isl.Map(f"{{ {arr.name}[x, y] -> {packed.name}[y, x] }}")
    accesses = tuple(Access(packed.name, a.index[::-1], False, a.relation.apply_range(swap))
                     if a.array == arr.name and not a.is_write else a for a in st.accesses)
    body = Assign(st.body.target, st.body.op, _redirect(st.body.value, arr.name, packed.name), st.body.line)
    return replace(st, body=body, accesses=accesses)


def _redirect(e: Expr, old: str, new: str) -> Expr:
    """`e` with every read old[x][y] replaced by new[y][x]."""
    return map_loads(e, lambda ld: Load(new, ld.index[::-1], ld.dtype) if ld.array == old else ld)
