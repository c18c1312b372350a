"""Register level: register tiling (unroll-and-jam into vector registers).

A statement's three innermost loops (i, j, k: j moves the last subscript of the element it
updates, k is absent from that element's subscripts) become

    for i_t (MR rows) / for j_t (NR columns) / for k / for i in tile / for j in tile

and code generation (`codegen.microkernel`) turns every full tile into a micro-kernel: the
MR x NR target elements live in MR * NR / VL vector registers across the whole k loop, each k
step loads NR / VL vectors of the j-moving operands and broadcasts the j-invariant ones (gemm:
24 FMAs per 4 vector loads and 6 broadcasts).  This is what reaches a large fraction of the FMA
peak from plain C: gcc keeps neither a tile of C in registers across k by itself nor an array of
accumulators (it spills it to the stack), so the tile is printed with GCC vector types.

Legal when the reordered loops keep every dependence (`poly.legality.order_violation`), the
statement is alone in those loops, and no other reference touches the promoted elements within
a tile (`poly.promotion`).
"""
from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar, Iterator, NamedTuple

from ..caching import memoized, per_object
from ..ir.looptree import IllFormed, LoopNode

from ..ir.schedule import loop_label
from ..ir.program import Binary, Const, Load, Program, Statement, Unary, walk
from ..ir.rows import TILE_ROWS, BandRef, first_statement
from ..ir.schedule import Lowered, Microkernel, Row
from ..poly.deps import Dependences
from ..poly.legality import is_parallel, order_violation, tiles_alone
from ..poly.promotion import promotion_conflict
from .expansion import expansions
from .fusion import MAX_DISTRIBUTIONS, Fission, freeing_distributions
from .parallel import Parallelize
from .tiling import Tile, cache_tiles
from .registry import CandidateContext, Encoding, Transform, register

if TYPE_CHECKING:
    from ..target import Target

ADDED_ROWS = 2 * TILE_ROWS  # two tile loops (and their static rows) per register tile
MAX_ACCUMULATORS = 24  # of the 32 vector registers: the rest hold loaded and broadcast operands
# (rows, vectors of columns) per tile, most accumulators first
SHAPES = ((6, 4), (8, 3), (12, 2), (4, 4), (8, 2))


class Block(NamedTuple):
    """One statement's register tile: its innermost loop rows (i, j, k as the program orders
    them before the step), the tile's size (MR rows of i, NR columns of j) and the elements in
    one vector of the target it was made for (NR is a multiple of it: a record replayed on
    another machine prints the same vectors, which gcc splits or joins for that machine)."""

    stmt: str
    i: int
    j: int
    k: int
    mr: int
    nr: int
    lanes: int

    def __repr__(self) -> str:
        return repr(tuple(self))


def _blocks(blocks) -> tuple[Block, ...]:
    return tuple(Block(*b) for b in blocks)


