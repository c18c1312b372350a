"""Analytic cost terms of a lowered schedule on a target: what a roofline-minded engineer estimates.

After Halide's Adams2019, whose network weights hand-written terms: each term is a time in
seconds, computed from the schedule's loop tree and the target's measured limits, and a model (or
a per-program fit of a few measurements, `costmodel.fit`) weights them.  The terms:

- **compute**: each statement's operations at the rate its innermost loop allows: a register
  tile's micro-kernel near the FMA peak (scaled by its accumulators and its FMA-to-load ratio),
  a loop whose accesses all walk contiguously or stay put at vector speed, a loop that
  accumulates into one element at the latency of a dependent chain (gcc does not reassociate
  floating-point sums) or that carries a flow dependence a few iterations long (seidel-2d's
  `A[i][j-1]`: each point waits for the one before, neither vectorized nor overlapped), anything
  else at scalar speed (a loop that jumps between rows, or carries a short flow from a thinner
  set: floyd-warshall's `path[i][k]`, which gcc's alias check sends to the scalar loop); divided
  among the threads of the statement's parallel loop, with the imbalance of its last share.
  Operations are every one a statement issues, integer and comparisons too (`statement_operations`);
- **l2, l3, dram**: the bytes that miss each cache level over its bandwidth.  A loop's footprint
  is the cache lines its full execution touches (each subscript's range over the loops inside
  it, from the schedule's rows); a loop whose footprint fits a cache costs its footprint once
  per execution, one that does not costs its children's traffic once per iteration.  Private
  caches are per thread, the last level is shared;
- **forks, barriers**: what starting parallel regions and synchronizing them costs
  (`Limits.fork_seconds`, `region_seconds`, measured by `looper machine` in fresh processes).

`estimate(schedule_or_lowered, target)` returns the terms; `CostTerms.seconds` combines them the
way a roofline does (compute and memory overlap, overheads add).  Packs are statements of their
own nests and expansions rewrite the program: both are costed like any statement.  The terms
rank candidates of one program on one machine; their absolute values are rough (a cache level's
bandwidth is a multiple of the peak, not a measurement), which is why measurements reweight them.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from ..caching import Memo, per_content
from ..ir.looptree import LoopNode
from ..ir.program import Program, Statement
from ..ir.rows import fixed_rows, inverse_steps
from ..ir.schedule import Lowered, Microkernel, Row
from ..poly.count import count_points
from ..poly.deps import self_flow
from ..poly.flops import statement_flops, statement_operations
from ..poly.legality import ShortFlow, short_flow
from ..target import Target

LINE = 64  # bytes per cache line
# Rates as fractions of a thread's FMA peak (flops/s).  A micro-kernel reaches most of it; a
# vectorized stream is bound by its loads (one vector load per operand and flop pair); scalar
# code uses one lane; a dependent chain waits the FMA latency (about 4 cycles) per operation.
MICROKERNEL_RATE = 0.85
VECTOR_RATE = 0.30
SCALAR_LANE_RATE = 0.5  # of one lane's share of the peak: scalar code issues about one op a cycle
CHAIN_LATENCY = 4.0
# Cache bandwidths, in bytes per flop of one thread's peak (no cache level's bandwidth is
# measured; these are typical of current x86 cores and only fix the terms' relative scale).
L2_BYTES_PER_FLOP = 1.0
L3_BYTES_PER_FLOP = 0.35
# Where `looper machine` has not measured the target.
DEFAULT_GHZ = 3.0
DEFAULT_DRAM_PER_THREAD = 8e9
DEFAULT_FORK = 60e-6
DEFAULT_REGION = 3e-6
FILL = 0.75  # of a cache's capacity that a footprint can use (conflicts, other data)


@dataclass(frozen=True)
class CostTerms:
    """A schedule's estimated costs on a target, each in seconds."""

    compute: float
    l2: float
    l3: float
    dram: float
    forks: float
    barriers: float
    flops: float = 0.0  # the work those seconds do (for reports)
    threads: float = 1.0  # threads the compute term keeps busy, on average
    vector_share: float = 0.0  # of the operations: in micro-kernels or vector loops
    chain_share: float = 0.0  # of the operations: in dependent chains

    @property
    def memory(self) -> float:
        return self.l2 + self.l3 + self.dram

    @property
    def overhead(self) -> float:
        return self.forks + self.barriers

    @property
    def seconds(self) -> float:
        """The estimate: compute and memory overlap (the longer dominates, a fifth of the
        shorter shows), overheads add."""
        hi, lo = max(self.compute, self.memory), min(self.compute, self.memory)
        return hi + 0.2 * lo + self.overhead

    def basis(self) -> np.ndarray:
        """The terms a fit weights (`costmodel.fit`): compute, memory, overheads."""
        return np.array([self.compute, self.memory, self.overhead], dtype=float)

    def vector(self) -> np.ndarray:
        """Every term as a feature vector (log seconds and shares), for a learned model."""
        secs = [self.compute, self.l2, self.l3, self.dram, self.forks, self.barriers]
        return np.array([math.log10(max(s, 1e-12)) for s in secs]
                        + [self.threads, self.vector_share, self.chain_share], dtype=np.float32)


