"""A stand-in for a long-running program: the same kernel with fewer time steps, or smaller.

A measuring search runs every candidate.  At EXTRALARGE jacobi-2d runs 9 s under gcc, each
candidate costs a checked warm-up and a timed run, and a search given 6 minutes scored a score of
candidates and answered `parallelize(i,i)`: 0.76x of Pluto, where at LARGE (85 s of search) its
skewed time tile ran 2.3x faster than Pluto's.  symm's 6 minutes went to fission and blocks: 5%
of the FMA peak, where LARGE's search reached 82%.

Two stand-ins (`Proxy`), which may be combined:

- **Fewer time steps** (`steps`).  A time-step size bounds only the outermost loops and sizes no
  array the kernel writes and none of two or more dimensions.  With fewer steps a schedule that
  keeps time outermost walks the same arrays through the same caches, only fewer times.
- **Smaller sizes** (`sizes`): every size divided.  A cache-blocked, parallel, vectorized loop nest
  keeps its character when its arrays shrink by a constant factor as long as they still exceed the
  caches the blocks are sized for: EXTRALARGE gemm (2000x2300x2600) halved is LARGE's shape.

Either stand-in misjudges some schedules.  One that moves time inward (a wavefront, a time tile as
high as the whole run) changes its working set with the steps; a tile as wide as a stand-in's
array, or a loop order that only pays once the arrays outgrow a cache level, changes character
with the sizes.  So the search ranks on the stand-in; the best schedule of each of its best loop
structures is replayed on the program and checked by isl there (legality can depend on sizes), and
a measuring search times them again together at the program's own sizes (`search.confirm`), which
has the last word.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from ..errors import LooperError
from ..ir.program import Guard, Loop, Node, Program
from ..lang.resize import Origin
from ..poly.deps import Dependences
from ..poly.legality import replay
from ..runtime.status import Status
from ..transforms.schedule import Schedule
from .scoring import Explored, Score, SearchResult
from .hybrid import structure, top_candidates

MIN_STEPS = 100  # a time tile is 16-32 steps high: a stand-in keeps several of them
MIN_SIZE = 64  # a smaller stand-in keeps room for a cache block and a register tile
# The hybrid's own stand-in (`automatic`): for a program whose original runs this long or longer,
# sizes divided by the least factor that brings its run near STAND_IN_SECONDS, at most MAX_FACTOR
LONG_SECONDS = 1.0
STAND_IN_SECONDS = 0.25
MAX_FACTOR = 4
CARRIED = 8  # loop structures whose best schedule is replayed on the program (answer, confirmation, fallbacks)
# A stand-in's rounds rank noise when its candidates run for a few starts of a thread team:
# 2mm LARGE's half-size candidates ran 6-40 ms against a 5 ms first parallel region, and one
# schedule's three runs spread 6.4-18.5 ms
STAND_IN_NOISE = 10
# A stand-in is of another memory regime when the program's original runs this many times longer
# than their statement instances alone explain: nussinov LARGE ran 3.1 s, its stand-in (N=834 of
# 2500) 60 ms, 52x the time for 27x the work; its 25 MB table outgrows a thread's share of L3 where
# the stand-in's 2.8 MB does not, and the stand-in's candidates all ran 40-60 ms, too close to rank
REGIME = 1.5
# ...and the rounds then run on the program when they would take about this long there or less
PROGRAM_ROUNDS_SECONDS = 120.0


@dataclass(frozen=True)
class Proxy:
    """What a stand-in lowers: the time steps divided by `steps`, every size by `sizes` (None: not)."""

    steps: int | None = None
    sizes: int | None = None

    @staticmethod
    def of(steps: int | None = None, sizes: int | None = None) -> "Proxy | None":
        """The proxy of the options `--step-proxy` and `--size-proxy` (None when neither asks for one)."""
        proxy = Proxy(steps if steps and steps > 1 else None, sizes if sizes and sizes > 1 else None)
        return proxy if proxy.steps or proxy.sizes else None

    def describe(self) -> str:
        return " and ".join(([f"time steps / {self.steps}"] if self.steps else [])
                            + ([f"sizes / {self.sizes}"] if self.sizes else []))


def automatic(program: Program, original_seconds: float | None) -> Proxy | None:
    """The stand-in the default search measures its rounds on, for a long program (None: not
    long).  floyd-warshall LARGE's original runs seconds, and a budget of two dozen candidates,
    each checked and timed in fresh processes, took 554 s of its search; its sizes halved run an
    eighth as long.  The work of a nest of depth d shrinks as the factor to the d, so the factor
    is the least that brings the run near `STAND_IN_SECONDS`, at most `MAX_FACTOR` (LARGE's
    arrays, a quarter as wide, still outgrow L2), and the finalists are timed again at the
    program's own sizes."""
    if original_seconds is None or original_seconds < LONG_SECONDS:
        return None
    depth = max(program.max_depth, 1)
    factor = next((f for f in range(2, MAX_FACTOR + 1) if original_seconds / f ** depth <= STAND_IN_SECONDS),
                  MAX_FACTOR)
    return Proxy(sizes=factor)


@dataclass(frozen=True)
class StandIn:
    """The program with some sizes lowered."""

    program: Program
    lowered: dict[str, tuple[int, int]]  # size -> (the program's value, the stand-in's)

    def describe(self) -> str:
        return ", ".join(f"{k}={new} (of {old})" for k, (old, new) in self.lowered.items())


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


