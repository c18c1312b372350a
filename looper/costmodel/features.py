"""Program + schedule -> the cost model's input: a tree of computation and loop feature vectors.

After LOOPer: per computation, its iteration-domain constraints, its access matrices (with buffer
ids), its expression as a post-order sequence of typed operations, and the sequence of the
transformations applied to it; per loop its extent and tags; the loop tree; the root nests.
Beyond LOOPer, each access carries the address stride of every loop of the *transformed* nest
(cheap to compute exactly from the schedule, and the first thing locality depends on).

The computations are those of the *rewritten* program (`Lowered.program`): a pack's copy is a
computation of its own and the statements that read the packed buffer show its strides.  What a
step does beyond the loop rows is read from the lowered schedule: vector loops, a register tile's
micro-kernel, wavefront loops, one parallel region.  Every registered transformation has a slot
in the one-hot of kinds (`Transform.feature_slot`), so no step encodes as zeros.

Since version 5 a candidate also carries the analytic cost terms of its lowered schedule on the
target (`costmodel.terms`: compute, bytes past each cache level, forks and barriers, in seconds)
and the target's own limits (`TERMS`): the network weights hand-written terms, as Adams2019's
does, and it sees the machine it predicts for.

Version 6 computes the loop steps behind the strides as the terms do (`rows.inverse_steps`): a
row the loops around it fix moves nothing, and the other rows keep their steps (version 5 gave
every loop of such a statement stride zero: isl's schedules repeat the rows of a statement with
fewer loops than the band), and with the terms' per-reference reuse.

Version 7 changes two of the terms' definitions, not the layouts: the compute term counts every
operation a statement issues (integer arithmetic, comparisons and selections too, not its flops),
and an innermost loop that carries a short flow dependence from a thinner set runs at scalar
speed, not vector speed (floyd-warshall's original: estimated 7 ms at MEDIUM, 82 ms as gcc runs it).

Every vector is described by a `Layout` of named fields, so code reads `layout["extent"]`, never
a magic offset.  `FEATURE_VERSION` changes whenever a layout or a definition changes: a model
trained on an older version is widened to this one when `costmodel.migrate` describes that
version's layouts (its predictions for what it could describe unchanged), else refused.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import islpy as isl
import numpy as np

from ..ir.program import (
    Binary, Call, Cast, Const, DType, Expr, IterRef, Load, Program, Select, SizeRef, Statement, Unary,
)
from ..caching import Memo
from ..ir.rows import first_statement, inverse_steps, nesting_level
from ..ir.schedule import Lowered, Row
from ..target import Target
from ..target.target import DEFAULT_CACHES
from ..transforms import Transform
from ..transforms.schedule import Schedule
from .terms import DEFAULT_DRAM_PER_THREAD, DEFAULT_FORK, DEFAULT_GHZ, DEFAULT_REGION, Estimates

FEATURE_VERSION = 7

MAX_ITERS = 6        # statement depth (PolyBench <= 4, synthetic <= 5)
MAX_LOOPS = 10       # loops around a statement after tiling
MAX_CONSTRAINTS = 14
MAX_ACCESSES = 16
MAX_ARRAY_DIMS = 4
MAX_BUFFERS = 16


class Layout:
    """Named slices of a flat feature vector."""

    def __init__(self, fields_: list[tuple[str, int]]):
        self.slices: dict[str, slice] = {}
        at = 0
        for name, width in fields_:
            self.slices[name] = slice(at, at + width)
            at += width
        self.width = at

    def __getitem__(self, name: str) -> slice:
        return self.slices[name]

    def new(self) -> np.ndarray:
        return np.zeros(self.width, dtype=np.float32)


DTYPES = [d for d in DType]
OPS = ["load", "const", "iter", "size", "+", "-", "*", "/", "//", "%", "neg", "not", "<", "<=", ">",
       ">=", "==", "!=", "&&", "||", "select", "sqrt", "exp", "pow", "abs", "min", "max", "cast",
       "=", "+=", "-=", "*=", "/="]
# One-hot slots of transformation kinds: each transformation class declares its `feature_slot`
# (interchange 0, reverse 1, skew 2, shift 3, fuse 4, distribute 5, parallelize 6, tile 7,
# unroll 8; since version 4: fission 9, region 10, pack 11, vectorize 12, timetile 13,
# islschedule 14, expand 15, blocks 16, register 17, sinktile 18), fixed once a model is trained
# on it.
KIND_SLOTS = 19

EXPR = Layout([("op", len(OPS)), ("dtype", len(DTYPES)), ("access", 1), ("value", 1)])
TRANSFORM = Layout([("kind", KIND_SLOTS), ("levels", 3), ("matrix", 9), ("sizes", 3), ("factor", 1),
                    ("shift", 3), ("depth", 1), ("cuts", 1), ("lanes", 1), ("option", 1)])
ACCESS = Layout([("present", 1), ("write", 1), ("buffer", MAX_BUFFERS), ("rank", 1),
                 ("index", MAX_ARRAY_DIMS * (MAX_ITERS + 1)), ("stride", MAX_LOOPS),
                 ("inner_stride", 1), ("footprint", 1)])
COMP = Layout([
    ("dtype", len(DTYPES)), ("depth", 1), ("n_loads", 1), ("n_ops", 1), ("instances", 1),
    ("domain", MAX_CONSTRAINTS * (MAX_ITERS + 2)),
    ("schedule", MAX_LOOPS * (MAX_ITERS + 2)),
    ("accesses", MAX_ACCESSES * ACCESS.width),
    ("parallel", MAX_LOOPS), ("tiled", MAX_LOOPS), ("unrolled", MAX_LOOPS),
    ("fused", 1), ("distributed", 1), ("shifted", 1), ("skewed", 1), ("interchanged", 1), ("reversed", 1),
    # since version 4: the lowered schedule beyond its rows
    ("vector", MAX_LOOPS),  # loops marked `omp simd`
    ("microkernel", 3),  # a register tile's MR, NR and vector lanes (log2)
    ("region", 1),  # the kernel runs in one parallel region
    ("reads_copy", 1),  # reads a buffer a step added (a packed copy, an expanded temporary)
    ("added", 1),  # a statement a step added (a pack's copy)
])
LOOP = Layout([("extent", 1), ("level", 1), ("parallel", 1), ("tile", 1), ("point", 1), ("unroll", 1),
               ("innermost", 1), ("n_comps", 1), ("n_loops", 1), ("skewed", 1),
               # since version 4
               ("vector", 1), ("wavefront", 1), ("region", 1), ("microkernel", 1)])
# Since version 5, one per candidate: its analytic cost terms on the target (`CostTerms.vector`:
# log10 seconds of compute, l2, l3, dram, forks, barriers; threads busy, vector and chain shares),
# their combined estimate (log10 seconds), and the target (log10 of a thread's FMA peak in GFLOP/s,
# of the bandwidth in GB/s, of the first and later parallel regions' seconds; log2 of the vector
# lanes of doubles and of the L1, L2, L3 KiB; threads; whether its limits were measured)
TERMS = Layout([("terms", 9), ("estimate", 1), ("peak", 1), ("bandwidth", 1), ("fork", 1), ("region", 1),
                ("lanes", 1), ("caches", 3), ("threads", 1), ("measured", 1)])


def reference_target(threads: int = 2) -> Target:
    """The machine a point was timed on when it recorded none (the first fourteen parts): caches,
    limits and vectors unknown, so the terms' typical assumptions (`costmodel.terms`)."""
    return Target("unknown", 64, (), threads, threads)