# -- per program ------------------------------------------------------------------------------------

@dataclass
class _StatementFacts:
    instances: int
    ops: int  # operations per instance, of any type (`statement_operations`)
    flops: int  # of them floating-point (`statement_flops`)
    box: list[tuple[int, int]]  # each iterator's bounds
    accesses: list[tuple[str, np.ndarray, np.ndarray, bool]]  # array, index coeffs [dims x iters], consts, write


@per_content(lambda program: program.content)
def _facts(program: Program) -> dict[str, _StatementFacts]:
    out = {}
    for st in program.statements:
        box = [(int(st.domain.dim_min_val(d).to_python()), int(st.domain.dim_max_val(d).to_python()))
               for d in range(st.depth)] if not st.domain.is_empty() else [(0, -1)] * st.depth
        instances = count_points(st.domain) if not st.domain.is_empty() else 0
        accesses = []
        for a in st.accesses:
            coeffs = np.array([[ix.coeff(it) for it in st.iterators] for ix in a.index], dtype=float) \
                .reshape(len(a.index), st.depth)
            consts = np.array([ix.substitute(program.sizes).const for ix in a.index], dtype=float)
            accesses.append((a.array, coeffs, consts, a.is_write))
        out[st.name] = _StatementFacts(instances, statement_operations(st), statement_flops(st), box, accesses)
    return out


# -- per schedule -------------------------------------------------------------------------------------

@dataclass
class _Loop:
    """One loop of a statement's chain: its row, its trip count, and how a unit step moves the
    statement's iterators."""

    row: int
    extent: float
    step: np.ndarray  # iterator change per unit step


def _chain(st: Statement, L: Lowered, facts: _StatementFacts) -> list[_Loop]:
    """The statement's loops, outermost first.  A row the loops around it fix (`rows.fixed_rows`)
    runs once and moves nothing: counted as a loop of its bounding box, cholesky's diagonal update
    under isl's Pluto schedule (rows i, i, i) ran N^3 times, and the terms put that schedule at
    0.008x where it runs 1.4x."""
    rows = L.rows[st.name]
    loop_rows = [k for k, r in enumerate(rows) if not r.is_constant]
    fixed = fixed_rows(rows, loop_rows)
    steps = inverse_steps(st.depth, rows, loop_rows, fixed)
    extents = _extents(rows, loop_rows, facts.box, fixed)
    return [_Loop(k, e, steps[j]) for j, (k, e) in enumerate(zip(loop_rows, extents))]


def _span(row: Row, box: list[tuple[int, int]]) -> float:
    return sum(abs(c) * (hi - lo) for c, (lo, hi) in zip(row.coeffs, box))


