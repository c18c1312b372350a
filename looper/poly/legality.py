"""Legality of schedules against dependences, with isl.

A schedule is legal when every dependence source is scheduled strictly before its sink.  A loop
(schedule row k shared by a set of statements) is parallel when no dependence between those
statements is carried at row k; a band of rows is permutable (tilable) when no dependence left
unsatisfied by the rows before it goes backwards in any row of the band.  Dependences through a
kernel-local scalar do not stop a loop from being parallel when the loop can privatize it.
"""
from __future__ import annotations

import enum

import islpy as isl

from ..caching import memoized
from ..ir.looptree import IllFormed
from ..ir.schedule import Lowered, original
from .deps import Dependences, compute_dependences
from .relations import maps_of
from .privatize import ScalarFlow


def _names(deps: isl.UnionMap) -> set[str]:
    """The statements the dependences join (sources and sinks)."""
    names: set[str] = set()
    for m in maps_of(deps):
        names.add(m.get_tuple_name(isl.dim_type.in_))
        names.add(m.get_tuple_name(isl.dim_type.out))
    return names


def _schedule_pairs(deps: isl.UnionMap, lowered: Lowered) -> isl.Map | None:
    """Dependences as pairs of schedule vectors ([source time] -> [sink time]); None if no deps."""
    if deps.is_empty():
        return None
    sched = lowered.schedule_of(sorted(_names(deps)))
    pairs = deps.apply_domain(sched).apply_range(sched)
    maps = maps_of(pairs)
    out = maps[0]
    for m in maps[1:]:
        out = out.union(m)
    return out


@memoized(maxsize=1024)
def _time_pairs(n: int, cons: str) -> isl.Map:
    """{ [x0..x(n-1)] -> [y0..y(n-1)] : cons }: pairs of schedule points (source x, sink y).
    Parsed once per (n, cons): a search asks for the same few thousands of times (a third of
    its legality checks' time went to parsing them)."""
    xs = ", ".join(f"x{j}" for j in range(n))
    ys = ", ".join(f"y{j}" for j in range(n))
    return isl.Map(f"{{ [{xs}] -> [{ys}] : {cons} }}")


@memoized(maxsize=64)
def _lex_lt(n: int) -> isl.Map:
    """{ [x0..x(n-1)] -> [y0..y(n-1)] : x lexicographically before y } (built once per n)."""
    return isl.Map.lex_lt(isl.Space.set_alloc(isl.DEFAULT_CONTEXT, 0, n))


def _equal_prefix(n: int, k: int) -> isl.Map:
    """{ [x0..x(n-1)] -> [y0..y(n-1)] : x_j = y_j for j < k }"""
    return _time_pairs(n, " and ".join(f"x{j} = y{j}" for j in range(k)) or "true")


def _deltas_at(pairs: isl.Map, n: int, k: int) -> isl.Set:
    """Distance vectors of the dependences not yet satisfied by rows [0, k)."""
    return pairs.intersect(_equal_prefix(n, k)).deltas()


def _carried_at(pairs: isl.Map, n: int, row: int) -> bool:
    """Some dependence not satisfied before `row` is satisfied (carried) at it."""
    return _some(_deltas_at(pairs, n, row), n, f"d{row} != 0")


def _some(deltas: isl.Set, n: int, cond: str) -> bool:
    return not deltas.intersect(_distances(n, cond)).is_empty()


@memoized(maxsize=1024)
def _distances(n: int, cond: str) -> isl.Set:
    """{ [d0..d(n-1)] : cond }: the distance vectors meeting `cond` (parsed once, as above)."""
    names = ", ".join(f"d{j}" for j in range(n))
    return isl.Set(f"{{ [{names}] : {cond} }}")


def respects(deps: Dependences | isl.UnionMap, lowered: Lowered) -> bool:
    """Every dependence goes forward in lexicographic schedule order."""
    rel = deps.all if isinstance(deps, Dependences) else deps
    pairs = _schedule_pairs(rel, lowered)
    if pairs is None:
        return True
    n = lowered.n_rows
    return pairs.is_subset(_lex_lt(n))