def machine_vector(target: Target) -> np.ndarray:
    """The target's part of TERMS (the typical assumptions of `costmodel.terms` where it was not
    measured)."""
    lim = target.limits
    lanes = target.lanes(8)
    v = np.zeros(TERMS.width - TERMS["peak"].start, dtype=np.float32)
    measured = lim is not None and lim.peak_double > 0
    peak = lim.peak_double / max(1, lim.threads) if measured else 4 * lanes * DEFAULT_GHZ
    bandwidth = lim.bandwidth if measured and lim.bandwidth else DEFAULT_DRAM_PER_THREAD * target.threads / 1e9
    fork = lim.fork_seconds if measured and lim.fork_seconds else DEFAULT_FORK
    region = lim.region_seconds if measured and lim.region_seconds else DEFAULT_REGION
    caches = [target.cache_bytes(level) if target.caches else DEFAULT_CACHES[level] for level in (1, 2, 3)]
    v[:] = [math.log10(peak), math.log10(bandwidth), math.log10(fork), math.log10(region), math.log2(lanes)] \
        + [math.log2(c / 1024) for c in caches] + [target.threads, float(measured)]
    return v


def unencodable(program: Program) -> str | None:
    """Why the cost model cannot describe `program` faithfully (None: it can): its layouts have
    room for nests up to MAX_ITERS deep (a deeper one would lose its inner loops' coefficients),
    MAX_ARRAY_DIMS array dimensions and MAX_BUFFERS arrays.  A search then measures instead."""
    deepest = program.max_depth
    if deepest > MAX_ITERS:
        return f"the cost model describes nests up to {MAX_ITERS} deep; this program's deepest is {deepest}"
    rank = max((a.rank for a in program.arrays.values()), default=0)
    if rank > MAX_ARRAY_DIMS:
        return f"the cost model describes arrays of up to {MAX_ARRAY_DIMS} dimensions; this program has {rank}"
    return None


