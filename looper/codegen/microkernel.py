"""Register-tile micro-kernels: a full tile's target elements kept in vector registers.

For a register tile (`ir.schedule.Microkernel`) the printer reaches the tile's reduction loop
(`for k`) and prints

    if (the tile is full) {
        MR x NR/VL vector accumulators loaded from the target;
        for k: each accumulator updated from its operands (j-moving ones loaded as vectors,
               j-invariant ones broadcast);
        the accumulators stored back;
    } else {
        isl's own loops
    }

"Full" is decided with isl: for every k the tile's outer loops allow, all MR x NR points are
instances of the statement (`full_tiles`); printed as a condition on the outer loop iterators.
A tile that is full on a window of its k range only (a triangular reduction: trmm's k > i
leaves the first k of a diagonal tile with some rows empty) runs isl's loops before and after
the window and the micro-kernel inside it: each element still sums over k in the program's
order, and the diagonal tiles no longer run scalar code for their whole k range.
The arithmetic per element and the order over k are the program's, so the results are the
program's bit for bit (without FMA contraction).  GCC vector types (`vector_size`) make gcc keep
the accumulators in registers, which neither its vectorizer nor its scalar replacement does for
an array of them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import cgen
import islpy as isl

from ..ir.program import Binary, Const, Load, Statement, Unary
from ..ir.rows import iterator_name
from ..ir.schedule import Lowered, Microkernel
from .cexpr import c_access, c_const
from .islexpr import _same, isl_c


@dataclass(frozen=True)
class FullTiles:
    """Where a register tile is full, and its origin there, as C over the printed loop variables."""

    condition: str  # "1" when every tile the loops reach is full
    base_i: str  # the tile's first i (MR * its tile loop's value)
    base_j: str
    k_first: str | None = None  # the full window's first and last k, where the tile is full on
    k_last: str | None = None  # part of its k range only (None: the k loop's own end)


def full_tiles(lowered: Lowered, mk: Microkernel, printed: tuple[int, ...], rename=_same) -> FullTiles | None:
    """The full-tile test and the tile origin for the reduction loop of `mk`, in terms of the
    loop rows `printed` (the enclosing loops whose iterators the C has: isl drops loops whose
    value is fixed, so a tile loop's iterator may not exist).  A tile is full when, at every k its
    outer loops allow, all MR x NR points are statement instances; where some tiles are full on
    one unbroken window of k only, the test is "full somewhere" and the window's ends are
    returned too.  None: never full."""
    points = lowered.instance_map(mk.stmt).range()
    n = points.dim(isl.dim_type.set)
    q = points.project_out(isl.dim_type.set, mk.k + 1, n - mk.k - 1)  # [outer, k]
    have = _keep(points, list(range(mk.k + 1)) + [mk.i, mk.j])  # [outer, k, i, j]
    bad_k = q.apply(_box_map(mk)).subtract(have).project_out(isl.dim_type.set, mk.k + 1, 2)  # not full at k
    outer = q.project_out(isl.dim_type.set, mk.k, 1)
    every = outer.subtract(bad_k.project_out(isl.dim_type.set, mk.k, 1))  # full at every k
    full_k = q.subtract(bad_k)  # [outer, k]: full at k
    some = full_k.project_out(isl.dim_type.set, mk.k, 1)
    window = None
    if not some.is_subset(every):
        window = _window(_printed_only(full_k, mk.k, printed),
                         _printed_only(q.intersect(some.add_dims(isl.dim_type.set, 1)), mk.k, printed))
    full = some if window is not None else every
    origin = isl.Set(f"{{ [{', '.join(f'x{d}' for d in range(mk.k))}, bi, bj] : "
                     f"bi = {mk.mr}*x{mk.tile_i} and bj = {mk.nr}*x{mk.tile_j} }}")
    # [bi, bj] over the printed loops, as parameters
    bases = _printed_only(full.add_dims(isl.dim_type.set, 2).intersect(origin), mk.k, printed)
    if bases.is_empty():
        return None
    build = isl.AstBuild.from_context(isl.Set("{ : }"))
    texts = []
    for d in range(2):
        lo, hi = bases.dim_min(d), bases.dim_max(d)
        if not lo.is_equal(hi):
            return None  # the origin is not a function of the printed loops
        texts.append(isl_c(build.expr_from_pw_aff(lo), rename))
    reach = _printed_only(outer, mk.k, printed)
    full = bases.params().gist(reach.params()).coalesce()
    condition = "1" if full.plain_is_universe() else isl_c(build.expr_from_set(full), rename)
    if window is None:
        return FullTiles(condition, texts[0], texts[1])
    lo, hi = (None if b is None else isl_c(build.expr_from_pw_aff(b.gist(bases.params())), rename)
              for b in window)
    return FullTiles(condition, texts[0], texts[1], lo, hi)


def _printed_only(s: isl.Set, k: int, printed: tuple[int, ...]) -> isl.Set:
    """`s` over [outer (k loops), ...] with the unprinted outer loops projected out and the
    printed ones made parameters named after their iterators."""
    for d in reversed(range(k)):
        if d not in printed:
            s = s.project_out(isl.dim_type.set, d, 1)
    rows = [d for d in range(k) if d in printed]
    for pos, row in enumerate(rows):
        s = s.set_dim_name(isl.dim_type.set, pos, iterator_name(row))
    return s.move_dims(isl.dim_type.param, 0, isl.dim_type.set, 0, len(rows))


def _window(full_k: isl.Set, reach: isl.Set) -> tuple[isl.PwAff | None, isl.PwAff | None] | None:
    """The first and last k of the full window, as functions of the printed loops, when at each
    of their values the tile is full on one unbroken range of k (else None); an end is None
    where it is always the end of the k range the loops `reach` (no loop is needed beyond it)."""
    if full_k.dim(isl.dim_type.set) != 1 or full_k.is_empty():
        return None
    lo, hi = full_k.dim_min(0), full_k.dim_max(0)
    between = full_k.lexmin().apply(isl.Map("{ [a] -> [k] : k >= a }")).intersect(
        full_k.lexmax().apply(isl.Map("{ [a] -> [k] : k <= a }")))
    if not between.is_subset(full_k):
        return None
    return (None if lo.is_equal(reach.dim_min(0)) else lo,
            None if hi.is_equal(reach.dim_max(0)) else hi)


def _keep(s: isl.Set, dims: list[int]) -> isl.Set:
    """`s` projected onto the listed dimensions (in increasing order)."""
    n = s.dim(isl.dim_type.set)
    for d in reversed(range(n)):
        if d not in dims:
            s = s.project_out(isl.dim_type.set, d, 1)
    return s


def _box_map(mk: Microkernel) -> isl.Map:
    """{ [outer, k] -> [outer, k, i, j] : (i, j) in the tile at the outer tile loops' values }"""
    xs = [f"x{d}" for d in range(mk.k + 1)]
    ti, tj = f"x{mk.tile_i}", f"x{mk.tile_j}"
    cons = (f"{mk.mr}*{ti} <= yi <= {mk.mr}*{ti} + {mk.mr - 1} and "
            f"{mk.nr}*{tj} <= yj <= {mk.nr}*{tj} + {mk.nr - 1}")
    return isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(xs)}, yi, yj] : {cons} }}")