@register
@dataclass(frozen=True)
class RegisterTile(Transform):
    """Register tiles of one or more statements (each its own three innermost loops)."""

    blocks: tuple[Block, ...]
    kind: ClassVar[str] = "register"
    feature_slot: ClassVar[int] = 17
    level: ClassVar[str] = "register"
    refines: ClassVar[bool] = False  # it moves loops: a loop structure of its own

    def __post_init__(self):
        object.__setattr__(self, "blocks", _blocks(self.blocks))

    def touched(self) -> frozenset[str]:
        return frozenset(b.stmt for b in self.blocks)

    def apply(self, L: Lowered) -> Lowered:
        """The blocks' rows are those of the schedule before the step: each tile pads every
        other statement's rows where it inserts its own, so the later blocks move down with it."""
        blocks = list(self.blocks)
        while blocks:
            b = blocks.pop(0)
            L = register_tile(L, b)
            at = min(b.i, b.j, b.k)
            blocks = [x._replace(**{f: getattr(x, f) + ADDED_ROWS for f in ("i", "j", "k") if getattr(x, f) >= at})
                      for x in blocks]
        return L

    def describe(self, L: Lowered) -> str:
        parts = []
        for b in self.blocks:
            names = [loop_label(L, (b.stmt,), r) for r in (b.i, b.j, b.k)]
            parts.append(f"{b.stmt}:{names[0]},{names[1]},{b.mr}x{b.nr},k={names[2]}")
        return "register(" + " ; ".join(parts) + ")"

    def encoding(self) -> Encoding:
        return self.encoding_of(self.blocks[0].stmt)

    def encoding_of(self, statement: str) -> Encoding:
        b = next((b for b in self.blocks if b.stmt == statement), self.blocks[0])
        return Encoding(rows=(b.i, b.j, b.k), sizes=(b.mr, b.nr), lanes=b.lanes)

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        """Dependences kept, the statement alone in its tile, its target promotable.  A register
        tile is a rectangular tile (mr, nr, 1) of one statement's band: kept when the band tiles
        alone (`tiles_alone`, whatever the shape); else checked on the schedule, where every other
        statement gets the same padding rows at the same place (`register_tile`), so only the
        dependences of the tiled statements can break."""
        if not all(tiles_alone(deps, before, (b.i, b.j, b.k), b.stmt) for b in self.blocks):
            why = order_violation(deps, before, after, explain, moved=self.touched())
            if why is not None:
                return why
        for m in after.microkernels:
            if m.stmt not in self.touched():
                continue
            loop = after.tree.find(m.k, {m.stmt})
            if loop is None:
                return f"{m.stmt} does not have the reduction loop to itself"
            st = after.program.statement(m.stmt)
            why = promotion_conflict(after, m.stmt, st.accesses[0], m.k)
            if why is not None:
                return why
        return None

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["RegisterTile"]:
        """Per shape, every eligible statement at once (when several are), then each alone.  A
        statement that has a register tile gets no second one; the others still can (the tile
        level offers one statement's tile ahead, `search.candidates.AHEAD`: 3mm's other two
        products must not lose theirs to it)."""
        if not ctx.grown:
            return
        yield from cls._tiles(ctx.lowered, ctx)
        yield from _after_distribution(ctx)
        yield from _after_enablers(ctx)
        yield from _inside_cache_tiles(ctx)

    @classmethod
    def _tiles(cls, L: Lowered, ctx: CandidateContext, only: frozenset[str] | None = None) -> Iterator["RegisterTile"]:
        done = {m.stmt for m in L.microkernels}
        names = [s for s in _innermost_statements(CandidateContext(L, ctx.deps, ctx.target, grown=True))
                 if s not in done and (only is None or s in only)]
        eligible = [b for b in (_eligible(L, s, ctx.target) for s in names) if b]
        for mr, nvec in SHAPES:
            per_stmt = [replace_size(b, mr, nvec * lanes) for b, lanes in eligible]
            if len(per_stmt) > 1:
                yield cls(tuple(per_stmt))
            for b in per_stmt:
                yield cls((b,))


def tiles_after(ctx: CandidateContext, steps: tuple, after: Lowered, freed: frozenset[str]) -> Iterator[tuple]:
    """`steps` (an enabler: packs, distributions) followed by each register tile of the statements
    it `freed` in `after`, its result, alone and inside cache tiles.  An enabler scored alone is
    a loss or nothing, so a beam that scores one level at a time drops it before the register
    tile that pays for it."""
    for tile in RegisterTile._tiles(after, ctx, freed):
        yield steps + (tile,)
    for seq in _inside_cache_tiles(_context(after, ctx)):
        if seq[-1].touched() <= freed:
            yield steps + seq