def _extent(rows: tuple[Row, ...], k: int, box: list[tuple[int, int]], outer: list[int]) -> float:
    """Trip count of loop row k (bounding box): a tile loop runs over its direction's span in
    steps of its size; a point loop over at most its innermost enclosing tile (`outer`:
    `_enclosing_tiles`)."""
    r = rows[k]
    if r.extra:  # a wavefront over tile loops: the sum of its terms' counts
        return sum(math.ceil((_span(t, box) + 1) / t.div) for t in (r,) + r.extra)
    span = _span(r, box) + 1
    if outer:
        span = min(span, outer[-1])
    return math.ceil(span / r.div) if r.div > 1 else span


def _enclosing_tiles(rows: tuple[Row, ...], k: int) -> list[int]:
    """Sizes of the larger tiles around row k in its direction (tile rows before it, or a
    wavefront's tile terms): a register tile's loop inside a cache tile, a point loop inside its
    tile.  A wavefront's own term of row k's size is a sibling, not an enclosing tile."""
    r = rows[k]
    return [t.div for q in range(k) for t in (rows[q],) + rows[q].extra
            if t.div > r.div and t.coeffs == r.coeffs]


def _extents(rows: tuple[Row, ...], loop_rows: list[int], box: list[tuple[int, int]],
             fixed: frozenset[int] | None = None) -> list[float]:
    """Each loop's trip count per iteration of the loops around it.  A skewed loop's bounding box
    overstates it (seidel-2d's `2t+i+j` spans 2T + 2N values, while each (t, t+i) runs N), and a
    skewed tiling's tile count by the product of those: 50x for a 16x32x64 time tile of
    seidel-2d, which made every skewed tiling look memory-bound.  So: the values the first k
    loops take together are the volume of the box projected by their rows (a zonotope: the sum,
    over k-subsets of iterators, of |det| of the rows' columns scaled by the box's widths; a tile
    row counts its direction over its size), and loop k runs the ratio of the volumes of k and
    k - 1 loops, at most its bounding-box count.  A loop inside a larger tile of its own
    direction (a point loop in its tile, a register tile's loop in a cache tile) runs at most that
    tile (`_extent`)."""
    widths = np.array([max(1, hi - lo + 1) for lo, hi in box], dtype=float)
    dirs: list[np.ndarray] = []
    volume = 1.0
    out = []
    fixed = fixed_rows(rows, loop_rows) if fixed is None else fixed
    for k in loop_rows:
        r = rows[k]
        if k in fixed:  # runs once per iteration of the loops around it
            out.append(1.0)
            continue
        outer = [] if r.extra else _enclosing_tiles(rows, k)
        bound = _extent(rows, k, box, outer)
        if outer:  # inside a tile of its own direction
            out.append(bound)
            continue
        f = sum((np.array(t.coeffs, dtype=float) / t.div for t in (r,) + r.extra), np.zeros(len(widths)))
        v = _zonotope(dirs + [f], widths)
        if v <= 1e-9 * volume:  # a direction the loops around it already fix
            out.append(bound)
            continue
        ratio = v / volume
        out.append(max(1.0, min(bound, math.ceil(ratio - 1e-9) if r.div > 1 or r.extra else ratio)))
        dirs.append(f)
        volume = v
    return out


def _zonotope(dirs: list[np.ndarray], widths: np.ndarray) -> float:
    """The volume of the box of `widths` projected by the functionals `dirs`."""
    k, d = len(dirs), len(widths)
    if k > d:
        return 0.0
    G = np.array(dirs).reshape(k, d) * widths
    return float(sum(abs(np.linalg.det(G[:, list(S)])) for S in itertools.combinations(range(d), k)))


@dataclass
class _Rates:
    """A thread's rates on the target."""

    peak: float  # flops/s of FMAs, one thread
    lanes: int
    l2: float  # bytes/s, one thread
    l3: float
    dram: float  # bytes/s, all threads together
    fork: float
    region: float
    l1_bytes: int
    l2_bytes: int
    l3_bytes: int  # shared


