"""Fusion level: isl's Pluto-style schedule as one candidate (the whole schedule replaced).

looper's other steps move one loop or one group of statements at a time.  Some schedules are
out of their reach in a few steps: lu's `i, j+1, j` for the statement that divides by the
pivot, beside `i, j, k` for the updates (one permutable 3-D band, hence tilable in all three
loops), needs a statement aligned with another's reduction loop.  isl's scheduler (Pluto's
algorithm: bands of permutable loops that minimize dependence distances, on the direct
dependences) finds it directly, and it is the schedule Pluto and Polly start from.  Offered as
a first step, the later levels refine it like any other (interchange, tile, parallelize,
register tiles), and the search measures whether it pays.

The step carries the rows it sets (computed once, at the program's size): replayed at another
size (verification) it sets the same rows and isl checks them there again.  Legal when every
dependence is kept.  isl's scheduler can take minutes (heat-3d): it gets a time budget, and no
candidate when it runs out.
"""
from __future__ import annotations

import multiprocessing
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import ClassVar, Iterator

import islpy as isl

from .. import caching
from ..caching import Memo
from ..interrupts import raise_pending
from ..ir.program import Program
from ..ir.schedule import Lowered, Row, original
from ..poly.deps import Dependences, compute_dependences
from ..poly.legality import order_violation
from .registry import CandidateContext, Encoding, Transform, register

StatementRows = tuple[str, tuple[tuple[tuple[int, ...], int], ...]]  # name, ((coeffs, const), ...)
# isl's scheduler answers 26 of PolyBench's kernels in 0.01-0.2 s (MEDIUM, either variant), deriche's
# and ludcmp's Pluto variant in 0.7 and 0.6 s; the rest take 9 s (adi's outer-parallel variant),
# 17 s, or more than 30 s (heat-3d's, 13 minutes), and no answer a search kept ever came from
# one of those.  Each program a search rewrites (an expansion) asks again: 10 s a time was most of
# the model's search on deriche (30 s of 62).
BUDGET_SECONDS = 2.0


