"""A stand-in for a long-running program: the same kernel with fewer time steps.

A measuring search runs every candidate.  At EXTRALARGE jacobi-2d runs 9 s under gcc, each
candidate costs a checked warm-up and a timed run, and a search given 6 minutes scored a score of
candidates and answered `parallelize(i,i)`: 0.76x of Pluto, where at LARGE (85 s of search) its
skewed time tile ran 2.3x faster than Pluto's.

A time-step size bounds only the outermost loops and sizes no array the kernel writes and none of
two or more dimensions.  With fewer steps a schedule that keeps time outermost walks the same
arrays through the same caches, only fewer times, so the stand-in ranks such candidates at a
fraction of the cost.  One that moves time inward (a wavefront, a time tile as high as the
whole run) changes its working set with the steps, and the stand-in can misjudge it.  So the
search ranks on the stand-in; the best schedule of each of its best loop structures is replayed
on the program and checked by isl there (legality can depend on sizes), and a measuring search
times them again together at the program's own sizes (`search.confirm`), which has the last word.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import LooperError
from ..ir.program import Guard, Loop, Node, Program
from ..poly.deps import Dependences
from ..poly.legality import replay
from ..runtime.status import Status
from ..transforms.schedule import Schedule
from .beam import Explored, Score, SearchResult
from .hybrid import structure, top_candidates

MIN_STEPS = 100  # a time tile is 16-32 steps high: a stand-in keeps several of them
CARRIED = 8  # loop structures whose best schedule is replayed on the program (answer, confirmation, fallbacks)


@dataclass(frozen=True)
class StandIn:
    """The program with some time-step sizes lowered."""

    program: Program
    steps: dict[str, tuple[int, int]]  # size -> (the program's value, the stand-in's)

    def describe(self) -> str:
        return ", ".join(f"{k}={new} (of {old})" for k, (old, new) in self.steps.items())


def step_sizes(program: Program) -> tuple[str, ...]:
    """The sizes that count time steps: they bound outermost loops of the kernel and no inner
    one, and size no array the kernel writes and none of rank 2 or more."""
    outer: set[str] = set()
    inner: set[str] = set()
    for node in program.kernel:
        _bound_names(node, outer, inner, top=True)
    written = {s.body.target.array for s in program.statements}
    out = []
    for name in program.sizes:
        if name not in outer or name in inner:
            continue
        sized = [a for a in program.arrays.values() if any(name in dict(d.terms) for d in a.shape)]
        if any(a.rank >= 2 or a.name in written for a in sized):
            continue
        out.append(name)
    return tuple(out)


def _bound_names(node: Node, outer: set[str], inner: set[str], top: bool) -> None:
    if isinstance(node, Loop):
        (outer if top else inner).update(node.lower.names() | node.upper.names())
        for child in node.body:
            _bound_names(child, outer, inner, top=False)
    elif isinstance(node, Guard):
        for child in node.then + node.orelse:
            _bound_names(child, outer, inner, top)


def stand_in(program: Program, factor: int) -> StandIn | str:
    """The program with its time steps divided by `factor` (at least `MIN_STEPS` kept), or why
    there is none."""
    if not program.path.endswith(".py"):
        return "a stand-in is made from a Python program's source (this one is C)"
    steps = step_sizes(program)
    if not steps:
        return "no size counts time steps (one that bounds only outermost loops and sizes no written array)"
    fewer = {}
    for name in steps:
        old = program.sizes[name]
        new = max(math.ceil(old / factor), min(old, MIN_STEPS))
        if new < old:
            fewer[name] = (old, new)
    if not fewer:
        return f"its time steps ({', '.join(f'{k}={program.sizes[k]}' for k in steps)}) are already few"
    from ..lang.parse import parse_source
    defines = dict(program.sizes, **{k: new for k, (_, new) in fewer.items()})
    try:
        smaller = parse_source(program.source, program.path, None, defines)  # every size given
    except LooperError as e:
        return f"it does not parse with fewer steps: {e.message}"
    return StandIn(smaller, fewer)


def carry(found: SearchResult, program: Program, deps: Dependences, keep: int = CARRIED) -> SearchResult:
    """The stand-in's search result on `program`: the best schedule of each of its `keep` best
    loop structures (and of the original structure) that is legal there, replayed, with the
    stand-in's scores; the best of them is the answer (the original when none replays).

    One per structure, because a stand-in can misjudge a structure as a whole: EXTRALARGE
    jacobi-2d's wavefront over (t, 2t+i) keeps a row per time step in flight, 250 rows (11 MB,
    in L3) with 125 steps and 2,000 (90 MB) with 1,000.  It ranked 3.9x there and ran 1.2x at
    the program's size; when the confirmation timed its four best, all were that wavefront."""
    visited = {e.schedule.identity: e for e in found.evaluated if e.schedule.steps and e.score and e.score.ok}
    ranked = [visited[s.identity] for s, _ in top_candidates(found, keep, margin=0.0)]
    if found.best.steps and found.best_score.ok:  # the search's own answer first
        ranked.insert(0, Explored(found.best, found.best.describe(), "answer", found.best_score))
    structures: set[str] = set()
    carried: list[Explored] = []
    for e in ranked:
        key = structure(e.schedule)
        if key in structures:
            continue
        replayed, why = replay(e.schedule, program, deps)
        if why is None:
            structures.add(key)
            carried.append(Explored(replayed, e.description, e.level, e.score))
    root = Explored(Schedule(program), "original", "root", Score(1.0, Status.OK, "original"))
    best = carried[0] if carried else root
    return SearchResult(best.schedule, best.score, [root] + carried, found.seconds, found.machinery_seconds,
                        found.levels)