def _rates(target: Target, element: int) -> _Rates:
    lim = target.limits
    lanes = target.lanes(element)
    if lim is not None and lim.peak_double > 0:
        peak = lim.peak(None if element == 8 else "single") * 1e9 / max(1, lim.threads)  # GFLOP/s
    else:
        peak = 4 * lanes * DEFAULT_GHZ * 1e9  # two FMA pipes
    dram = lim.bandwidth * 1e9 if lim is not None and lim.bandwidth else DEFAULT_DRAM_PER_THREAD * target.threads
    fork = lim.fork_seconds if lim is not None and lim.fork_seconds else DEFAULT_FORK
    region = lim.region_seconds if lim is not None and lim.region_seconds else DEFAULT_REGION
    return _Rates(peak, lanes, L2_BYTES_PER_FLOP * peak, L3_BYTES_PER_FLOP * peak, dram, fork, region,
                  target.cache_bytes(1), target.cache_bytes(2), target.cache_bytes(3))


@dataclass
class ProgramFacts:
    """What the terms need of a program whatever its schedule: each statement's counts and
    accesses, and which loops carry short flow dependences (by the statement's rows).  One
    `Estimates` keeps its own, so scoring a program's candidates never recounts them; the tables
    by rows are `caching.Memo`s, which step aside while caches are disabled."""

    program: Program
    statements: dict[str, _StatementFacts] = field(init=False)
    short_flows: Memo = field(default_factory=Memo)  # (statement, its rows, loop, lanes) -> ShortFlow
    # a candidate changes a few statements' rows; the loops of the others, and the traffic of
    # the nests they alone make up, are those of its parent (a third of the terms' time, recounted)
    chains: Memo = field(default_factory=Memo)  # (statement, its rows) -> its loops
    traffic: Memo = field(default_factory=Memo)  # (nest's statements and rows, capacity) -> bytes
    flows: Memo = field(default_factory=Memo)  # statement -> its flow dependences on itself

    def __post_init__(self):
        self.statements = _facts(self.program)


def estimate(lowered: Lowered, target: Target, known: ProgramFacts | None = None) -> CostTerms:
    """The cost terms of `lowered` on `target` (see the module docstring); `known`: the program's
    facts, when the caller keeps them (`Estimates`)."""
    program = lowered.program
    if known is None or (known.program is not program and known.program.content != program.content):
        known = ProgramFacts(program)
    facts = known.statements
    element = max((a.dtype.nbytes for a in program.arrays.values()), default=8)
    rates = _rates(target, element)
    chains = {}
    for st in program.statements:
        chains[st.name] = known.chains.lookup((st.name, lowered.rows[st.name]),
                                              lambda: _chain(st, lowered, facts[st.name]))
    comp = _Compute(lowered, target, rates, facts, chains, known)
    compute = sum(comp.seconds(st) for st in program.statements)
    mem = _Memory(lowered, rates, facts, chains, program)
    l2 = l3 = dram = 0.0
    for root in lowered.tree.roots:
        if isinstance(root, LoopNode):
            par = comp.node_threads(root)
            # a nest's traffic is a function of its statements' rows alone (its loops and chains)
            nest = tuple((s, lowered.rows[s]) for s in sorted(root.statements))
            t1, t2, t3 = (known.traffic.lookup((nest, cap), lambda: mem.traffic(root, cap))
                          for cap in mem.capacities(par))
            l2 += t1 / (rates.l2 * par)
            l3 += t2 / (rates.l3 * par)
            dram += t3 / rates.dram
    forks, barriers = _overheads(lowered, chains, rates)
    flops = sum(facts[s.name].instances * facts[s.name].flops for s in program.statements)
    total = max(1.0, sum(comp.ops.values()))
    return CostTerms(compute, l2, l3, dram, forks, barriers, flops, comp.busy / total,
                     comp.vector / total, comp.chained / total)