def _after_distribution(ctx: CandidateContext) -> Iterator[tuple]:
    """Distributions (up to fusion.MAX_DISTRIBUTIONS) that leave more statements alone in their three
    innermost loops, followed by their register tiles.  3mm's products share their outer loops
    with the statements that zero them; the fusion levels, which score a distribution by itself,
    rarely spend one there, and then only one product of three got its tile (28% of the FMA peak
    at LARGE).  None when no statement without a tile could ever have one (`tileable`)."""
    L = ctx.lowered
    if not tileable(L.program) - {m.stmt for m in L.microkernels}:
        return

    def free(M: Lowered) -> frozenset[str]:
        return _freed(M, ctx, frozenset())

    before = free(L)
    for steps, after, new in freeing_distributions(L, ctx, free, unreachable=out_of_reach(L)):
        yield from tiles_after(ctx, steps, after, new)
    # ... and every product at once: the distributions that free each, one after another (a
    # distribution never joins statements, so what one freed stays free)
    steps, cur, freed = (), L, before
    for _ in range(len(L.program.statements)):
        found = next(freeing_distributions(cur, ctx, free, unreachable=out_of_reach(cur)), None)
        if found is None:
            break
        steps, cur, freed = steps + found[0], found[1], freed | found[2]
    if len(freed - before) > 1:
        for tile in RegisterTile._tiles(cur, ctx):
            if len(tile.blocks) > 1:
                yield steps + (tile,)


def _after_enablers(ctx: CandidateContext) -> Iterator[tuple]:
    """Register tiles behind the steps that free them from the statements around them: a fission
    (one nest per component of the dependence graph), an expansion (`transforms.expansion`)
    alone, or followed by a fission or by the distributions that free a statement.  Each nest
    with a tiled statement gets its outermost parallel loop.  doitgen's product shares `sum[p]`
    with the copy that reads it: only with a copy of `sum` per (r, q) (or per q) can it leave
    their loops, and only then are r (or q) parallel; symm's products also need their statements
    reordered.  The levels that ran before could not know."""
    L = ctx.lowered
    done = {m.stmt for m in L.microkernels}
    if tileable(L.program) - done:  # a fission rewrites no statement: it frees one or none
        for f in Fission.candidates(ctx):
            yield from _tiles_behind((f,), L, ctx)
    for exp in expansions(L.program):
        expanded = exp.apply(L)
        if not tileable(expanded.program) - done:  # an expansion may make one tileable (doitgen)
            continue
        inner = _context(expanded, ctx)
        yield from _tiles_behind((exp,), L, ctx)
        for f in Fission.candidates(inner):
            yield from _tiles_behind((exp, f), L, ctx)
        for seq in _after_distribution(inner):
            yield _parallel_before_tile((exp,) + seq[:-1], seq[-1], L, ctx.deps)


def _inside_cache_tiles(ctx: CandidateContext) -> Iterator[tuple]:
    """Register tiles inside the cache-sized tiles of their three loops (`tiling.cache_tiles`:
    BLIS's loops around the micro-kernel, a panel of the reduction kept in L1 and L2).  Alone, a
    register tile streams the whole reduction of every tile: trmm's from memory once it passes
    L2 (23% of peak at LARGE, the traffic at the triad bandwidth).  The tile level scores a cache
    tile by itself and keeps the register tiles offered ahead instead, so the pair is offered
    here (with the nest's outermost parallel loop, when the schedule has none)."""
    L = ctx.lowered
    for tile in Tile.candidates(ctx):
        band = tile.bands[0]
        if len(tile.bands) != 1 or len(band.rows) != 3 or len(set(band.sizes)) == 1:
            continue  # cache-sized tiles of one three-loop band only
        after = tile.apply(L)
        try:
            after.tree
        except IllFormed:
            continue
        for rt in RegisterTile._tiles(after, _context(after, ctx)):
            yield _parallel_before_tile((tile,), rt, L, ctx.deps)
    yield from _all_inside_cache_tiles(ctx)