def lowered_sizes(program: Program, proxy: Proxy, steps: tuple[str, ...] | None = None,
                  sizes: Mapping[str, int] | None = None) -> dict[str, int]:
    """The stand-in's value of each size `proxy` lowers: a time step divided by `proxy.steps`
    (at least `MIN_STEPS` kept), every size by `proxy.sizes` (at least `MIN_SIZE`, or
    `MIN_STEPS` for a time step); a size already at its minimum is kept.  `steps`: the
    program's `step_sizes`, when the caller has them; `sizes`: the sizes to lower (default:
    the program's own, a Python program's)."""
    steps = set(step_sizes(program) if steps is None else steps)
    out = {}
    for name, old in (program.sizes if sizes is None else sizes).items():
        factor = ((proxy.steps or 1) if name in steps else 1) * (proxy.sizes or 1)
        floor = MIN_STEPS if name in steps else MIN_SIZE
        new = max(math.ceil(old / factor), min(old, floor))
        if new < old:
            out[name] = new
    return out


def stand_in(program: Program, proxy: Proxy, origin: Origin = Origin()) -> StandIn | str:
    """The program with the sizes `proxy` lowers, parsed again (`origin`: where from, a C file's
    scop or the program's own Python source), or why there is none.  A C scop's sizes are
    constants by the time it is a program, so its time steps are not told apart: only the sizes
    stand-in applies to it, to all of them."""
    sizes = origin.sizes(program)
    steps = step_sizes(program) if origin.cfile is None else ()
    if proxy.steps and not proxy.sizes and not steps:
        return ("a C file's time steps are not told from its other sizes" if origin.cfile is not None else
                "no size counts time steps (one that bounds only outermost loops and sizes no written array)")
    fewer = lowered_sizes(program, proxy, steps, sizes)
    if not fewer:
        what = (f"its time steps ({', '.join(f'{k}={sizes[k]}' for k in steps)})"
                if not proxy.sizes else "its sizes")
        return f"{what} are already small"
    try:
        smaller = origin.at(program, dict(sizes, **fewer))  # every size given
    except LooperError as e:
        return f"it does not parse with {', '.join(f'{k}={v}' for k, v in fewer.items())}: {e.message}"
    if any(s.domain.is_empty() for s in smaller.statements) and not any(s.domain.is_empty()
                                                                        for s in program.statements):
        return "a statement never runs at the stand-in's sizes"
    return StandIn(smaller, {k: (sizes[k], v) for k, v in fewer.items()})


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


def rounds_on_program(stand_in_seconds: float, program_seconds: float, predicted: float,
                      first_region: float) -> str | None:
    """Why the hybrid's rounds should run on the program after all, though it is long (None: on
    the stand-in).  Its candidates, the ranking predicts, run `predicted` times faster than the
    originals: when that leaves the stand-in's under `STAND_IN_NOISE` team starts while the
    program's own stay under `LONG_SECONDS`, the program's runs rank them and cost little
    (2mm LARGE: 1.4 s, its candidates 55-150 ms; on the half-size stand-in 6-40 ms, where its
    register tiles were ranked by the team's start and the answer lost half its speed)."""
    if predicted <= 1.0 or first_region <= 0.0:
        return None
    on_stand_in, on_program = stand_in_seconds / predicted, program_seconds / predicted
    if on_stand_in >= STAND_IN_NOISE * first_region or on_program >= LONG_SECONDS:
        return None
    return (f"rounds measured at the program's sizes after all: at the ranking's {predicted:.1f}x its candidates "
            f"would run about {1e3 * on_stand_in:.0f} ms on the stand-in, a few starts of a thread team "
            f"({1e3 * first_region:.1f} ms here), and about {1e3 * on_program:.0f} ms on the program")


def regime_apart(stand_in_seconds: float, program_seconds: float, work_ratio: float, predicted: float,
                 candidates: int) -> str | None:
    """Why the hybrid's rounds should run on the program after all, though it is long, because its
    stand-in runs in a faster memory regime (None: it scales with its work, or the program's rounds
    would cost too much).  `work_ratio`: the program's statement instances over the stand-in's;
    `candidates`: how many the rounds measure, each run twice at the ranking's `predicted` speedup
    (its checked run and one timed run: the protocol's count from 5 s on; from 1 s to 5 s it
    times two, so the estimate is a third low there, while `predicted` errs the other way:
    nussinov LARGE's 1.09x, its candidates ran 3x).  A stand-in whose arrays fit a cache the
    program's outgrow runs every schedule near its compute bound and cannot rank those that save
    memory traffic."""
    if stand_in_seconds <= 0.0 or program_seconds < LONG_SECONDS or work_ratio <= 0.0:
        return None  # a shorter program's stand-in runs milliseconds, where a ratio of times is noise
    scaling = program_seconds / stand_in_seconds
    if scaling < REGIME * work_ratio:
        return None
    cost = 2 * candidates * program_seconds / max(predicted, 1.0)
    if cost > PROGRAM_ROUNDS_SECONDS:
        return None
    return (f"rounds measured at the program's sizes after all: its original ran {scaling:.0f}x as long as the "
            f"stand-in's for {work_ratio:.0f}x the work, so the stand-in's arrays sit in faster memory and it "
            f"cannot rank what saves traffic; at the ranking's {max(predicted, 1.0):.1f}x the rounds would take "
            f"about {cost:.0f} s on the program")