class _Compute:
    """The compute term, statement by statement."""

    def __init__(self, L: Lowered, target: Target, rates: _Rates, facts, chains, known: ProgramFacts):
        self.L, self.target, self.rates, self.facts, self.chains = L, target, rates, facts, chains
        self.known = known
        self.ops: dict[str, float] = {}
        self.busy = self.vector = self.chained = 0.0

    def threads_of(self, st: str) -> tuple[float, float]:
        """(threads busy, imbalance factor) of the statement's outermost parallel loop."""
        for loop in self.chains[st]:
            if (st, loop.row) in self.L.parallel:
                p = self.target.threads
                e = max(1.0, loop.extent)
                share = math.ceil(e / p) / (e / p) if e >= 1 else 1.0
                return min(float(p), e), share
        return 1.0, 1.0

    def node_threads(self, node: LoopNode) -> float:
        return max(self.threads_of(s)[0] for s in node.statements)

    def seconds(self, st: Statement) -> float:
        f = self.facts[st.name]
        ops = float(f.instances * f.ops)
        self.ops[st.name] = ops
        if not ops or not f.instances:
            return 0.0
        rate, kind = self._rate(st)
        threads, imbalance = self.threads_of(st.name)
        self.busy += ops * threads
        self.vector += ops if kind == "vector" else 0.0
        self.chained += ops if kind == "chain" else 0.0
        return ops / rate / threads * imbalance

    def _rate(self, st: Statement) -> tuple[float, str]:
        r = self.rates
        mk = next((m for m in self.L.microkernels if m.stmt == st.name), None)
        if mk is not None:
            return r.peak * MICROKERNEL_RATE * _microkernel_efficiency(mk), "vector"
        chain = self.chains[st.name]
        if not chain:
            return r.peak / r.lanes * SCALAR_LANE_RATE, "scalar"
        inner = chain[-1]
        strides = [_stride(coeffs, inner.step) for _, coeffs, _, _ in self.facts[st.name].accesses]
        write_stride = strides[0]
        vectorized = (st.name, inner.row) in self.L.vector
        flow = ShortFlow.NONE if vectorized else self._short_flow(st, inner.row)
        if not vectorized and ((write_stride == 0 and st.body.op != "=") or flow is ShortFlow.RECURRENCE):
            return r.peak / r.lanes / 2 / CHAIN_LATENCY, "chain"  # one dependent op per latency
        if vectorized or (flow is ShortFlow.NONE and all(abs(s) <= 1 for s in strides)):
            factor = 1.0 + min(3.0, math.log2(max(1.0, self.L.unroll_factor(st.name, inner.row))) / 4)
            return r.peak * VECTOR_RATE * min(factor, 1.3), "vector"
        return r.peak / r.lanes * SCALAR_LANE_RATE, "scalar"

    def _short_flow(self, st: Statement, row: int) -> ShortFlow:
        """What flow of `st` on itself the loop at `row` carries within a vector's length
        (`short_flow`, cached by the statement's rows: most candidates share them)."""
        rows, known = self.L.rows[st.name], self.known

        def answer() -> ShortFlow:
            flow = known.flows.lookup(st.name, lambda: self_flow(known.program, st.name))
            return short_flow(flow, self.L, st.name, row, self.rates.lanes)
        return known.short_flows.lookup((st.name, rows, row, self.rates.lanes), answer)