def slog(x: float) -> float:
    """Signed log: keeps huge constants (sizes) in a range a network can use."""
    return math.copysign(math.log1p(abs(x)), x)


@dataclass
class CompFeatures:
    vector: np.ndarray  # COMP layout
    expression: np.ndarray  # [n, EXPR.width]
    transforms: np.ndarray  # [n, TRANSFORM.width] (possibly n = 0)


@dataclass
class LoopFeatures:
    vector: np.ndarray  # LOOP layout
    children: list = field(default_factory=list)  # ("comp", index) or ("loop", LoopFeatures)


@dataclass
class ProgramFeatures:
    comps: list[CompFeatures]
    roots: list  # ("comp", index) or ("loop", LoopFeatures)
    terms: np.ndarray = field(default_factory=TERMS.new)  # TERMS layout

    def loops(self):
        """Every loop of the tree, outer before inner."""
        todo = [x for kind, x in reversed(self.roots) if kind == "loop"]
        while todo:
            loop = todo.pop()
            yield loop
            todo.extend(x for kind, x in reversed(loop.children) if kind == "loop")

    def signature(self) -> tuple:
        """Tree shape plus sequence lengths: samples with equal signatures batch together."""
        def sig(node):
            kind, x = node
            return ("c", x) if kind == "comp" else ("l",) + tuple(sig(c) for c in x.children)
        return (tuple(sig(r) for r in self.roots),
                tuple((len(c.expression), len(c.transforms)) for c in self.comps))


# -- per program (cached across candidates) ------------------------------------------------------

