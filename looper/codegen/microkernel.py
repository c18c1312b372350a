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
from ..runtime.target import vector_bytes
from .cexpr import c_access, c_const
from .islexpr import _same, isl_c


@dataclass(frozen=True)
class FullTiles:
    """Where a register tile is full, and its origin there, as C over the printed loop variables."""

    condition: str  # "1" when every tile the loops reach is full
    base_i: str  # the tile's first i (MR * its tile loop's value)
    base_j: str


def full_tiles(lowered: Lowered, mk: Microkernel, printed: tuple[int, ...], rename=_same) -> FullTiles | None:
    """The full-tile test and the tile origin for the reduction loop of `mk`, in terms of the
    loop rows `printed` (the enclosing loops whose iterators the C has: isl drops loops whose
    value is fixed, so a tile loop's iterator may not exist).  A tile is full when, at every k its
    outer loops allow, all MR x NR points are statement instances.  None: never full."""
    points = lowered.instance_map(mk.stmt).range()
    n = points.dim(isl.dim_type.set)
    q = points.project_out(isl.dim_type.set, mk.k + 1, n - mk.k - 1)  # [outer, k]
    have = _keep(points, list(range(mk.k + 1)) + [mk.i, mk.j])  # [outer, k, i, j]
    bad = q.apply(_box_map(mk)).subtract(have).project_out(isl.dim_type.set, mk.k, 3)
    outer = q.project_out(isl.dim_type.set, mk.k, 1)
    origins = isl.Map(f"{{ [{', '.join(f'x{d}' for d in range(mk.k))}] -> [bi, bj] : "
                      f"bi = {mk.mr}*x{mk.tile_i} and bj = {mk.nr}*x{mk.tile_j} }}")
    origins = origins.intersect_domain(outer.subtract(bad))
    for d in reversed(range(mk.k)):  # only the printed loops remain, as parameters
        if d not in printed:
            origins = origins.project_out(isl.dim_type.in_, d, 1)
    rows = [d for d in range(mk.k) if d in printed]
    for k, row in enumerate(rows):
        origins = origins.set_dim_name(isl.dim_type.in_, k, iterator_name(row))
    bases = origins.move_dims(isl.dim_type.param, 0, isl.dim_type.in_, 0, len(rows)).range()
    if bases.is_empty():
        return None
    build = isl.AstBuild.from_context(isl.Set("{ : }"))
    texts = []
    for d in range(2):
        lo, hi = bases.dim_min(d), bases.dim_max(d)
        if not lo.is_equal(hi):
            return None  # the origin is not a function of the printed loops
        texts.append(isl_c(build.expr_from_pw_aff(lo), rename))
    reach = outer
    for d in reversed(range(mk.k)):
        if d not in printed:
            reach = reach.project_out(isl.dim_type.set, d, 1)
    for k, row in enumerate(rows):
        reach = reach.set_dim_name(isl.dim_type.set, k, iterator_name(row))
    reach = reach.move_dims(isl.dim_type.param, 0, isl.dim_type.set, 0, len(rows))
    full = bases.params().gist(reach.params()).coalesce()
    condition = "1" if full.plain_is_universe() else isl_c(build.expr_from_set(full), rename)
    return FullTiles(condition, texts[0], texts[1])


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
        self.lanes = vector_bytes() // self.dtype.nbytes
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