def _all_inside_cache_tiles(ctx: CandidateContext) -> Iterator[tuple]:
    """Every eligible statement's register tile inside cache tiles of its own three loops, all
    in one step (symm's two products, each a triangle: one of them register-tiled streams B
    from L3 once per row block of the other, 38% of the FMA peak at LARGE)."""
    L = ctx.lowered
    done = {m.stmt for m in L.microkernels}
    bands = []
    for s in sorted(_freed(L, ctx, frozenset(done))):
        loop_rows = [r for r, row in enumerate(L.rows[s]) if not row.is_constant][-3:]
        top = L.tree.find(loop_rows[0], {s}) if len(loop_rows) == 3 else None
        if top is not None and len(L.tree.chain(top)) == 3:
            bands.append(L.tree.chain(top))
    if len(bands) < 2:
        return
    shapes = [cache_tiles(L, b, ctx.target) for b in bands]
    for q in range(min(len(x) for x in shapes)):
        rows = [tuple(l.row for l in b) for b in bands]
        order = sorted(range(len(bands)), key=lambda k: rows[k][0])
        tile = Tile(tuple(BandRef(bands[k][0].ref.statements, rows[k], shapes[k][q]) for k in order))
        after = tile.apply(L)
        try:
            after.tree
        except IllFormed:
            continue
        for rt in RegisterTile._tiles(after, _context(after, ctx)):
            if len(rt.blocks) == len(bands):
                yield _parallel_before_tile((tile,), rt, L, ctx.deps)


def _tiles_behind(steps: tuple, L: Lowered, ctx: CandidateContext) -> Iterator[tuple]:
    after = L
    for t in steps:
        after = t.apply(after)
    for tile in RegisterTile._tiles(after, _context(after, ctx)):
        yield _parallel_before_tile(steps, tile, L, ctx.deps)
    for seq in _all_inside_cache_tiles(_context(after, ctx)):
        yield steps + seq


def _context(L: Lowered, ctx: CandidateContext) -> CandidateContext:
    """The grown space's context for `L` with its own program's dependences."""
    return CandidateContext(L, ctx.deps.of(L.program), ctx.target, grown=True)


def _parallel_before_tile(steps: tuple, tile: "RegisterTile", L: Lowered, deps: Dependences) -> tuple:
    """`steps + (tile,)`, with each nest that holds a tiled statement and no parallel loop (after
    `steps` on `L`) given its outermost loop around the tiled statements that carries no
    dependence: before the tile, which moves a parallel i or j to its tile loop."""
    loops = _parallel_loops(L, steps, tile.touched(), deps)
    return steps + ((Parallelize(loops),) if loops else ()) + (tile,)


@memoized(maxsize=512)
def _parallel_loops(L: Lowered, steps: tuple, stmts: frozenset[str], deps: Dependences) -> tuple:
    """`_parallel_before_tile`'s loops, once per enabler and tiled statements: every register
    shape asks again (symm's expansions: 2,204 expansions applied again, 1.6 s of 13)."""
    pre = L
    for t in steps:
        pre = t.apply(pre)
    deps = deps.of(pre.program)
    loops = []
    for nest in pre.tree.nests:
        if not stmts & nest.statements:
            continue
        if any((s, l.row) in pre.parallel for l in nest.walk() for s in l.statements):
            continue
        loop: LoopNode | None = nest
        while loop is not None:
            if is_parallel(deps, pre, loop.row, set(loop.statements)):
                loops.append(loop.ref)
                break
            loop = next((c for c in loop.loops if stmts & c.statements), None)
    return tuple(loops)


@per_object
def tileable(program: Program) -> frozenset[str]:
    """The statements some loop order could register-tile (with packs: `allow_columns`): at least
    three loops, three of whose iterators take the roles i, j, k (`_roles`, which reads only the
    statement).  The distributions that could free a statement for a tile are enumerated only
    when one exists: deriche's two-deep filters have none, and enumerating them (107,618
    distributions, behind each of its expansions too) was 145 of its model search's 210 s."""
    return frozenset(st.name for st in program.statements if st.depth >= 3 and any(
        _roles(st, list(names), allow_columns=True) for names in itertools.combinations(st.iterators, 3)))