class ProgramInfo:
    """What featurization needs from a program that no schedule changes: computed once.  `target`:
    the machine the candidates are predicted for (None: `reference_target`)."""

    def __init__(self, program: Program, target: Target | None = None):
        self.program = program
        self.target = target or reference_target()
        self.machine = machine_vector(self.target)
        self.estimates = Estimates(self.target)
        self.buffers = {name: k for k, name in enumerate(program.arrays)}
        self.bounds: dict[str, list[tuple[int, int]]] = {}
        self.instances: dict[str, int] = {}
        self.domain_rows: dict[str, np.ndarray] = {}
        self.expr: dict[str, np.ndarray] = {}
        # a candidate changes a few statements; the others' features equal the parent's
        self.comp_cache: Memo = Memo()
        # the programs transformations rewrote from this one (packs, expansions), by what tells
        # them apart (`Program.rewritten`)
        self.rewrites: Memo = Memo()
        for st in program.statements:
            hull = st.domain.simple_hull() if st.depth else None
            bb = []
            for d in range(st.depth):
                lo = st.domain.dim_min_val(d).to_python()
                hi = st.domain.dim_max_val(d).to_python()
                bb.append((int(lo), int(hi)))
            self.bounds[st.name] = bb
            self.instances[st.name] = _count(st)
            self.domain_rows[st.name] = _domain_matrix(hull, st.depth)
            self.expr[st.name] = _expression(st)

    def of(self, program: Program) -> "ProgramInfo":
        """The info of `program`: this one, or that of a rewrite of it (`Lowered.program`)."""
        if program is self.program or not program.rewritten:
            return self
        if len(self.rewrites) > 256:
            self.rewrites.clear()
        return self.rewrites.lookup(program.rewritten, lambda: ProgramInfo(program, self.target))


def _count(st: Statement) -> int:
    """Instances: exact for small domains, bounding-box product otherwise (isl counts by scanning)."""
    box = 1
    for d in range(st.depth):
        box *= int(st.domain.dim_max_val(d).to_python()) - int(st.domain.dim_min_val(d).to_python()) + 1
    if box <= 200_000:
        return int(st.domain.count_val().to_python())
    return box


def _domain_matrix(hull, depth: int) -> np.ndarray:
    """Constraints of the domain's hull: [coefficients over the iterators, constant, is-equality]."""
    out = np.zeros((MAX_CONSTRAINTS, MAX_ITERS + 2), dtype=np.float32)
    if hull is None:
        return out
    for k, c in enumerate(hull.get_constraints()[:MAX_CONSTRAINTS]):
        for d in range(min(depth, MAX_ITERS)):
            out[k, d] = int(c.get_coefficient_val(isl.dim_type.set, d).to_python())
        out[k, MAX_ITERS] = slog(int(c.get_constant_val().to_python()))
        out[k, MAX_ITERS + 1] = 1.0 if c.is_equality() else 0.0
    return out


def _expression(st: Statement) -> np.ndarray:
    """Post-order typed operation sequence of the statement (value, then the assignment)."""
    toks: list[np.ndarray] = []
    read_k = [1]

    def tok(op: str, dt: DType, access: float = 0.0, value: float = 0.0):
        v = EXPR.new()
        v[EXPR["op"].start + OPS.index(op)] = 1
        v[EXPR["dtype"].start + DTYPES.index(dt)] = 1
        v[EXPR["access"]] = access
        v[EXPR["value"]] = value
        toks.append(v)

    def visit(e: Expr):
        if isinstance(e, Const):
            tok("const", e.dtype, value=slog(float(e.value)))
        elif isinstance(e, IterRef):
            tok("iter", DType.I32)
        elif isinstance(e, SizeRef):
            tok("size", DType.I32)
        elif isinstance(e, Load):
            k = read_k[0]
            read_k[0] += 1
            tok("load", e.dtype, access=min(k, MAX_ACCESSES) / MAX_ACCESSES)
        elif isinstance(e, Unary):
            visit(e.operand)
            tok("neg" if e.op == "-" else "not", e.dtype)
        elif isinstance(e, Binary):
            visit(e.left)
            visit(e.right)
            tok(e.op, e.dtype)
        elif isinstance(e, Select):
            visit(e.cond)
            visit(e.then)
            visit(e.orelse)
            tok("select", e.dtype)
        elif isinstance(e, Call):
            for a in e.args:
                visit(a)
            tok(e.fn, e.dtype)
        elif isinstance(e, Cast):
            visit(e.operand)
            tok("cast", e.dtype)

    if st.body.op != "=":
        read_k[0] = 2  # the target's own read is access 1
    visit(st.body.value)
    tok(st.body.op, st.body.target.dtype, access=0.0)
    return np.stack(toks)