def _microkernel_efficiency(mk: Microkernel) -> float:
    """A register tile's rate against the peak: enough independent accumulators to cover the FMA
    latency on two pipes (about 8-10), and few loads per FMA (MR broadcasts and NR/lanes vector
    loads feed MR x NR/lanes FMAs each step of k)."""
    vectors = max(1, mk.nr // max(1, mk.lanes))
    acc = mk.mr * vectors
    loads = mk.mr + vectors
    return min(1.0, acc / 10.0) * min(1.0, 2.0 * acc / (2.0 * loads + acc))


def _stride(coeffs: np.ndarray, step: np.ndarray) -> float:
    """How far (in elements of the last dimension, row-major: rows count as far) an access moves
    per unit step of a loop: 0 stays put, 1 walks contiguously, more jumps."""
    if coeffs.size == 0:
        return 0.0
    moves = coeffs @ step
    if np.abs(moves[:-1]).max(initial=0.0) <= 1e-8:  # np.allclose(moves[:-1], 0), without its cost
        return float(abs(moves[-1]))
    return 1e6  # moves to another row (or plane)


# A reference: an array and how the access moves along each loop of its statement's chain (the
# loops it does not move along left out).  Accesses with the same key are one uniformly
# generated set (A[i][j] and A[i][j-1], or a producer's A[i][j] and a fused consumer's): they
# share cache lines and are counted once.  Different keys of one array are different data.
Reference = tuple[str, tuple[tuple[int, tuple[float, ...]], ...]]


class _Memory:
    """Cache traffic by footprints (see the module docstring), per reference: an access the loop
    does not move stays in cache while one it moves comes again each iteration (cholesky's
    `A[i][k]` along j, beside `A[j][k]`; counted per array, both came again)."""

    def __init__(self, L: Lowered, rates: _Rates, facts, chains, program: Program):
        self.L, self.rates, self.facts, self.chains, self.program = L, rates, facts, chains, program
        self.memo: dict = {}
        self.refs: dict[str, list[Reference]] = {}

    def capacities(self, threads: float) -> tuple[float, float, float]:
        r = self.rates
        return FILL * r.l1_bytes, FILL * r.l2_bytes, FILL * r.l3_bytes / max(1.0, threads)

    def references(self, s: str) -> list[Reference]:
        """The reference of each access of statement `s`."""
        if s not in self.refs:
            out = []
            for array, coeffs, _, _ in self.facts[s].accesses:
                moves = []
                for l in self.chains[s]:
                    m = coeffs @ l.step
                    if np.abs(m).max(initial=0.0) > 1e-8:
                        moves.append((l.row, tuple(np.round(m, 6).tolist())))
                out.append((array, tuple(moves)))
            self.refs[s] = out
        return self.refs[s]

    def footprint(self, node: LoopNode) -> dict[Reference, float]:
        """Per reference, the bytes of cache lines one execution of `node` touches (all its
        iterations); an array's references together at most the whole array."""
        key = ("fp", node.key())
        if key in self.memo:
            return self.memo[key]
        ranges: dict[Reference, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for s in node.statements:
            inside = [l for l in self.chains[s] if l.row >= node.row]
            for ref, (_, coeffs, consts, _) in zip(self.references(s), self.facts[s].accesses):
                span = np.ones(coeffs.shape[0])
                for l in inside:
                    span = span + np.abs(coeffs @ l.step) * max(0.0, l.extent - 1)
                lo, hi = consts, consts
                if ref in ranges:
                    span0, lo0, hi0 = ranges[ref]
                    span, lo, hi = np.maximum(span, span0), np.minimum(lo, lo0), np.maximum(hi, hi0)
                ranges[ref] = (span, lo, hi)
        out = {ref: self._lines(ref[0], span + (hi - lo)) * LINE for ref, (span, lo, hi) in ranges.items()}
        per_array: dict[str, float] = {}
        for ref, b in out.items():
            per_array[ref[0]] = per_array.get(ref[0], 0.0) + b
        for array, total in per_array.items():
            whole = self._lines(array, np.array(self.program.arrays[array].extent, dtype=float)) * LINE
            if total > whole > 0:
                for ref in out:
                    if ref[0] == array:
                        out[ref] *= whole / total
        self.memo[key] = out
        return out

    def _lines(self, array: str, span: np.ndarray) -> float:
        arr = self.program.arrays[array]
        if not arr.rank:
            return 0.0  # a scalar lives in a register
        ext = np.minimum(span, np.array(arr.extent, dtype=float))
        per_line = LINE / arr.dtype.nbytes
        return float(np.prod(ext[:-1]) * math.ceil(ext[-1] / per_line))

    def traffic(self, node: LoopNode, capacity: float) -> float:
        """Bytes `node` brings into a cache of `capacity` over one execution."""
        return sum(self._traffic(node, capacity).values())

    def _traffic(self, node: LoopNode, capacity: float) -> dict[Reference, float]:
        """Per reference, the bytes `node` brings into a cache of `capacity` over one execution.
        When its footprint does not fit, each iteration brings its children's traffic again,
        except for the references it does not move: those stay (if they fit) and come once."""
        key = ("t", node.key(), capacity)
        if key in self.memo:
            return self.memo[key]
        fp = self.footprint(node)
        if sum(fp.values()) <= capacity:
            out = dict(fp)
        else:
            extent = max((self._extent(s, node.row) for s in node.statements), default=1.0)
            per: dict[Reference, float] = {}
            for child in node.children:
                part = self._traffic(child, capacity) if isinstance(child, LoopNode) \
                    else self._statement_bytes(child, node.row)
                for ref, b in part.items():
                    per[ref] = per.get(ref, 0.0) + b
            kept = {ref: b for ref, b in per.items() if all(row != node.row for row, _ in ref[1])}
            if sum(kept.values()) > capacity:
                kept = {}
            out = {ref: (b if ref in kept else extent * b) for ref, b in per.items()}
        self.memo[key] = out
        return out

    def _extent(self, s: str, row: int) -> float:
        return next((l.extent for l in self.chains[s] if l.row == row), 1.0)

    def _statement_bytes(self, s: str, row: int) -> dict[Reference, float]:
        """Bytes one execution of statement `s` brings in when the loop at `row` around it walks
        out of cache: nothing for what stays put, an element for a contiguous walk, a line for a jump."""
        step = next((l.step for l in self.chains[s] if l.row == row), None)
        out: dict[Reference, float] = {}
        for ref, (array, coeffs, _, _) in zip(self.references(s), self.facts[s].accesses):
            arr = self.program.arrays[array]
            if not arr.rank:
                continue
            stride = _stride(coeffs, step) if step is not None else 1e6
            moved = 0.0 if stride == 0 else (arr.dtype.nbytes * stride if stride * arr.dtype.nbytes < LINE else LINE)
            out[ref] = max(out.get(ref, 0.0), moved)
        return out


def _overheads(L: Lowered, chains: dict[str, list[_Loop]], rates: _Rates) -> tuple[float, float]:
    """Forks (the first team and every later region) and barriers: a parallel loop starts a region
    each time it is entered, unless one region holds them all (`Lowered.region`: one fork, a
    barrier per entry)."""
    entries = 0.0
    seen = set()
    for loop in L.tree.loops():
        marked = [s for s in loop.statements if (s, loop.row) in L.parallel]
        if not marked or loop.key() in seen:
            continue
        seen.add(loop.key())
        s = marked[0]
        outer = [l.extent for l in chains[s] if l.row < loop.row]
        entries += math.prod(outer) if outer else 1.0
        # loops nested in a parallel loop are not counted again
        seen |= {inner.key() for inner in loop.walk()}
    if not entries:
        return 0.0, 0.0
    if L.region:
        return rates.fork, entries * rates.region
    return rates.fork + (entries - 1) * rates.region, 0.0


def speedup(lowered: Lowered, original: Lowered, target: Target) -> float:
    """The estimated speedup of `lowered` over `original`."""
    return estimate(original, target).seconds / max(1e-12, estimate(lowered, target).seconds)


@dataclass
class Estimates:
    """Terms of one program's schedules, cached by the schedule's identity."""

    target: Target
    cache: dict = field(default_factory=dict)
    # by content: every candidate that rewrites the program builds its own equal copy of it
    known: dict = field(default_factory=dict)

    def of(self, lowered: Lowered) -> CostTerms:
        key = lowered.identity
        if key not in self.cache:
            content = lowered.program.content
            if content not in self.known:
                self.known[content] = ProgramFacts(lowered.program)
            self.cache[key] = estimate(lowered, self.target, self.known[content])
        return self.cache[key]