def violated(deps: Dependences | dict[str, isl.UnionMap], lowered: Lowered, limit: int = 3) -> list[str]:
    """Human-readable list of (at most `limit`) dependence kinds and statement pairs the schedule
    breaks; `deps` may be the per-kind relations a step can affect (`Dependences.touching`)."""
    out = []
    n = lowered.n_rows
    kinds = deps.kinds() if isinstance(deps, Dependences) else deps
    for kind, rel in kinds.items():
        if len(out) >= limit:
            break
        if respects(rel, lowered):
            continue
        for m in maps_of(rel):
            if len(out) >= limit:
                break
            pairs = _schedule_pairs(isl.UnionMap.from_map(m), lowered)
            if pairs is None:
                continue
            if not pairs.is_subset(_lex_lt(n)):
                src = m.get_tuple_name(isl.dim_type.in_)
                dst = m.get_tuple_name(isl.dim_type.out)
                out.append(f"{kind} dependence {src} -> {dst}")
    return out


def is_parallel(deps: Dependences, lowered: Lowered, row: int, statements: set[str]) -> bool:
    """No dependence among `statements` (the statements sharing this loop) is carried at `row`,
    except through scalars the loop privatizes.  A function of those statements' rows up to `row`
    alone (the dependences among them, the scalar flows inside them, compared on the rows before
    it and at it), answered once per such rows: the packs, register tiles and parallel blocks ask
    it of every distribution of a schedule, and a distribution inside a loop changes no row of it."""
    key = ("parallel", row, tuple((s, lowered.rows[s][:row + 1]) for s in sorted(statements)))
    return deps.answers.lookup(key, lambda: _is_parallel(deps, lowered, row, statements))


def _is_parallel(deps: Dependences, lowered: Lowered, row: int, statements: set[str]) -> bool:
    n = lowered.n_rows
    pairs = _schedule_pairs(deps.restricted_to(statements, "shared"), lowered)
    if pairs is not None and _carried_at(pairs, n, row):
        return False
    private = None
    for name, flow in deps.scalars.items():
        if not flow.written_in(statements):
            continue
        pairs = _schedule_pairs(deps.restricted_to(statements, f"scalar:{name}"), lowered)
        if pairs is None or not _carried_at(pairs, n, row):
            continue
        if private is None:
            private = privatizable(deps.scalars, lowered, row, statements)
        if name not in private:
            return False
    return True


def parallel_loops_kept(deps: Dependences, lowered: Lowered, statements) -> bool:
    """Every loop of `lowered` marked parallel that runs some of `statements` still carries no
    dependence: the obligation of a step that moves the loops around parallel ones (tiling)."""
    mine = set(statements)
    return all(is_parallel(deps, lowered, loop.row, set(loop.statements)) for loop in lowered.tree.loops()
               if loop.statements & mine and any((s, loop.row) in lowered.parallel for s in loop.statements))


def privatizable(scalars: dict[str, ScalarFlow], lowered: Lowered, row: int, statements) -> set[str]:
    """The scalars that the loop at schedule `row` over `statements` may privatize: written in
    the loop, every value read from them in the loop written in the same iteration (of this loop
    and of every loop around it), and none read after the loop (`privatize.py`)."""
    stmts = frozenset(statements)
    out: set[str] = set()
    for name, flow in scalars.items():
        if not flow.written_in(stmts):
            continue
        inner = flow.inside(stmts)
        if inner is None:
            continue
        pairs = _schedule_pairs(inner, lowered)
        if pairs is None or pairs.is_subset(_equal_prefix(lowered.n_rows, row + 1)):
            out.add(name)
    return out


def innermost_is_parallel(deps: isl.UnionMap, partial: isl.UnionMap) -> bool:
    """Whether the last dimension of a partial schedule (statement instance -> [t0..tk]) carries
    no dependence: pairs equal on t0..t(k-1) are equal on tk.  Used while isl builds an AST from a
    schedule tree, where a loop's dimension is the last one of the build's schedule."""
    flat = isl.UnionMap.empty(partial.get_space())
    for m in maps_of(partial):  # isl nests the range of tiled bands ([[] -> [tiles]] -> [points])
        flat = flat.union(isl.UnionMap.from_map(m.flatten_range()))
    pairs = deps.apply_domain(flat).apply_range(flat)
    for m in maps_of(pairs):
        n = m.dim(isl.dim_type.out)
        if n == 0:
            continue
        if _carried_at(m, n, n - 1):
            return False
    return True


def same_iteration_dependence(deps: Dependences, lowered: Lowered, sources: set[str], sinks: set[str],
                              depth: int) -> bool:
    """Whether some dependence from an instance of `sources` to one of `sinks` stays within one
    iteration of the loops at schedule dimensions below `depth` (equal times there): then the
    sinks must wait for the sources there (a barrier between two work-shared loops)."""
    names = sources | sinks
    rel = deps.restricted_to(names)
    pairs = None
    for m in maps_of(rel):
        if m.get_tuple_name(isl.dim_type.in_) in sources and m.get_tuple_name(isl.dim_type.out) in sinks:
            p = _schedule_pairs(isl.UnionMap.from_map(m), lowered)
            if p is not None:
                pairs = p if pairs is None else pairs.union(p)
    if pairs is None:
        return False
    return not pairs.intersect(_equal_prefix(lowered.n_rows, depth)).is_empty()