# -- per candidate ----------------------------------------------------------------------------------

def _loop_rows(rows: tuple[Row, ...]) -> list[int]:
    return [k for k, r in enumerate(rows) if not r.is_constant]


def featurize(schedule: Schedule, info: ProgramInfo | None = None) -> ProgramFeatures:
    """The features of `schedule`'s rewritten program under its lowered schedule (`info`: the
    parsed program's, shared by the candidates of one search)."""
    L = schedule.lowered
    info = (info or ProgramInfo(schedule.program)).of(L.program)
    terms = TERMS.new()
    estimate = info.estimates.of(L)
    terms[TERMS["terms"]] = estimate.vector()
    terms[TERMS["estimate"]] = math.log10(max(estimate.seconds, 1e-12))
    terms[TERMS["peak"].start:] = info.machine
    program = L.program
    tree = L.tree
    comps: list[CompFeatures] = []
    index = {}
    history = _history(schedule)
    parsed = {st.name for st in schedule.program.statements}
    for k, st in enumerate(program.statements):
        index[st.name] = k
        hist = history.get(st.name) or History()
        added = st.name not in parsed
        key = (st.name, L.rows[st.name], tuple(sorted(r for s, r in L.parallel if s == st.name)),
               tuple(sorted(u for u in L.unroll if u[0] == st.name)),
               tuple(sorted(r for s, r in L.vector if s == st.name)), _microkernel(L, st.name), L.region,
               added, hist.key())
        if len(info.comp_cache) > 50_000:
            info.comp_cache.clear()
        comps.append(info.comp_cache.lookup(key, lambda: _comp(st, L, info, hist, added)))
    roots = [_node(n, L, info, index, 0) for n in tree.roots]
    return ProgramFeatures(comps, roots, terms)


def _microkernel(L: Lowered, statement: str):
    return next((mk for mk in L.microkernels if mk.stmt == statement), None)


def _node(n, L: Lowered, info: ProgramInfo, index: dict[str, int], level: int):
    if isinstance(n, str):
        return ("comp", index[n])
    v = LOOP.new()
    st = first_statement(n.statements)
    row = L.rows[st][n.row]
    extent = 0.0
    for s in n.statements:
        r = L.rows[s][n.row]
        bb = info.bounds[s]
        span = sum(abs(c) * (hi - lo) for c, (lo, hi) in zip(r.coeffs, bb))
        extent = max(extent, span / r.div + 1)
    v[LOOP["extent"]] = slog(extent)
    v[LOOP["level"]] = level
    parallel = any((s, n.row) in L.parallel for s in n.statements)
    v[LOOP["parallel"]] = float(parallel)
    v[LOOP["tile"]] = math.log2(row.div) if row.div > 1 else 0.0
    v[LOOP["point"]] = float(row.div == 1 and any(
        L.rows[st][k].div > 1 and L.rows[st][k].coeffs == row.coeffs for k in range(n.row)))
    f = max((L.unroll_factor(s, n.row) for s in n.statements), default=0)
    v[LOOP["unroll"]] = math.log2(f) if f else 0.0
    v[LOOP["innermost"]] = float(n.is_innermost)
    v[LOOP["n_comps"]] = sum(isinstance(c, str) for c in n.children)
    v[LOOP["n_loops"]] = len(n.loops)
    v[LOOP["skewed"]] = float(sum(1 for c in row.coeffs if c) > 1)
    v[LOOP["vector"]] = float(any((s, n.row) in L.vector for s in n.statements))
    v[LOOP["wavefront"]] = float(any(L.rows[s][n.row].extra for s in n.statements))
    v[LOOP["region"]] = float(L.region and parallel)
    v[LOOP["microkernel"]] = float(any(mk.stmt in n.statements and n.row in (mk.tile_i, mk.tile_j, mk.k, mk.i, mk.j)
                                       for mk in L.microkernels))
    children = [_node(c, L, info, index, level + 1) for c in n.children]
    return ("loop", LoopFeatures(v, children))