def out_of_reach(L: Lowered, depth: int = MAX_DISTRIBUTIONS) -> frozenset[str]:
    """Statements that no `depth` distributions of `L` can leave register-tilable: their three
    innermost loops are not a plain band whose body vectorizes along j (a distribution changes
    no loop row), or more than `depth` of those loops hold other statements too (a distribution
    splits one loop).  adi's statements share their time loop and two more: its model search
    walked 17,760 distributions for them, 7.6 s of 16, and none could free one."""
    bands = {st.name: _band_rows(L, st.name) for st in L.program.statements}
    shared = Counter(s for loop in L.tree.loops() if len(loop.statements) > 1
                     for s in loop.statements if loop.row in bands[s])
    return frozenset(s for s in bands if shared[s] > depth or _plain_band(L, s) is None)


def _band_rows(L: Lowered, stmt: str) -> list[int]:
    """The rows of a statement's three innermost loops (fewer when it has fewer)."""
    return [r for r, row in enumerate(L.rows[stmt]) if not row.is_constant][-3:]


def _freed(L: Lowered, ctx: CandidateContext, already: frozenset[str]) -> frozenset[str]:
    """Statements register-tilable in `L` that are not in `already`."""
    inner = CandidateContext(L, ctx.deps, ctx.target, grown=True)
    return frozenset(s for s in _innermost_statements(inner) if s not in already and _eligible(L, s, ctx.target))


def replace_size(b: Block, mr: int, nr: int) -> Block:
    """The same tile with MR x NR instances."""
    return b._replace(mr=mr, nr=nr)


def _innermost_statements(ctx: CandidateContext) -> Iterator[str]:
    """Statements alone in their innermost three loops."""
    for loop in ctx.tree.loops():
        if loop.is_innermost and len(loop.statements) == 1:
            yield first_statement(loop.statements)


def _plain(row: Row) -> int | None:
    """The iterator a loop row runs over unchanged (coefficient 1, no offset, untiled), or None."""
    nz = [k for k, c in enumerate(row.coeffs) if c]
    if len(nz) == 1 and row.coeffs[nz[0]] == 1 and row.const == 0 and row.div == 1:
        return nz[0]
    return None


def _eligible(L: Lowered, stmt: str, target: "Target") -> tuple[Block, int] | None:
    """The statement's register tile (with a placeholder size) and its vector lanes, when its
    three innermost loops are a plain, perfectly nested band and its body vectorizes along j."""
    found = eligible_band(L, stmt)
    if found is None:
        return None
    st, roles, band = found
    lanes = target.lanes(st.body.target.dtype.nbytes)
    i, j, k = band
    if (stmt, k) in L.parallel:
        return None
    return Block(stmt, i, j, k, 1, lanes, lanes), lanes


def eligible_band(L: Lowered, stmt: str, allow_columns: bool = False
                  ) -> tuple[Statement, tuple[str, str, str], tuple[int, int, int]] | None:
    """The statement, its (i, j, k) iterators and their rows, when its three innermost loops are
    a plain, perfectly nested band over it alone and its body vectorizes along j (with
    `allow_columns`: but for 2-D operands that walk a column along j, which packing fixes)."""
    band = _band_rows(L, stmt)
    if len(band) < 3:
        return None
    top = L.tree.find(band[0], {stmt})
    if top is None or [l.row for l in L.tree.chain(top)][-3:] != band:
        return None
    return _plain_band(L, stmt, allow_columns)


def _plain_band(L: Lowered, stmt: str, allow_columns: bool = False
                ) -> tuple[Statement, tuple[str, str, str], tuple[int, int, int]] | None:
    """`eligible_band` but for the loop tree: what its rows say, which no distribution changes."""
    st = L.program.statement(stmt)
    band = _band_rows(L, stmt)
    iters = [_plain(L.rows[stmt][r]) for r in band]
    if len(band) < 3 or None in iters or len(set(iters)) < 3:
        return None
    roles = _roles(st, [st.iterators[k] for k in iters], allow_columns)
    if roles is None:
        return None
    by_iter = {st.iterators[k]: r for k, r in zip(iters, band)}
    return st, roles, tuple(by_iter[name] for name in roles)