def carried_rows(deps: Dependences, lowered: Lowered, statements: set[str]) -> set[int]:
    """Rows at which some dependence among `statements` is carried (satisfied)."""
    pairs = _schedule_pairs(deps.restricted_to(statements), lowered)
    if pairs is None:
        return set()
    n = lowered.n_rows
    return {k for k in range(n) if _carried_at(pairs, n, k)}


class ShortFlow(enum.Enum):
    """What a flow dependence of a statement on itself, carried by a loop at a distance shorter
    than a vector, does to that loop (`short_flow`)."""
    NONE = "none"            # no such dependence: the loop vectorizes if its accesses allow
    SPARSE = "sparse"        # from a thinner set: no chain, but no vector either
    RECURRENCE = "recurrence"  # from the whole iteration space: each value waits for one before


def short_flow(flow: isl.UnionMap, lowered: Lowered, statement: str, row: int, shorter_than: int) -> ShortFlow:
    """Whether the loop at `row` carries a flow dependence of `statement` on itself (`flow`:
    `deps.self_flow`) at a distance under `shorter_than` iterations, and from what.  From
    instances that fill the statement's whole iteration space it is a recurrence: each value
    waits for one a few iterations back, which no vectorizer splits into lanes (gcc needs a
    distance of at least its vector length), and the loop runs at the latency of a dependent
    chain (seidel-2d's `A[i][j-1]`).  From a
    thinner set it is sparse: floyd-warshall's j loop reads the `path[i][k]` its iteration j = k
    wrote, one source per row, so nothing waits, but gcc versions the loop on an alias check that
    fails on every row and runs it scalar (82 ms at MEDIUM, where vector speed was estimated at 7)."""
    pairs = _schedule_pairs(flow, lowered)
    if pairs is None:
        return ShortFlow.NONE
    n = lowered.n_rows
    near = _time_pairs(n, f"0 < y{row} - x{row} < {shorter_than}")
    short = pairs.intersect(_equal_prefix(n, row)).intersect(near)
    if short.is_empty():
        return ShortFlow.NONE
    depth = lowered.program.statement(statement).depth
    return ShortFlow.RECURRENCE if _dimension(short.domain()) >= depth else ShortFlow.SPARSE


def _dimension(s: isl.Set) -> int:
    """The dimension of a set's affine hull (its largest piece's; existentials dropped, which can
    only widen it)."""
    out = -1
    for piece in s.remove_divs().get_basic_sets():
        hull = piece.affine_hull()
        eqs = sum(1 for c in hull.get_constraints() if c.is_equality())
        out = max(out, piece.dim(isl.dim_type.set) - eqs)
    return out


def is_permutable(deps: Dependences, lowered: Lowered, rows: list[int], statements: set[str]) -> bool:
    """The band `rows` (outermost first) can be freely interchanged, hence tiled."""
    pairs = _schedule_pairs(deps.restricted_to(statements), lowered)
    if pairs is None:
        return True
    n = lowered.n_rows
    d = _deltas_at(pairs, n, min(rows))
    return not any(_some(d, n, f"d{k} < 0") for k in rows)


def tiles_alone(deps: Dependences, lowered: Lowered, rows: tuple[int, ...], statement: str) -> bool:
    """Whether every rectangular tiling of `statement`'s band `rows`, its tile and point loops in
    any order and the other statements' rows padded alike where the tile loops go, keeps every
    dependence: the band is permutable for the statement's own dependences (each distance in it
    is nonnegative, so every tile and point loop keeps it), and each dependence with another
    statement is carried by the rows before the band, which the tiling leaves alone.  Sufficient,
    not necessary (a caller falls back to `order_violation`), and independent of the tile sizes:
    a register tile level asks it of dozens of shapes per statement and schedule."""
    at = min(rows)
    crossing = deps.crossing({statement})
    partners = deps.answers.lookup(("partners", statement), lambda: sorted(_names(crossing) - {statement}))
    key = ("tiles alone", rows, lowered.rows[statement], tuple((s, lowered.rows[s][:at]) for s in partners))

    def decide() -> bool:
        if not is_permutable(deps, lowered, list(rows), {statement}):
            return False
        pairs = _schedule_pairs(crossing, lowered)
        return pairs is None or _deltas_at(pairs, lowered.n_rows, at).is_empty()
    return deps.answers.lookup(key, decide)