def _access(row: np.ndarray, a, st: Statement, info: ProgramInfo, steps: np.ndarray, n_loops: int) -> None:
    """One access's ACCESS row: buffer, subscripts, and its address stride per loop of the
    transformed nest (`steps`: iterator change per unit step of each loop)."""
    program = info.program
    arr = program.arrays[a.array]
    row[ACCESS["present"]] = 1
    row[ACCESS["write"]] = float(a.is_write)
    row[ACCESS["buffer"].start + info.buffers[a.array] % MAX_BUFFERS] = 1
    row[ACCESS["rank"]] = arr.rank
    idx = np.zeros((MAX_ARRAY_DIMS, MAX_ITERS + 1), dtype=np.float32)
    lin = np.zeros(st.depth)
    mult = 1
    for d in reversed(range(min(arr.rank, MAX_ARRAY_DIMS))):
        aff = a.index[d]
        for i_k, it in enumerate(st.iterators[:MAX_ITERS]):
            idx[d, i_k] = aff.coeff(it)
        idx[d, MAX_ITERS] = slog(aff.substitute(program.sizes).const)
    for d in reversed(range(arr.rank)):
        for i_k, it in enumerate(st.iterators):
            lin[i_k] += a.index[d].coeff(it) * mult
        mult *= arr.extent[d]
    row[ACCESS["index"]] = idx.ravel()
    strides = steps @ lin if st.depth else np.zeros(n_loops)
    for j in range(n_loops):
        row[ACCESS["stride"].start + j] = slog(strides[j])
    if n_loops:
        row[ACCESS["inner_stride"]] = slog(abs(strides[n_loops - 1]))
    row[ACCESS["footprint"]] = slog(math.prod(arr.extent) if arr.rank else 1)


def _comp(st: Statement, L: Lowered, info: ProgramInfo, history: "History", added: bool = False) -> CompFeatures:
    """One computation's COMP vector, expression and transformation history (`added`: a
    statement a step added, not one of the parsed program's)."""
    v = COMP.new()
    dt = st.body.target.dtype
    v[COMP["dtype"].start + DTYPES.index(dt)] = 1
    v[COMP["depth"]] = st.depth
    v[COMP["n_loads"]] = len(st.accesses) - 1
    expr = info.expr[st.name]
    v[COMP["n_ops"]] = len(expr)
    v[COMP["instances"]] = slog(info.instances[st.name])
    v[COMP["domain"]] = info.domain_rows[st.name].ravel()
    rows = L.rows[st.name]
    every = _loop_rows(rows)
    loops = every[:MAX_LOOPS]
    sched = np.zeros((MAX_LOOPS, MAX_ITERS + 2), dtype=np.float32)
    for j, k in enumerate(loops):
        r = rows[k]
        sched[j, :min(st.depth, MAX_ITERS)] = r.coeffs[:MAX_ITERS]
        sched[j, MAX_ITERS] = slog(r.const)
        sched[j, MAX_ITERS + 1] = math.log2(r.div)
        v[COMP["parallel"].start + j] = float((st.name, k) in L.parallel)
        v[COMP["tiled"].start + j] = math.log2(r.div) if r.div > 1 else 0.0
        f = L.unroll_factor(st.name, k)
        v[COMP["unrolled"].start + j] = math.log2(f) if f else 0.0
    v[COMP["schedule"]] = sched.ravel()
    steps = inverse_steps(st.depth, rows, every)[:len(loops)]  # the loops beyond MAX_LOOPS still span
    acc = np.zeros((MAX_ACCESSES, ACCESS.width), dtype=np.float32)
    for a_k, a in enumerate(st.accesses[:MAX_ACCESSES]):
        _access(acc[a_k], a, st, info, steps, len(loops))
    v[COMP["accesses"]] = acc.ravel()
    flags = history.flags
    v[COMP["fused"]] = float("fused" in flags)
    v[COMP["distributed"]] = float("distributed" in flags)
    v[COMP["shifted"]] = float("shifted" in flags)
    v[COMP["skewed"]] = float("skewed" in flags)
    v[COMP["interchanged"]] = float("interchanged" in flags)
    v[COMP["reversed"]] = float("reversed" in flags)
    for j, k in enumerate(loops):
        v[COMP["vector"].start + j] = float((st.name, k) in L.vector)
    mk = _microkernel(L, st.name)
    if mk is not None:
        v[COMP["microkernel"]] = [math.log2(mk.mr), math.log2(mk.nr), math.log2(max(mk.lanes, 1))]
    v[COMP["region"]] = float(L.region)
    program = info.program
    v[COMP["reads_copy"]] = float(any(program.arrays[a.array].role == "temp" for a in st.accesses if not a.is_write))
    v[COMP["added"]] = float(added)
    history = history.vectors
    trans = np.stack(history) if history else np.zeros((0, TRANSFORM.width), dtype=np.float32)
    return CompFeatures(v, expr, trans)