@register
@dataclass(frozen=True)
class IslSchedule(Transform):
    """Every statement's schedule replaced by `rows` (isl's scheduler's answer, 2d+1 form)."""

    rows: tuple[StatementRows, ...]
    variant: str = "pluto"
    kind: ClassVar[str] = "islschedule"
    feature_slot: ClassVar[int] = 14
    level: ClassVar[str] = "fusion"

    def touched(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.rows)

    def apply(self, L: Lowered) -> Lowered:
        width = len(self.rows[0][1])
        rows = {name: tuple(Row(tuple(c), k) for c, k in rs) for name, rs in self.rows}
        for s, r in L.rows.items():
            if s not in rows:  # a statement a later step added cannot be here: this is a first step
                raise ValueError(f"isl's schedule has no row for {s}")
        assert all(len(r) == width for r in rows.values())
        return replace(L, rows=rows, parallel=frozenset(), unroll=(), vector=frozenset(), microkernels=())

    def describe(self, L: Lowered) -> str:
        return f"islschedule({self.variant})"

    def encoding(self) -> Encoding:
        return Encoding(option=VARIANTS.index(self.variant))

    def check(self, deps: Dependences, before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        return order_violation(deps, before, after, explain)

    @classmethod
    def ahead(cls, lowered: Lowered, grown: bool) -> None:
        """Start isl's scheduler where `candidates` will ask for it."""
        if grown and lowered.rows == original(lowered.program).rows:
            start(lowered.program)

    @classmethod
    def abandon(cls) -> None:
        abandon()

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterator["IslSchedule"]:
        """isl's schedule of the program (and, when it differs, the one that prefers an outer
        parallel loop), offered only on the program's own schedule: it replaces every row."""
        if not ctx.grown or ctx.lowered.rows != original(ctx.lowered.program).rows:
            return
        seen = set()
        for variant, rows in zip(VARIANTS, isl_variants(ctx.lowered.program)):
            if rows is not None and rows not in seen and rows != _rows_of(original(ctx.lowered.program)):
                seen.add(rows)
                yield cls(rows, variant)


VARIANTS = ("pluto", "outer-parallel")


def _rows_of(L: Lowered) -> tuple[StatementRows, ...]:
    return tuple((s, tuple((r.coeffs, r.const) for r in rs)) for s, rs in sorted(L.rows.items()))


def isl_rows(program: Program, variant: str = "pluto") -> tuple[StatementRows, ...] | None:
    """isl's schedule for `program` in looper's 2d+1 rows (None: no schedule within the budget,
    or one looper's rows cannot hold: a member with a divisor or several pieces)."""
    return isl_variants(program)[VARIANTS.index(variant)]


def isl_variants(program: Program) -> tuple[tuple[StatementRows, ...] | None, ...]:
    """`isl_rows` of every variant (in `VARIANTS`' order), computed at once.  isl's scheduler
    runs in forked children, one per variant side by side (the search waits on one core while
    the others are idle), killed after `BUDGET_SECONDS`: it has no time limit of its own
    (heat-3d: 13 minutes; an operation limit does not stop it).  A variant that ran out on a
    program is not asked again of its rewrites (`_RAN_OUT`).  Children `start` began earlier
    are collected, not started again."""
    if not caching.enabled():
        return _collect(_start(program))
    return _ANSWERS.lookup(program, lambda: _collect(_STARTED.pop(program, None) or _start(program)))


def start(program: Program) -> None:
    """Start isl's scheduler on `program` in the background, for `isl_variants` to collect:
    the search starts it where a level will ask (`IslSchedule.ahead`), and the scheduler runs on
    another core while this one generates and checks the level's other candidates."""
    if caching.enabled() and program not in _ANSWERS and program not in _STARTED:
        _STARTED[program] = _start(program)


def abandon() -> None:
    """Kill the children `start` began that nobody collected (a search that ended first): none
    may run on while anything is timed."""
    while _STARTED:
        _, running = _STARTED.popitem()
        for child in running.children:
            if child is not None:
                _stop(*child)


@dataclass(frozen=True)
class _Running:
    """isl's scheduler at work on one program: a (child, pipe) per variant (None: not asked)."""

    family: tuple
    children: tuple
    deadline: float


_ANSWERS = Memo(limit=64)  # program -> its variants' rows
isl_variants.cache_clear = _ANSWERS.clear  # type: ignore[attr-defined]  # as `memoized`'s
_STARTED: dict[Program, _Running] = {}


def _start(program: Program) -> _Running:
    mp = multiprocessing.get_context("fork")
    family = _family(program)
    started = []
    for variant in VARIANTS:
        if (family, variant) in _RAN_OUT:
            started.append(None)
            continue
        recv, send = mp.Pipe(duplex=False)
        child = mp.Process(target=_child, args=(program, variant, send), daemon=True)
        child.start()
        raise_pending()  # an interrupt the at-fork callbacks dropped (looper.interrupts)
        send.close()
        started.append((child, recv))
    return _Running(family, tuple(started), time.monotonic() + BUDGET_SECONDS)


def _collect(running: _Running) -> tuple[tuple[StatementRows, ...] | None, ...]:
    out = []
    for variant, child in zip(VARIANTS, running.children):
        if child is None:
            out.append(None)
            continue
        process, recv = child
        try:
            if recv.poll(max(0.0, running.deadline - time.monotonic())):
                out.append(recv.recv())
            else:
                out.append(None)
                _RAN_OUT[(running.family, variant)] = None
                while len(_RAN_OUT) > 256:
                    _RAN_OUT.popitem(last=False)
        except EOFError:  # the child died
            out.append(None)
        finally:
            _stop(process, recv)
    return tuple(out)


def _stop(process, recv) -> None:
    if process.is_alive():
        process.kill()
    process.join()
    recv.close()


# (program family, variant) pairs whose scheduler ran out of its budget.  A program's rewrites
# (expansions: a copy of an array per iteration, fewer dependences, the same statements) pose
# the scheduler the same problem again: deriche's outer-parallel variant ran out on the program
# and on each of the three expansions the search kept, 2 s of waiting each.  Not a memo of
# `caching`'s (it does not step aside when caches are off): what it skips never had an answer.
_RAN_OUT: OrderedDict = OrderedDict()


def _family(program: Program) -> tuple:
    """What a program shares with its rewrites: its name, its kernel as parsed, and its sizes."""
    return program.name, program.kernel_text or program.source, tuple(sorted(program.sizes.items()))


def _child(program: Program, variant: str, send) -> None:
    try:
        send.send(_compute(program, variant))
    except Exception:  # noqa: BLE001 - anything isl refuses is "no candidate"
        send.send(None)
    finally:
        send.close()


def _compute(program: Program, variant: str) -> tuple[StatementRows, ...] | None:
    deps = compute_dependences(program).direct(program)
    ctx = deps.get_ctx()
    ctx.set_schedule_outer_coincidence(1 if variant == "outer-parallel" else 0)
    sc = isl.ScheduleConstraints.on_domain(program.domains()) \
        .set_validity(deps).set_coincidence(deps).set_proximity(deps)
    sched = sc.compute_schedule()
    if sched is None:
        return None
    try:
        paths = _paths(sched.get_root(), {s.name: [] for s in program.statements})
    except _Unsupported:
        return None
    width = max(len(p) for p in paths.values())
    width = max(width, original(program).n_rows)
    if width % 2 == 0:
        width += 1
    out = []
    for st in program.statements:
        p = paths[st.name]
        rows = []
        for k in range(width):
            item = p[k] if k < len(p) else None
            if item is None:
                item = ((0,) * st.depth, 0)
            elif item[0] is None:
                item = ((0,) * st.depth, item[1])
            rows.append(item)
        out.append((st.name, tuple(rows)))
    return tuple(out)


class _Unsupported(Exception):
    pass


def _statements(node: isl.ScheduleNode) -> list[str]:
    """The statements reaching `node` (a filter node: those it lets through)."""
    names: list[str] = []
    if node.get_type() == isl.schedule_node_type.filter:
        dom = node.filter_get_filter().intersect(node.get_domain())
    else:
        dom = node.get_domain()
    dom.foreach_set(lambda s: names.append(s.get_tuple_name()))
    return names


def _paths(node: isl.ScheduleNode, paths: dict[str, list], gone: frozenset[str] = frozenset()) -> dict[str, list]:
    """Each statement's rows along the tree: a band member is a loop row (after the static row
    before it), a sequence or set child's position is the static row after the last loop.  A
    statement whose member is a constant where the others' are not cannot share that loop
    (looper's loops hold a statement in every iteration or in none): it leaves the band there,
    placed before the loop or after it as the sequence below the band orders it (isl checks the
    result like any other schedule); `gone` are the statements that left."""
    t = node.get_type()
    if t in (isl.schedule_node_type.domain, isl.schedule_node_type.filter):
        return _paths(node.child(0), paths, gone) if node.n_children() else paths
    if t == isl.schedule_node_type.leaf:
        return paths
    if t == isl.schedule_node_type.band:
        names = [n for n in _statements(node) if n not in gone]
        rank = _ranks(node.child(0))
        mupa = node.band_get_partial_schedule()
        for m in range(node.band_n_member()):
            upa = mupa.get_at(m)
            members = {name: _member(upa, name) for name in names}
            moving = [n for n in names if any(members[n][0])]
            fixed = [n for n in names if n not in moving]
            if moving and fixed:
                first = min(rank.get(n, 0) for n in moving)
                for n in fixed:
                    _static(paths[n], 0 if rank.get(n, 0) < first else 2)
                for n in moving:
                    _static(paths[n], 1)
                gone = gone | frozenset(fixed)
                names = moving
            for name in names:
                if len(paths[name]) % 2 == 0:  # a loop row follows a static row
                    paths[name].append((None, 0))
                paths[name].append(members[name])
        return _paths(node.child(0), paths, gone)
    if t in (isl.schedule_node_type.sequence, isl.schedule_node_type.set):
        for k in range(node.n_children()):
            child = node.child(k)
            for name in _statements(child):
                if name not in gone:
                    _static(paths[name], k)
            _paths(child, paths, gone)
        return paths
    raise _Unsupported(str(t))


def _ranks(node: isl.ScheduleNode) -> dict[str, int]:
    """Each statement's position in the sequence directly below a band (none: all 0)."""
    if node.get_type() != isl.schedule_node_type.sequence:
        return {}
    return {name: k for k in range(node.n_children()) for name in _statements(node.child(k))}


def _static(path: list, value: int) -> None:
    """Put a position in the static row the path is at: after a loop row, the next row; after
    another position (nested sequences), a degenerate loop row of zeros in between."""
    if len(path) % 2 == 1:
        path.append(None)
    path.append((None, value))


def _member(upa: isl.UnionPwAff, name: str) -> tuple[tuple[int, ...], int]:
    pas = upa.get_pw_aff_list()
    found = [pa for pa in (pas.get_at(k) for k in range(pas.n_pw_aff()))
             if pa.get_space().get_tuple_name(isl.dim_type.in_) == name]
    if len(found) != 1 or found[0].n_piece() != 1:
        raise _Unsupported("a member with several pieces")
    affs = []
    found[0].foreach_piece(lambda _set, aff: affs.append(aff))
    aff = affs[0]
    if not aff.get_denominator_val().is_one():
        raise _Unsupported("a member with a divisor")
    n = aff.dim(isl.dim_type.in_)
    coeffs = tuple(int(aff.get_coefficient_val(isl.dim_type.in_, k).to_python()) for k in range(n))
    return coeffs, int(aff.get_constant_val().to_python())