def _roles(st: Statement, names: list[str], allow_columns: bool = False) -> tuple[str, str, str] | None:
    """(i, j, k) among the three iterators: j moves the target's last subscript with stride 1,
    k is absent from the target, i is the other; None when the body does not vectorize along j
    (an operand neither j-invariant nor contiguous in j, an operation or type that is not plain
    floating-point arithmetic of the target's type)."""
    target = st.body.target
    if not target.dtype.is_float or not target.index:
        return None
    last = target.index[-1]
    js = [n for n in names if last.coeff(n) == 1 and all(a.coeff(n) == 0 for a in target.index[:-1])]
    ks = [n for n in names if all(a.coeff(n) == 0 for a in target.index)]
    if len(js) != 1 or len(ks) != 1 or js[0] == ks[0]:
        return None
    j, k = js[0], ks[0]
    i = next(n for n in names if n not in (j, k))
    if all(a.coeff(i) == 0 for a in target.index):
        return None
    for e in walk(st.body.value):
        if isinstance(e, Load):
            column = allow_columns and len(e.index) == 2 and e.index[0].coeff(j) == 1 and not e.index[1].coeff(j)
            if e.dtype is not target.dtype or not (vector_access(e, j) or column):
                return None
        elif isinstance(e, (Binary, Unary)):
            if e.dtype is not target.dtype or e.op not in ("+", "-", "*", "/"):
                return None
        elif not isinstance(e, Const):
            return None
    return i, j, k


def vector_access(load: Load, j: str) -> bool:
    """Whether a reference is j-invariant (one value per vector: broadcast) or moves its last
    subscript with j at stride 1 (one contiguous vector)."""
    if all(a.coeff(j) == 0 for a in load.index):
        return True
    return bool(load.index) and load.index[-1].coeff(j) == 1 and all(a.coeff(j) == 0 for a in load.index[:-1])


def register_tile(L: Lowered, b: Block) -> Lowered:
    """One statement's three innermost loops (rows b.i, b.j, b.k, in any order) replaced by
    [tile of i, tile of j, k, i, j]; every other statement gets padding rows at the same place,
    and every annotation at or after it moves down with it."""
    stmt = b.stmt
    rows = list(L.rows[stmt])
    at = min(b.i, b.j, b.k)
    last = max(b.i, b.j, b.k)
    zero = Row((0,) * len(rows[0].coeffs))
    ri, rj, rk = rows[b.i], rows[b.j], rows[b.k]
    new = [Row(ri.coeffs, 0, b.mr), zero, Row(rj.coeffs, 0, b.nr), zero, rk, zero, ri, zero, rj]
    # the three loops need not be adjacent rows (a row constant for this statement alone, left by
    # a sunk tile, may sit between them): the rows they span become the tile's, padded so that
    # every statement grows by ADDED_ROWS (the loop at `at` holds this statement alone, so rows
    # from `at` on order only its own instances)
    new += [zero] * (last + 1 - at - 5)
    out = {}
    for s, r in L.rows.items():
        if s == stmt:
            out[s] = tuple(rows[:at] + new + rows[last + 1:])
        else:
            pad = [Row((0,) * len(r[0].coeffs))] * ADDED_ROWS
            out[s] = tuple(list(r[:at]) + pad + list(r[at:]))

    def moved(s: str, r: int) -> int:
        if s == stmt and r in (b.i, b.j):
            return at if r == b.i else at + TILE_ROWS  # a parallel i or j moves to its tile loop
        return r + ADDED_ROWS if r >= at else r

    parallel = frozenset((s, moved(s, r)) for s, r in L.parallel)
    unroll = tuple((s, r + ADDED_ROWS if r >= at else r, f) for s, r, f in L.unroll)
    vector = frozenset((s, r + ADDED_ROWS if r >= at else r) for s, r in L.vector)
    kernels = tuple(m.shifted(at, ADDED_ROWS) for m in L.microkernels)
    kernels += (Microkernel(stmt, at, at + 2, at + 4, at + 6, at + 8, b.mr, b.nr, b.lanes),)
    return replace(L, rows=out, parallel=parallel, unroll=unroll, vector=vector, microkernels=kernels)