@dataclass
class History:
    """One statement's transformation history: a vector per step that touched it, and the flags
    those steps set (`Transform.feature_flag`; "shifted" also for a fusion with a shift)."""

    vectors: list[np.ndarray] = field(default_factory=list)
    flags: set[str] = field(default_factory=set)

    def key(self) -> bytes:
        return b"".join(h.tobytes() for h in self.vectors)


def encode_transform(t: Transform, statement: str | None = None) -> np.ndarray:
    """One transformation as the TRANSFORM layout (its kind's slot, then its `Encoding`, as it
    acts on `statement` when given)."""
    v = TRANSFORM.new()
    if t.feature_slot is not None:  # every registered kind has one; a kind being written may not yet
        assert t.feature_slot < KIND_SLOTS, f"{t.kind}: feature slot beyond the layout (raise KIND_SLOTS)"
        v[TRANSFORM["kind"].start + t.feature_slot] = 1
    e = t.encoding() if statement is None else t.encoding_of(statement)
    at = TRANSFORM["levels"].start
    for j, r in enumerate(e.rows[:3]):
        v[at + j] = nesting_level(r) / MAX_LOOPS
    if e.matrix:
        m = np.zeros((3, 3))
        n = len(e.matrix)
        m[:n, :n] = e.matrix
        v[TRANSFORM["matrix"]] = m.ravel()
    for j, z in enumerate(e.sizes[:3]):
        v[TRANSFORM["sizes"].start + j] = math.log2(z)
    if e.factor:
        v[TRANSFORM["factor"]] = math.log2(e.factor)
    for j, sh in enumerate(e.shifts[:3]):
        v[TRANSFORM["shift"].start + j] = sh
    if e.depth:
        v[TRANSFORM["depth"]] = e.depth
    if e.cuts:
        v[TRANSFORM["cuts"]] = e.cuts
    if e.lanes:
        v[TRANSFORM["lanes"]] = math.log2(e.lanes)
    if e.option:
        v[TRANSFORM["option"]] = e.option
    return v


def _history(schedule: Schedule) -> dict[str, History]:
    """Per statement, one vector per transformation that touched it, in order."""
    out: dict[str, History] = {}
    for t in schedule.steps:
        flags = {t.feature_flag} if t.feature_flag else set()
        if t.kind == "shift" or any(t.encoding().shifts):
            flags.add("shifted")
        for s in t.touched():
            h = out.setdefault(s, History())
            h.vectors.append(encode_transform(t, s))
            h.flags |= flags
    return out