class KernelText:
    """The micro-kernel's C for one full tile of one statement."""

    def __init__(self, st: Statement, mk: Microkernel, iterator_text: dict[str, str], roles: tuple[str, str, str],
                 tiles: FullTiles, rename=_same):
        self.st = st
        self.mk = mk
        self.origin = tiles
        self.rename = rename
        self.roles = roles  # statement iterator names of (i, j, k)
        self.iterator_text = iterator_text  # every other iterator's C expression
        self.dtype = st.body.target.dtype
        self.lanes = mk.lanes
        self.nvec = mk.nr // self.lanes

    def env(self, d: int, v: int) -> dict[str, str]:
        i, j, k = self.roles
        env = dict(self.iterator_text)
        env[i] = f"({self.origin.base_i} + {d})"
        env[j] = f"({self.origin.base_j} + {self.lanes * v})"
        env[k] = self.rename(iterator_name(self.mk.k))
        return env

    def vector(self, load: Load, env: dict[str, str]) -> str:
        return f"(*(looper_vu *)&{c_access(load, env)})"

    def expr(self, e, env: dict[str, str], acc: str) -> str:
        """Fully parenthesized vector C of `e` (the program's association kept)."""
        j = self.roles[1]
        if isinstance(e, Const):
            return f"({c_const(Const(e.value, self.dtype))})"
        if isinstance(e, Load):
            if e.array == self.st.body.target.array and e.index == self.st.body.target.index:
                return acc
            moves = any(a.coeff(j) for a in e.index)
            return self.vector(e, env) if moves else f"({c_access(e, env)})"
        if isinstance(e, Unary):
            return f"(-{self.expr(e.operand, env, acc)})"
        assert isinstance(e, Binary)
        return f"({self.expr(e.left, env, acc)} {e.op} {self.expr(e.right, env, acc)})"

    def update(self, d: int, v: int) -> str:
        acc = f"looper_acc{d}_{v}"
        body = self.st.body
        rhs = self.expr(body.value, self.env(d, v), acc)
        if body.op == "=":
            return f"{acc} = {rhs}"
        return f"{acc} = {acc} {body.op[0]} {rhs}"

    def tiles(self):
        return [(d, v) for d in range(self.mk.mr) for v in range(self.nvec)]

    def block(self, init: str, cond: str, inc: str) -> cgen.Block:
        t = self.dtype.ctype
        width = self.lanes * self.dtype.nbytes
        target = self.st.body.target
        it = self.rename(iterator_name(self.mk.k))
        lines: list[cgen.Generable] = [
            cgen.Line(f"typedef {t} looper_v __attribute__((vector_size({width})));"),
            cgen.Line(f"typedef {t} looper_vu __attribute__((vector_size({width}), aligned({self.dtype.nbytes}), "
                      "__may_alias__));"),
        ]
        for d, v in self.tiles():
            lines.append(cgen.Statement(f"looper_v looper_acc{d}_{v} = {self.vector(target, self.env(d, v))}"))
        step = f"{it}++" if inc == "1" else f"{it} += {inc}"
        updates = [cgen.Statement(self.update(d, v)) for d, v in self.tiles()]
        lines.append(cgen.For(f"{it} = {init}", cond, step, cgen.Block(updates)))
        for d, v in self.tiles():
            lines.append(cgen.Statement(f"{self.vector(target, self.env(d, v))} = looper_acc{d}_{v}"))
        return cgen.Block(lines)


def roles_of(lowered: Lowered, st: Statement, mk: Microkernel) -> tuple[str, str, str] | None:
    """The statement iterators the tile's i, j and k rows run over (plain rows), or None."""
    out = []
    for r in (mk.i, mk.j, mk.k):
        row = lowered.rows[st.name][r]
        nz = [k for k, c in enumerate(row.coeffs) if c]
        if len(nz) != 1 or row.coeffs[nz[0]] != 1 or row.const or row.div != 1:
            return None
        out.append(st.iterators[nz[0]])
    return out[0], out[1], out[2]


def uses_iterators(text: str, rows: tuple[int, ...], rename=_same) -> bool:
    """Whether C text mentions the iterator of any of the schedule rows `rows`."""
    names = {rename(iterator_name(r)) for r in rows}
    return any(tok in names for tok in re.findall(r"[A-Za-z_]\w*", text))
