"""Random synthetic programs in looper's language, built from the patterns real kernels use.

Patterns: element-wise maps (with transposed reads), stencils (1-D to 3-D, Jacobi pairs or in-place
Gauss-Seidel, optionally inside a time loop), reductions (matrix-vector, row sums, with their
initialization in the same nest), matrix products (any loop order, optional triangular bounds and
scaling statement), deep nests (depth 4-5: batched products, doitgen-like), and copies.  A program
is a sequence of 1-4 such nests; later nests consume arrays earlier ones produce.  Domains are
rectangular, triangular or trapezoidal; data are f64, f32 or i32.  On request (`scalars`), nests
that keep values in kernel-local scalars too: dot products accumulated in a scalar (symm), recursive
filters with scalar state (deriche), temporaries; loops over them are parallel only once the
scalars are privatized.  Only when named (`patterns=("coupled",)`): fields coupled in one time loop
(fdtd-2d, heat-3d, adi), several nests per time step.

Sizes are then scaled so that the kernel executes a target number of statement instances (about
5-50 ms of work on one core), counted exactly with isl.  The output is source text: what a user
would write, parsed by the same front end as every other program.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from ..lang.parse import parse_source

SPACE = ("N", "M", "K")


@dataclass
class _Array:
    name: str
    dims: tuple[str, ...]  # size names
    written: bool = False
    read: bool = False


@dataclass
class _Builder:
    rng: random.Random
    dtype: str
    arrays: dict[str, _Array] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    sizes_used: set[str] = field(default_factory=set)
    scalars: list[str] = field(default_factory=list)
    locals: dict[str, str] = field(default_factory=dict)
    counter: int = 0
    # products scaled by a coefficient (`scaled_products`): drawn from their own generator, so
    # without them every seed gives the program it always did
    coef_rng: random.Random | None = None

    # -- naming ----------------------------------------------------------------------------------
    def fresh(self, dims: tuple[str, ...], prefix: str = "A") -> _Array:
        self.counter += 1
        a = _Array(f"{prefix}{self.counter}", dims)
        self.arrays[a.name] = a
        self.sizes_used.update(dims)
        return a

    def pick_input(self, dims: tuple[str, ...], prefer_written: float = 0.6,
                   exclude: tuple[_Array, ...] = ()) -> _Array:
        """An existing array of this shape (a producer's output, preferably) or a fresh input;
        never one of `exclude` (an in-place product would grow without bound)."""
        same = [a for a in self.arrays.values() if a.dims == dims and a not in exclude]
        written = [a for a in same if a.written]
        if written and self.rng.random() < prefer_written:
            a = self.rng.choice(written)
        elif same and self.rng.random() < 0.3:
            a = self.rng.choice(same)
        else:
            a = self.fresh(dims)
        a.read = True
        return a

    def output(self, dims: tuple[str, ...]) -> _Array:
        reuse = [a for a in self.arrays.values() if a.dims == dims and not a.read and a.written]
        a = self.rng.choice(reuse) if reuse and self.rng.random() < 0.2 else self.fresh(dims)
        a.written = True
        return a

    def scalar(self, rng: random.Random | None = None) -> str:
        """A scalar parameter (alpha, then maybe beta), drawn with `rng` (default: the main one)."""
        rng = rng or self.rng
        if not self.scalars or (len(self.scalars) < 2 and rng.random() < 0.3):
            self.scalars.append(("alpha", "beta")[len(self.scalars)])
        return rng.choice(self.scalars)

    # -- text -------------------------------------------------------------------------------------
    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * (depth + 1) + text)

    def scaled(self, prod: str) -> str:
        """`prod`, scaled by a scalar or a constant as BLAS kernels are (gemm's alpha * A * B), on
        about half the products when `coef_rng` is set."""
        r = self.coef_rng
        if r is None or r.random() < 0.45:
            return prod
        if r.random() < 0.3:
            coef = r.choice(["2", "3"] if self.dtype == "i32" else ["0.5", "1.5", "2.0"])
        else:
            coef = self.scalar(r)
        return f"{coef} * {prod}"

    def const(self) -> str:
        if self.dtype == "i32":
            return str(self.rng.choice([2, 3, 5, 7]))
        return self.rng.choice(["0.5", "0.25", "1.5", "2.0", "0.125", "0.75"])

    def combine(self, terms: list[str]) -> str:
        """A bounded arithmetic combination of terms."""
        rng = self.rng
        if self.dtype == "i32":
            return f"({' + '.join(terms)}) % 1000" if len(terms) > 1 else f"{terms[0]} % 1000"
        out = terms[0]
        for t in terms[1:]:
            op = rng.choice(["+", "-", "*", "+"])
            out = f"{out} {op} {t}" if op != "*" else f"{out} * {t}"
        if rng.random() < 0.15:
            out = f"sqrt(abs({out}) + 1.0)"
        elif rng.random() < 0.1:
            out = f"({out}) / (1.0 + abs({terms[-1]}))"
        return f"{self.const()} * ({out})" if rng.random() < 0.4 else out


def _idx(vars_: tuple[str, ...]) -> str:
    return ", ".join(vars_)


# -- patterns ------------------------------------------------------------------------------------------

def _elementwise(b: _Builder) -> None:
    rng = b.rng
    depth = rng.choice([1, 2, 2, 3])
    dims = tuple(rng.choice(SPACE[:2]) if d == 0 else rng.choice(SPACE) for d in range(depth))
    vars_ = ("i", "j", "k")[:depth]
    tri = depth >= 2 and dims[0] == dims[1] and rng.random() < 0.35
    for d, (v, n) in enumerate(zip(vars_, dims)):
        if d == 1 and tri:
            b.emit(d, f"for {v} in range({'i + 1' if rng.random() < 0.5 else f'i, {n}'}):")
        else:
            b.emit(d, f"for {v} in range({n}):")
    out = b.output(dims)
    terms = [f"{b.pick_input(dims).name}[{_idx(vars_)}]"]
    if depth >= 2 and dims[0] == dims[1] and rng.random() < 0.4:
        t = b.pick_input(dims)
        terms.append(f"{t.name}[{_idx((vars_[1], vars_[0]) + vars_[2:])}]")  # transposed read
    if rng.random() < 0.5:
        terms.append(f"{b.pick_input(dims[-1:]).name}[{vars_[-1]}]")
    if rng.random() < 0.3:
        terms.append(b.scalar())
    op = "=" if rng.random() < 0.7 else "+="
    b.emit(depth, f"{out.name}[{_idx(vars_)}] {op} {b.combine(terms)}")
    if op == "+=":
        out.read = True


def _stencil(b: _Builder) -> None:
    rng = b.rng
    nd = rng.choice([1, 2, 2, 3])
    n = rng.choice(SPACE[:2])
    dims = (n,) * nd
    vars_ = ("i", "j", "k")[:nd]
    timed = rng.random() < 0.6
    depth = 0
    if timed:
        b.sizes_used.add("T")
        b.emit(0, "for t in range(T):")
        depth = 1
    a = b.pick_input(dims, prefer_written=0.5)
    a.written = True
    style = rng.choice(["jacobi", "jacobi", "seidel"])

    def neighbours(arr: str) -> list[str]:
        pts = [vars_]
        for d in range(nd):
            for off in (-1, 1):
                p = list(vars_)
                p[d] = f"{vars_[d]} {'-' if off < 0 else '+'} 1"
                pts.append(tuple(p))
        return [f"{arr}[{_idx(p)}]" for p in pts]

    def nest(target: str, source: str) -> None:
        for d, v in enumerate(vars_):
            b.emit(depth + d, f"for {v} in range(1, {n} - 1):")
        pts = neighbours(source)
        if b.dtype == "i32":
            rhs = f"({' + '.join(pts)}) // {len(pts)}"
        else:
            w = rng.choice([1.0 / len(pts), 0.9 / len(pts)])
            rhs = f"{w!r} * ({' + '.join(pts)})"
        b.emit(depth + nd, f"{target}[{_idx(vars_)}] = {rhs}")

    if style == "seidel":
        nest(a.name, a.name)
    else:
        tmp = b.fresh(dims, prefix="B")
        tmp.written = tmp.read = True
        nest(tmp.name, a.name)
        nest(a.name, tmp.name)
    a.read = True


def _reduction(b: _Builder) -> None:
    rng = b.rng
    n, m = rng.choice(SPACE[:2]), rng.choice(SPACE)
    y = b.output((n,))
    mat_t = rng.random() < 0.4
    tri = n == m and rng.random() < 0.3
    A = b.pick_input((m, n) if mat_t else (n, m))
    x = b.pick_input((m,), exclude=(y,))
    b.emit(0, f"for i in range({n}):")
    init = rng.random() < 0.7
    if init:
        b.emit(1, f"{y.name}[i] = {'0' if b.dtype == 'i32' else '0.0'}")
    else:
        y.read = True
    b.emit(1, f"for j in range({'i' if tri else m}):")
    a_ref = f"{A.name}[j, i]" if mat_t else f"{A.name}[i, j]"
    prod = b.scaled(f"{a_ref} * {x.name}[j]")
    if b.dtype == "i32":
        prod = f"({prod}) % 97"
    b.emit(2, f"{y.name}[i] += {prod}")
    if rng.random() < 0.3:
        s = b.scalar()
        b.emit(1, f"{y.name}[i] = {s} * {y.name}[i]")


def _matmul(b: _Builder) -> None:
    rng = b.rng
    ni, nj, nk = (rng.choice(SPACE) for _ in range(3))
    C = b.output((ni, nj))
    A = b.pick_input((ni, nk), exclude=(C,))
    B = b.pick_input((nk, nj), exclude=(C,))
    order = rng.choice([("i", "j", "k"), ("i", "k", "j"), ("k", "i", "j"), ("j", "i", "k"), ("i", "j", "k")])
    extent = {"i": ni, "j": nj, "k": nk}
    tri_k = ni == nk and rng.random() < 0.25 and order.index("i") < order.index("k")
    scale = rng.random() < 0.5 and order[0] in ("i", "j")
    b.emit(0, f"for {order[0]} in range({extent[order[0]]}):")
    if scale:
        other = "j" if order[0] == "i" else "i"
        b.emit(1, f"for {other} in range({extent[other]}):")
        b.emit(2, f"{C.name}[i, j] *= {b.scalar() if b.dtype != 'i32' else '2'}")
        C.read = True
    for d, v in enumerate(order[1:], start=1):
        bound = extent[v]
        if v == "k" and tri_k:
            bound = "i"
        b.emit(d, f"for {v} in range({bound}):")
    _accumulate(b, C, f"{A.name}[i, k] * {B.name}[k, j]")


def _accumulate(b: _Builder, C: _Array, product: str) -> None:
    """`C[i, j] += product` at depth 3, scaled as `_Builder.scaled` draws, kept bounded for integers."""
    prod = b.scaled(product)
    if b.dtype == "i32":
        prod = f"({prod}) % 97"
    b.emit(3, f"{C.name}[i, j] += {prod}")
    C.read = True


def _columns(b: _Builder) -> None:
    """A product whose read-only operand walks a column, the only place the pack level proposes
    a copy: syrk's `A[j, k]` (its first subscript moves with the tile's vector loop j), trmm's
    `A[k, i]` (broadcast, a new row every reduction step), or both.  The operands are fresh
    inputs, never written in the kernel, so that a pack is legal."""
    rng = b.rng
    ni, nj, nk = (rng.choice(SPACE) for _ in range(3))
    C = b.output((ni, nj))
    kind = rng.choice(["rows", "cols", "both"])  # which operand walks a column
    if kind in ("rows", "both"):  # syrk-like: Y[j, k]
        Y = b.fresh((nj, nk))
        right = f"{Y.name}[j, k]"
    else:
        Y = b.pick_input((nk, nj), exclude=(C,))
        right = f"{Y.name}[k, j]"
    if kind in ("cols", "both"):  # trmm-like: X[k, i]
        X = b.fresh((nk, ni))
        left = f"{X.name}[k, i]"
    elif ni == nj and nj == nk and kind == "rows" and rng.random() < 0.4:
        X, left = Y, f"{Y.name}[i, k]"  # syrk itself: one operand read both ways
    else:
        X = b.pick_input((ni, nk), exclude=(C, Y))
        left = f"{X.name}[i, k]"
    X.read = Y.read = True
    order = rng.choice([("i", "j", "k"), ("i", "k", "j"), ("k", "i", "j"), ("j", "i", "k")])
    extent = {"i": ni, "j": nj, "k": nk}
    tri_k = ni == nk and rng.random() < 0.3 and order.index("i") < order.index("k")
    for d, v in enumerate(order):
        b.emit(d, f"for {v} in range({'i' if v == 'k' and tri_k else extent[v]}):")
    _accumulate(b, C, f"{left} * {right}")


def _deep(b: _Builder) -> None:
    rng = b.rng
    if rng.random() < 0.5:
        # doitgen-like: for r, q: { for p: s[p] = 0; for s: s[p] += A[r,q,s]*W[s,p] } ; A[r,q,p] = s[p]
        A = b.pick_input(("N", "M", "K"), prefer_written=0.3)
        W = b.pick_input(("K", "K"), exclude=(A,))
        acc = b.fresh(("K",), prefix="S")
        acc.written = acc.read = True
        z = "0" if b.dtype == "i32" else "0.0"
        b.emit(0, "for r in range(N):")
        b.emit(1, "for q in range(M):")
        b.emit(2, "for p in range(K):")
        b.emit(3, f"{acc.name}[p] = {z}")
        b.emit(3, "for s in range(K):")
        prod = f"{A.name}[r, q, s] * {W.name}[s, p]"
        b.emit(4, f"{acc.name}[p] += {prod if b.dtype != 'i32' else f'({prod}) % 97'}")
        b.emit(2, "for p in range(K):")
        b.emit(3, f"{A.name}[r, q, p] = {acc.name}[p]")
        A.written = True
        return
    five = rng.random() < 0.4
    X = b.output(("N", "M", "K", "K") if five else ("N", "M", "K"))
    Y = b.pick_input(("N", "M", "K", "K") if five else ("N", "M", "K"), exclude=(X,))
    W = b.pick_input(("K", "K"), exclude=(X,))
    vs = ("a", "b", "c", "d", "e") if five else ("a", "b", "c", "d")
    ext = ("N", "M", "K", "K", "K") if five else ("N", "M", "K", "K")
    for d, (v, n) in enumerate(zip(vs, ext)):
        b.emit(d, f"for {v} in range({n}):")
    out_idx = _idx(vs[:-1])
    in_idx = _idx(vs[:-2] + (vs[-1],))
    prod = f"{Y.name}[{in_idx}] * {W.name}[{vs[-1]}, {vs[-2]}]"
    b.emit(len(vs), f"{X.name}[{out_idx}] += {prod if b.dtype != 'i32' else f'({prod}) % 97'}")
    X.read = True


def _copy(b: _Builder) -> None:
    n, m = b.rng.choice(SPACE[:2]), b.rng.choice(SPACE)
    src = b.pick_input((n, m), prefer_written=0.9)
    dst = b.output((m, n))
    b.emit(0, f"for i in range({n}):")
    b.emit(1, f"for j in range({m}):")
    b.emit(2, f"{dst.name}[j, i] = {src.name}[i, j]")


@dataclass
class _Coupling:
    """The nests of one coupled-fields time loop (`_coupled`): index text, differences, nests."""

    b: _Builder
    dims: tuple[str, ...]
    vars_: tuple[str, ...]
    integer: bool

    def shifted(self, arr: str, d: int, off: int) -> str:
        """`arr` indexed at the loop point moved by `off` along dimension `d`."""
        p = list(self.vars_)
        if off:
            p[d] = f"{self.vars_[d]} {'-' if off < 0 else '+'} {abs(off)}"
        return f"{arr}[{_idx(tuple(p))}]"

    def differences(self, f: _Array, fields: list[_Array]) -> tuple[list[str], dict[int, tuple[int, int]]]:
        """One-sided differences of (up to two) other fields, and the margins they need."""
        rng, nd = self.b.rng, len(self.vars_)
        terms, margins = [], {}
        for g in rng.sample([x for x in fields if x is not f], k=min(2, len(fields) - 1)):
            d = rng.randrange(nd)
            lo, hi = margins.get(d, (0, 0))
            if rng.random() < 0.5:  # backward difference g[x] - g[x - e_d]
                terms.append(f"({self.shifted(g.name, d, 0)} - {self.shifted(g.name, d, -1)})")
                margins[d] = (1, hi)
            else:  # forward difference g[x + e_d] - g[x]
                terms.append(f"({self.shifted(g.name, d, 1)} - {self.shifted(g.name, d, 0)})")
                margins[d] = (lo, 1)
        return terms, margins

    def nest(self, target: _Array, terms: list[str], margins: dict[int, tuple[int, int]]) -> None:
        """A nest updating `target` in place from `terms`, sometimes in transposed loop order."""
        b, rng, nd = self.b, self.b.rng, len(self.vars_)
        order = list(range(nd))
        if nd >= 2 and rng.random() < 0.25:
            order[0], order[1] = order[1], order[0]  # a transposed nest
        for depth, d in enumerate(order):
            lo, hi = margins.get(d, (0, 0))
            upper = f"{self.dims[d]} - {hi}" if hi else self.dims[d]
            bound = f"{lo}, {upper}" if lo else upper
            b.emit(1 + depth, f"for {self.vars_[d]} in range({bound}):")
        here = f"{target.name}[{_idx(self.vars_)}]"
        if self.integer:
            rhs = f"({here} - ({' + '.join(terms)}) // 2) % 1000"
        else:
            rhs = f"{here} - {rng.choice(['0.5', '0.25', '0.125'])} * ({' + '.join(terms)})"
        b.emit(1 + nd, f"{here} = {rhs}")


def _coupled(b: _Builder) -> None:
    """Fields coupled in one time loop, as fdtd-2d, heat-3d and adi are: several nests per time
    step, each updating one field in place from one-sided differences of the others, perhaps a
    boundary row set from a per-step source (fdtd-2d's ey[0, j] = fict[t]) and a sweep (a
    recurrence along one dimension, adi's).  Some nests are written in a transposed loop order, so
    an interchange helps there and hurts elsewhere: the choice a model must rank right."""
    rng = b.rng
    nd = rng.choice([1, 2, 2, 2, 3])
    dims = tuple(rng.choice(SPACE[:2]) if d < 2 else rng.choice(SPACE) for d in range(nd))
    vars_ = ("i", "j", "k")[:nd]
    b.sizes_used.add("T")
    b.emit(0, "for t in range(T):")
    fields: list[_Array] = []
    for _ in range(rng.choice([2, 3, 3])):
        f = b.pick_input(dims, prefer_written=0.4, exclude=tuple(fields))
        f.written = True
        fields.append(f)
    c = _Coupling(b, dims, vars_, b.dtype == "i32")
    if nd >= 2 and rng.random() < 0.5:  # boundary row from a per-step source
        src = b.pick_input(("T",), prefer_written=0.0)
        b.emit(1, f"for {vars_[1]} in range({dims[1]}):")
        row = ("0", vars_[1]) + ("0",) * (nd - 2)
        b.emit(2, f"{fields[0].name}[{_idx(row)}] = {src.name}[t]")
    for f in fields:
        c.nest(f, *c.differences(f, fields))
    if nd >= 2 and rng.random() < 0.4:  # a sweep: a recurrence along one dimension
        f, d = rng.choice(fields), rng.randrange(nd)
        c.nest(f, [c.shifted(f.name, d, -1)], {d: (1, 0)})
    for f in fields:
        f.read = True


# -- patterns with kernel-local scalars (symm's temp2, deriche's ym1, ludcmp's w, durbin's sum) -----------

def _local(b: _Builder, depth: int, value: str) -> str:
    """Declare a fresh kernel-local scalar (its first assignment carries the type) set to `value`."""
    b.counter += 1
    name = f"s{b.counter}"
    b.emit(depth, f"{name}: {b.dtype} = {value}")
    return name


def _zero(b: _Builder) -> str:
    return "0" if b.dtype == "i32" else "0.0"


def _scalar_reduction(b: _Builder) -> None:
    """A dot product accumulated in a scalar, per row (mat-vec) or per element (mat-mat), with an
    optional triangular bound and an array update beside the accumulation (symm)."""
    rng = b.rng
    n, m = rng.choice(SPACE[:2]), rng.choice(SPACE)
    matrix = rng.random() < 0.5
    tri = rng.random() < 0.3
    kdim = n if tri else rng.choice(SPACE)
    out = b.output((n, m) if matrix else (n,))
    A = b.pick_input((n, kdim), exclude=(out,))
    x = b.pick_input((kdim, m) if matrix else (kdim,), exclude=(out,))
    b.emit(0, f"for i in range({n}):")
    depth = 1
    if matrix:
        b.emit(1, f"for j in range({m}):")
        depth = 2
    acc = _local(b, depth, _zero(b))
    b.emit(depth, f"for k in range({'i' if tri else kdim}):")
    x_ref = f"{x.name}[k, j]" if matrix else f"{x.name}[k]"
    prod = f"{A.name}[i, k] * {x_ref}"
    if b.dtype == "i32":
        prod = f"({prod}) % 97"
    b.emit(depth + 1, f"{acc} += {prod}")
    if matrix and tri and rng.random() < 0.5:  # symm: update the rows above beside the sum
        upd = b.pick_input((n, m), exclude=(out, A))
        upd.written = True
        b.emit(depth + 1, f"{upd.name}[k, j] += {b.combine([f'{A.name}[i, k]', f'{x.name}[i, j]'])}")
    idx = "i, j" if matrix else "i"
    finish = rng.choice(["=", "=", "+="])
    value = acc if rng.random() < 0.5 else b.combine([acc, b.scalar()])
    if b.dtype == "i32":
        value = f"({value}) % 1000"
    b.emit(depth, f"{out.name}[{idx}] {finish} {value}")
    if finish == "+=":
        out.read = True


def _scalar_recurrence(b: _Builder) -> None:
    """A first- or second-order recursive filter along rows or columns, forwards or backwards,
    its state in scalars (deriche)."""
    rng = b.rng
    n, m = rng.choice(SPACE[:2]), rng.choice(SPACE)
    X = b.pick_input((n, m))
    Y = b.output((n, m))
    columns = rng.random() < 0.4
    outer, inner = ("j", "i") if columns else ("i", "j")
    ext = {"i": n, "j": m}
    b.emit(0, f"for {outer} in range({ext[outer]}):")
    order = rng.choice([1, 2, 2])
    state = [_local(b, 1, _zero(b)) for _ in range(order)]
    last = _local(b, 1, _zero(b)) if rng.random() < 0.5 else None
    backward = rng.random() < 0.4
    rng_text = f"range({ext[inner]} - 1, -1, -1)" if backward else f"range({ext[inner]})"
    b.emit(1, f"for {inner} in {rng_text}:")
    terms = [f"{X.name}[i, j]"] + state + ([last] if last else [])
    if b.dtype == "i32":
        rhs = f"({' + '.join(terms)}) % 1000"
    else:
        coef = ["0.5", "0.3", "-0.2", "0.15"]
        rhs = " + ".join(f"{c} * {t}" for c, t in zip(coef, terms))
    b.emit(2, f"{Y.name}[i, j] = {rhs}")
    if last:
        b.emit(2, f"{last} = {X.name}[i, j]")
    for k in range(order - 1, 0, -1):
        b.emit(2, f"{state[k]} = {state[k - 1]}")
    b.emit(2, f"{state[0]} = {Y.name}[i, j]")


def _scalar_temp(b: _Builder) -> None:
    """An element-wise map through a temporary scalar, used more than once."""
    rng = b.rng
    depth = rng.choice([1, 2, 2, 3])
    dims = tuple(rng.choice(SPACE) for _ in range(depth))
    vars_ = ("i", "j", "k")[:depth]
    for d, (v, n) in enumerate(zip(vars_, dims)):
        b.emit(d, f"for {v} in range({n}):")
    src = b.pick_input(dims)
    out = b.output(dims)
    t = _local(b, depth, b.combine([f"{src.name}[{_idx(vars_)}]", b.const()]))
    use = f"({t} * {t} + {t}) % 1000" if b.dtype == "i32" else f"{t} * {t} - {b.const()} * {t}"
    b.emit(depth, f"{out.name}[{_idx(vars_)}] = {use}")


PATTERNS = [(_elementwise, 3), (_stencil, 3), (_reduction, 3), (_matmul, 3), (_deep, 1), (_copy, 1)]
SCALAR_PATTERNS = [(_scalar_reduction, 3), (_scalar_recurrence, 2), (_scalar_temp, 1)]
# Patterns only `patterns=` names: outside the default mix, so the seeds of the committed data parts
# still give the programs they gave.
OPT_IN_PATTERNS = [(_coupled, 3), (_columns, 3)]


def _mix(scalars: bool) -> list[tuple]:
    return PATTERNS + SCALAR_PATTERNS if scalars else PATTERNS


def _pattern_name(fn) -> str:
    return fn.__name__[1:]


def pattern_names(scalars: bool = False) -> list[str]:
    """The default mix's pattern names (the functions' without the '_'); `synth_program(patterns=...)`
    also accepts the opt-in ones (`coupled`, `columns`)."""
    return [_pattern_name(fn) for fn, _w in _mix(scalars)]


def select_patterns(patterns: tuple[str, ...] | None, scalars: bool = False) -> list[tuple]:
    """The (pattern, weight) mix restricted to `patterns` (None: the default mix, without the
    opt-in patterns); ValueError names unknown ones."""
    mix = _mix(scalars)
    if patterns is None:
        return mix
    known = pattern_names(scalars) + [_pattern_name(fn) for fn, _w in OPT_IN_PATTERNS]
    unknown = sorted(set(patterns) - set(known))
    if unknown or not patterns:
        raise ValueError(f"unknown synthetic patterns {unknown} (known: {', '.join(known)})")
    return [(fn, w) for fn, w in mix + OPT_IN_PATTERNS if _pattern_name(fn) in patterns]


# -- whole programs -------------------------------------------------------------------------------------

def _init_value(arr: _Array, dtype: str, salt: int) -> str:
    vs = ("i", "j", "k", "l")[:len(arr.dims)]
    coeffs = [3, 7, 11, 13]
    lin = " + ".join(f"{c} * {v}" for c, v in zip(coeffs, vs)) or "0"
    mod = 17 + salt % 13
    if dtype == "i32":
        return f"({lin} + {salt}) % {mod}"
    return f"{dtype}(({lin} + {salt}) % {mod}) / {mod}"


def render(b: _Builder, sizes: dict[str, int], name: str) -> str:
    dt = b.dtype
    used = [s for s in ("N", "M", "K", "T") if s in b.sizes_used]
    arrays = sorted(b.arrays.values(), key=lambda a: int("".join(c for c in a.name if c.isdigit())))
    params = [f"{s}: int" for s in used] + [f"{s}: {dt}" for s in b.scalars] + \
             [f"{a.name}: {dt}[{', '.join(a.dims)}]" for a in arrays]
    sig = ", ".join(params)
    init_lines = []
    for k, s in enumerate(b.scalars):
        init_lines.append(f"    {s} = {('3', '2')[k] if dt == 'i32' else ('1.5', '0.8')[k]}")
    for k, a in enumerate(arrays):
        if not a.read:
            continue
        vs = ("i", "j", "k", "l")[:len(a.dims)]
        for d, (v, n) in enumerate(zip(vs, a.dims)):
            init_lines.append("    " * (d + 1) + f"for {v} in range({n}):")
        init_lines.append("    " * (len(vs) + 1) + f"{a.name}[{_idx(vs)}] = {_init_value(a, dt, k)}")
    outputs = [a.name for a in arrays if a.written]
    size_entry = ", ".join(f"{s}={sizes[s]}" for s in used)
    text = [f'"""{name}: synthetic program generated by looper.datagen.synth."""', "",
            f'SIZES = {{"DEFAULT": dict({size_entry})}}', "", "",
            f"def init({sig}):", *(init_lines or ["    pass"]), "", "",
            f"def kernel({sig}):", *b.lines, "", "",
            f"OUTPUTS = {outputs!r}", ""]
    return "\n".join(text)


def _counts(source: str) -> list[int]:
    """Instances of each kernel statement (exact, by isl)."""
    p = parse_source(source, "<synth>", "DEFAULT")
    return [int(s.domain.count_val().to_python()) for s in p.statements]


def synth_program(seed: int, target: tuple[float, float] = (3e6, 3e7), name: str | None = None,
                  scalars: bool = False, patterns: tuple[str, ...] | None = None,
                  scaled_products: bool = False) -> str:
    """The source of random program number `seed`, sized to execute a number of statement
    instances drawn log-uniformly from `target`.  With `scalars`, the first nest keeps values in
    kernel-local scalars and the others may too (without, seeds give the programs they always did).
    `patterns` (names from `pattern_names`) restricts the nests to those patterns, at their usual
    relative weights: a data part that samples one kind of kernel more densely.  With
    `scaled_products`, about half the matrix and matrix-vector products are scaled by a scalar or a
    constant (`alpha * A[i, k] * B[k, j]`, as in PolyBench's gemm, 2mm, syrk, gesummv): a model that
    never saw one ranked LARGE gemm's loop orders upside down."""
    rng = random.Random(seed)
    dtype = rng.choices(["f64", "f32", "i32"], weights=[6, 3, 1])[0]
    b = _Builder(rng, dtype, coef_rng=random.Random(f"{seed}:coefficients") if scaled_products else None)
    n_nests = rng.choices([1, 2, 3, 4], weights=[4, 4, 2, 1])[0]
    mix = select_patterns(patterns, scalars)
    fns, weights = zip(*mix)
    for k in range(n_nests):
        if scalars and k == 0:
            firsts = [(fn, w) for fn, w in SCALAR_PATTERNS if (fn, w) in mix] or SCALAR_PATTERNS
            first, w = zip(*firsts)
            rng.choices(first, weights=w)[0](b)
        else:
            rng.choices(fns, weights=weights)[0](b)
    name = name or f"synth{seed}"
    # relative size of each dimension, then one scale factor fitted to the target
    rel = {"N": 1.0, "M": rng.choice([0.5, 0.75, 1.0, 1.25]), "K": rng.choice([0.5, 1.0, 1.5])}
    t_steps = rng.choice([4, 8, 16, 32])
    goal = 10 ** rng.uniform(math.log10(target[0]), math.log10(target[1]))

    def sizes_at(scale: float) -> dict[str, int]:
        out = {s: max(4, int(round(rel[s] * scale))) for s in SPACE}
        out["T"] = t_steps
        return out

    # Each statement's instance count grows like c * scale^d: measure c and d at two small scales
    # (isl counts points by enumeration, too slow at full size) and solve the sum for the goal.
    s1, s2 = 12.0, 24.0
    c1, c2 = _counts(render(b, sizes_at(s1), name)), _counts(render(b, sizes_at(s2), name))
    terms = [(a, math.log(max(b_, 1) / max(a, 1)) / math.log(s2 / s1)) for a, b_ in zip(c1, c2)]

    def predicted(scale: float) -> float:
        return sum(a * (scale / s1) ** d for a, d in terms)

    lo, hi = 4.0, 4.0e6
    for _ in range(100):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if predicted(mid) < goal else (lo, mid)
    return render(b, sizes_at(hi), name)