def min_distance(deps: isl.UnionMap, lowered: Lowered, row: int) -> int | None:
    """Smallest distance at `row` over dependences not satisfied before it (None: unbounded)."""
    pairs = _schedule_pairs(deps, lowered)
    if pairs is None:
        return 0
    d = _deltas_at(pairs, lowered.n_rows, row)
    if d.is_empty():
        return 0
    try:
        v = d.dim_min_val(row)
    except isl.Error:
        return None
    if not v.is_int():
        return None
    return int(v.to_python())


def order_violation(deps: Dependences, before: Lowered, after: Lowered, explain: bool = False,
                    moved: frozenset[str] | None = None) -> str | None:
    """Why `after` breaks a dependence that `before` kept (None: it keeps them all).  The legality
    obligation of every step that moves statement instances in time (fusion, affine).

    Only dependences with an end among the statements whose schedule changed can break: the
    others keep their relative order (deriche, 47 statements: 36 -> a few ms a check).  A step
    that gives every other statement the same constant rows at the same places (a register tile
    pads them) keeps their relative order too, and names the statements it did move in `moved`:
    then only dependences touching those are checked (3mm MEDIUM's model search: 1,540 register
    tiles, 7.6 s of checks over all its dependences).  Each (source, sink) pair of statements is
    answered once per their two rows: a fusion or a distribution moves a few statements, and
    most pairs it touches have the rows of an earlier candidate's (adi's and deriche's model
    searches: 2-3 s less each).  With `explain`, up to three broken
    dependences are named; finding them costs about as much as the check itself, so the search
    asks only under --explain."""
    changed = frozenset(s for s in after.rows if after.rows[s] != before.rows[s])
    if moved is not None:
        changed &= moved
    if not changed:
        return None
    if all(_pair_respects(deps, src, dst, m, after) for (src, dst), m in deps.pairs.items()
           if src in changed or dst in changed):
        return None
    if not explain:
        return "breaks a dependence"
    broken = violated(deps.touching(changed), after)
    return "breaks " + (", ".join(broken) if broken else "a dependence")


def _pair_respects(deps: Dependences, src: str, dst: str, m: isl.Map, after: Lowered) -> bool:
    """The dependences from `src` to `dst` go forward under `after`: a function of the two
    statements' rows alone, answered once per such rows."""
    key = ("pair", src, dst, after.rows[src], after.rows[dst])

    def answer() -> bool:
        pairs = m.apply_domain(after.statement_map(src)).apply_range(after.statement_map(dst))
        return pairs.is_subset(_lex_lt(after.n_rows))
    return deps.answers.lookup(key, answer)


def check_step(deps: Dependences, before: Lowered, step, after: Lowered, explain: bool = True) -> str | None:
    """Why applying `step` to `before` (giving `after`) is illegal, None when it is legal: the
    rows must form a loop tree, then the step's own obligations (`Transform.check`) must hold.
    Every candidate passes here before any evaluator sees it."""
    try:
        after.tree
    except IllFormed as e:
        return f"ill-formed loop structure ({e})"
    return step.check(deps.of(before.program), before, after, explain)


def check_schedule(deps: Dependences, schedule) -> str | None:
    """Why a whole transformation sequence is illegal for its program (None: every step is
    legal).  Replays the steps as the search applied them, e.g. to re-check a sequence found at
    one size on the same program at another size."""
    L = original(schedule.program)
    for step in schedule.steps:
        after = step.apply(L)
        why = check_step(deps, L, step, after)
        if why is not None:
            return f"{step.describe(L)}: {why}"
        L = after
    return None


def replay(schedule, program, deps: Dependences | None = None):
    """`schedule`'s steps on `program` (the same kernel at another size: legality can depend on
    sizes) and why they are illegal there: (the replayed schedule, None) when legal, else
    (the replayed schedule or None when the steps do not even apply, the reason)."""
    try:
        replayed = type(schedule).from_json(program, schedule.to_json())
        if schedule.rewritten:  # the original loops in looper's code stay written there too
            replayed = type(schedule).rewrite(program)
        return replayed, check_schedule(deps if deps is not None else compute_dependences(program), replayed)
    except (ValueError, KeyError, IndexError) as e:
        return None, f"it does not replay there ({e})"
