"""The default search: the whole space ranked without compiling, a small budget measured as run.

LOOPer's claim is that a cost model finds what a measuring search finds, at a fraction of the
time.  The shipped model has never seen register tiles, packs, time tiles or vector loops, so on
its own it cannot rank the space where the dense kernels' speed is (gemm at a third of OpenBLAS's
rate where measuring reaches 80%).  So, in order:

1. **Rank** (`Ranking`).  A beam search over the whole space, nothing compiled.  With a model
   trained on the whole space (its data searched it: `search_space.grown`), a schedule's score
   is the model's prediction, which weights the analytic cost terms among its inputs.  With a
   model of the first space only, it is the geometric mean of the model's prediction and the
   terms' estimate for its longest prefix of steps the model knows (fusion, distribution,
   interchange, reversal, skew: its loop structure), times the analytic cost terms' gain of
   everything after that prefix (`costmodel.terms`: parallelism, tiles, register tiles, packs,
   vector loops, time tiles, expansions: what the model never saw).  On held-out programs of the
   grown space the first ranks their measured candidates at Spearman 0.61-0.68, the second at
   0.26-0.33 (`benchmarks/ranking_heldout.py`).  Beside the beam, `TERMS_LANES` lanes follow the
   analytic terms' own favourites (`policy.explore_guide`), so that what the model ranks low and
   the terms high is in the ranking too, refined.
2. **Round one**: `per_round` candidates chosen to cover the best loop structures of the ranking
   (each origin's best first: the original's loops, each of isl's schedules), the structure the
   terms alone favour among the others (`terms_favourite`: adi and gramschmidt MEDIUM), and every
   refinement family (register tile, pack, time tile, vector loop, tile, parallel loop), each
   checked and timed as users run programs (fresh processes).
3. **Fit**: each unmeasured candidate's score is corrected by what the measured ones showed:
   log(measured / predicted) as a mean plus an effect of each loop structure and one of each
   refinement family (with a thread team and without apart), fit with shrinkage (`correct`).
4. **Round two**: the best `per_round` of the corrected ranking not measured yet, new shapes
   first; with three rounds, **round three** measures the relatives of the two fastest so far
   (`exploit`: the same loop structure with other tiles, unroll factors, vector loops), after
   the ranking is grown from their loop structures (`regrow`: the first ranking's beam keeps a
   few structures by their estimates and may have dropped the one measured fastest before it
   refined it).  When the last round's fastest is a new loop structure, none of whose
   refinements ran (it ranked low and came in by breadth), or a structure measured before now
   run a new way (on threads where it ran without), up to `follow` more rounds measure its
   relatives the same way (`overtaken`).  When none does, a round measures the fastest's
   neighbours (its steps with one tile's sizes or one unroll factor changed, `search.neighbours`:
   the beam keeps a few of a structure's tile sizes by estimates that hardly tell them apart),
   and a neighbour that runs clearly faster than all before it earns one more such round, a
   local climb from it (`neighbour_round`), within the same `follow` rounds.
5. **Confirm**: the `confirm` fastest measured candidates and the original timed together, as
   users run programs (fresh processes, enough of them to see a slow mode), judged by their means
   with no run far slower than the original (`runtime.judge`).  The fastest that passes is the
   answer, else the original.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..costmodel.terms import Estimates
from ..ir.program import Program
from ..poly.deps import Dependences
from ..poly.legality import replay
from ..runtime.judge import Judgement, describe_runs, expected_mean
from ..runtime.status import Status
from ..target import Target
from ..transforms.registry import TRANSFORMS
from ..transforms.schedule import Schedule
from .scoring import Score, SearchResult
from .evaluators import ExecutionEvaluator, ModelEvaluator
from .hybrid import Verified, with_region
from .confirm import judge, offers_rewrite
from .restraint import team_cost

# Exploration lanes of the ranking search guided by the analytic terms alone (`Ranking.by_terms`,
# `policy.explore_guide`): the structures the model ranks low but the terms high reach the ranking,
# refined, for round one's second opinion (`terms_favourite`).
TERMS_LANES = 2
# The transformation kinds the shipped cost model was trained on that choose loop structure.
MODEL_STRUCTURE = frozenset(("shift", "fuse", "distribute", "interchange", "reverse", "skew"))
FAMILIES = ("register", "pack", "timetile", "vector", "tile", "parallel", "plain")


@functools.cache
def _marks() -> frozenset[str]:
    """The kinds that only mark loops (`Transform.mark`: unroll, vector and region pragmas)."""
    return frozenset(k for k in TRANSFORMS.kinds() if TRANSFORMS.by_kind(k).mark)


def shape(s: Schedule) -> str:
    """A schedule's description without its pure marks (unroll, vector, region pragmas) and its
    reversals: candidates of one shape differ by a few percent at most, so a round measures one
    of each first."""
    return s.describe(without=_marks() | {"reverse"})


def structure_of(s: Schedule) -> str:
    """A schedule's loop structure (`Schedule.structure`) without its reversals and time tiles: a
    structure reversed runs the same loops backwards, and counting it apart spent a round's places
    for structures on one (gemver MEDIUM: all 24 candidates of one structure); a time tile is a
    refinement family whose sizes are tile sizes, and counting them apart gave all four of
    jacobi-2d LARGE's places to isl's wavefront time-tiled at four sizes (they ran 0.9-1.1x)."""
    return s.structure().describe(without=("reverse", "timetile"))


def family(s: Schedule) -> str:
    """A schedule's refinement family: the most specific of what it adds to its loops."""
    kinds = {t.kind for t in s.steps}
    if "register" in kinds:
        return "register"
    if "pack" in kinds:
        return "pack"
    if "timetile" in kinds:
        return "timetile"
    if "vectorize" in kinds:
        return "vector"
    if kinds & {"tile", "sinktile", "blocks"}:
        return "tile"
    if s.lowered.parallel:
        return "parallel"
    return "plain"


def model_prefix(s: Schedule) -> Schedule:
    """The longest prefix of `s` made of steps the cost model knows that choose loop structure."""
    n = 0
    while n < len(s.steps) and s.steps[n].kind in MODEL_STRUCTURE:
        n += 1
    return Schedule(s.program, s.steps[:n])


def knows_grown(model: ModelEvaluator | None) -> bool:
    """Whether `model` was trained on the whole space (its data searched it)."""
    return model is not None and bool(model.meta.get("search_space", {}).get("grown"))


class Ranking:
    """Scores without compiling (see the module docstring, step 1): predicted speedups."""

    name = "ranking"

    def __init__(self, program: Program, target: Target, model: ModelEvaluator | None = None,
                 estimates: Estimates | None = None):
        self.program = program
        self.model = model
        # the model's features hold the same terms: computed once for both when on one target
        same = model is not None and model.info.target == target
        self.estimates = estimates or (model.info.estimates if same else Estimates(target))
        self.base = self.estimates.of(Schedule(program).lowered).seconds
        self._model: dict[tuple, float] = {}
        # the model scores whole schedules when it knows the whole space, else loop structures
        self.whole = knows_grown(model)

    def seconds(self, s: Schedule) -> float:
        """The analytic estimate of `s`'s kernel time."""
        return self.estimates.of(s.lowered).seconds

    def analytic(self, s: Schedule) -> float:
        """`s`'s speedup over the original by the analytic cost terms alone."""
        return self.base / self.seconds(s)

    def by_terms(self) -> "Ranking":
        """This ranking without its model: the analytic terms alone, on the same estimates (the
        guide of the ranking search's terms lanes, `TERMS_LANES`)."""
        return Ranking(self.program, self.estimates.target, None, self.estimates)

    def _structure_scores(self, prefixes: Sequence[Schedule]) -> list[float]:
        """Each prefix's predicted speedup: the geometric mean of the model's and the analytic
        terms' (either alone is wrong by 10x on some structures: looper-v6 put jacobi-2d's
        column-order interchange at 3.2x, measured 0.07x, which the terms see); the model's alone
        when it scores whole schedules (`whole`: the terms are among its inputs, and the mean with
        them ranked held-out programs of the grown space worse than the model alone, Spearman
        0.48-0.59 against 0.61-0.68)."""
        todo = [p for p in prefixes if p.steps and p.identity not in self._model]
        if todo and self.model is not None:
            for p, sc in zip(todo, self.model.evaluate(self.program, todo)):
                self._model[p.identity] = sc.speedup if sc.ok and sc.speedup > 0 else 1.0
        out = []
        for p in prefixes:
            if not p.steps:
                out.append(1.0)
                continue
            analytic = self.base / self.seconds(p)
            model = self._model.get(p.identity)
            out.append(analytic if model is None else model if self.whole else math.sqrt(model * analytic))
        return out

    def evaluate(self, program: Program, schedules: Sequence[Schedule]) -> list[Score]:
        """The protocol: a predicted speedup over the original per schedule."""
        prefixes = list(schedules) if self.whole else [model_prefix(s) for s in schedules]
        structure = self._structure_scores(prefixes)
        out = []
        for s, p, m in zip(schedules, prefixes, structure):
            if not s.steps:
                out.append(Score(1.0, Status.OK, "original", predicted=1.0))
                continue
            gain = self.seconds(p) / self.seconds(s)
            out.append(Score(m * gain, Status.PREDICTED, "", predicted=m * gain))
        return out

    def close(self) -> None:
        pass


@dataclass(eq=False)
class Candidate:
    """One ranked schedule: its prediction, its corrected prediction, what measuring it gave."""

    schedule: Schedule
    predicted: float
    structure: str
    family: str
    corrected: float = 0.0
    measured: Score | None = None
    shape: str = ""
    analytic: float = 0.0  # its speedup by the analytic terms alone (`Ranking.analytic`; 0: not asked)

    @classmethod
    def of(cls, s: Schedule, predicted: float) -> "Candidate":
        """`s` ranked at `predicted`, before any correction or measurement."""
        return cls(s, predicted, structure_of(s), family(s), predicted, shape=shape(s))

    @property
    def threaded(self) -> bool:
        """Whether it starts a thread team (has a parallel loop)."""
        return bool(self.schedule.lowered.parallel)

    @functools.cached_property
    def root(self) -> Schedule:
        """Its loop structure up to its first tiling (`affine_structure`), lowered once: exploit,
        regrow and overtaken ask it of every candidate each round."""
        return affine_structure(self.schedule)

    @property
    def ratio(self) -> float | None:
        """Measured over predicted (None: not measured, or its run failed)."""
        m = self.measured
        if m is None or not m.ok or m.status != Status.OK:
            return None
        return m.speedup / self.predicted


@dataclass
class Budgeted:
    """What the budget measured, for reports: every candidate of both rounds and the confirmation."""

    candidates: list[Candidate] = field(default_factory=list)
    judgement: Judgement | None = None
    rounds: list[int] = field(default_factory=list)  # candidates measured per round
    grown: int = 0  # candidates the ranking gained from the leaders' structures (`regrow`)
    followed: int = 0  # rounds added after the last: a new fastest's relatives (`overtaken`), neighbours
    varied: int = 0  # candidates the ranking gained as neighbours of the fastest (`neighbour_round`)
    notes: list[str] = field(default_factory=list)  # what did not go as planned (a growth that failed)


def ranked(result: SearchResult, regions: bool, analytic: Callable[[Schedule], float] | None = None
           ) -> list[Candidate]:
    """Every scored candidate of the ranking search, once per printed program, best first (with
    one parallel region where they would fork a team more than once); with `analytic`, each
    with its speedup by the analytic terms alone (`Candidate.analytic`)."""
    seen: set = set()
    out = []
    for e in sorted((e for e in result.evaluated if e.schedule.steps and e.score and e.score.ok),
                    key=lambda e: -e.score.speedup):
        s = with_region(e.schedule) if regions else e.schedule
        text = s.describe()
        if s.identity in seen or text in seen:
            continue
        seen |= {s.identity, text}
        out.append(Candidate.of(s, e.score.speedup))
        out[-1].analytic = analytic(s) if analytic is not None else 0.0
    return out


def origin(s: Schedule) -> str:
    """Where a schedule's loops come from: one of isl's schedules (its step: `islschedule(pluto)`,
    `islschedule(outer-parallel)`), or the original's loops ("")."""
    return Schedule(s.program, s.steps[:1]).describe() if s.from_isl else ""


def structure_places(cands: list[Candidate], k: int) -> list[Candidate]:
    """The best candidates of `k` loop structures: the best structure of each origin (`origin`)
    first, then the best of the rest.  isl's outer-parallel schedule of cholesky MEDIUM,
    predicted 0.18x and last of 25 structures, runs 2.6x, and tiled 2.8x where the answer
    without it ran 1.6x: a whole schedule replaced is where the model is least sure."""
    best_of: dict[str, Candidate] = {}  # each structure's best, best first
    for c in cands:
        best_of.setdefault(c.structure, c)
    by_origin: dict[str, Candidate] = {}
    for c in best_of.values():
        by_origin.setdefault(origin(c.schedule), c)
    firsts = list(by_origin.values())[:k]
    return firsts + [c for c in best_of.values() if c not in firsts][:k - len(firsts)]


def terms_favourite(cands: list[Candidate], chosen: Sequence[Candidate]) -> Candidate | None:
    """The candidate the analytic terms alone rank first (`Candidate.analytic`) among the loop
    structures `chosen` leaves out: a second opinion where the model is sure and wrong.  adi
    MEDIUM: the model put its column sweeps turned into row sweeps at 0.16x, so the ranking's beam
    never kept them, and the measuring search's answer built on them runs 1.5-1.7x the default's;
    the terms put them second of all structures (the terms lanes, `TERMS_LANES`, bring them in)."""
    taken = {c.structure for c in chosen}
    return max((c for c in cands if c.analytic > 0 and c.structure not in taken), key=lambda c: c.analytic,
               default=None)


def first_round(cands: list[Candidate], n: int) -> list[Candidate]:
    """`n` candidates covering the ranking: half the round for loop structures
    (`structure_places`), the terms' favourite of the other structures (`terms_favourite`), the
    best without threads when all those start a team, the best of every refinement family, the
    original structure's best, then the best of what is left, one of each shape first (`shape`).  (The sequential one once took the last structure's place:
    jacobi-2d LARGE's fused nest, whose time tile runs 3x, then never ran.)"""
    chosen: list[Candidate] = []

    def take(c: Candidate | None) -> None:
        if c is not None and c not in chosen and len(chosen) < n:
            chosen.append(c)

    tops = structure_places(cands, max(1, n // 2))
    for c in tops:
        take(c)
    take(terms_favourite(cands, chosen))
    if all(c.threaded for c in tops):  # a short kernel may run faster alone than its team starts
        take(next((c for c in cands if not c.threaded), None))
    for fam in FAMILIES:
        if not any(c.family == fam for c in chosen):
            take(next((c for c in cands if c.family == fam), None))
    take(next((c for c in cands if c.schedule.keeps_original_structure()), None))
    return chosen + next_round(cands, n - len(chosen), chosen)


def next_round(cands: list[Candidate], n: int, taken: list[Candidate] = (), key=lambda c: c.corrected
               ) -> list[Candidate]:
    """The best `n` candidates not measured (nor `taken`) by `key`, one per shape not yet measured
    first, then any."""
    seen = {c.shape for c in cands if c.measured is not None} | {c.shape for c in taken}
    pool = sorted((c for c in cands if c.measured is None and c not in taken), key=lambda c: -key(c))
    out: list[Candidate] = []
    for fresh_only in (True, False):
        for c in pool:
            if len(out) == n:
                return out
            if c in out or (fresh_only and c.shape in seen):
                continue
            seen.add(c.shape)
            out.append(c)
    return out


def leaders(cands: list[Candidate], n: int = 2) -> list[Candidate]:
    """The fastest measured candidate of each of the `n` fastest loop structures.  Two leaders of
    one structure share their relatives, so the second added nothing to the last round: cholesky
    LARGE's two fastest were tiles of isl's Pluto wavefront (1.59x on the stand-in), and isl's
    outer-parallel schedule, measured plain at 1.55x though predicted 0.09x, never had a tile
    measured; tiled and run on threads it is 5.7x gcc, the wavefront's tile 1.9x."""
    out: list[Candidate] = []
    for c in sorted((c for c in cands if c.ratio is not None), key=lambda c: -c.measured.speedup):
        if len(out) == n:
            break
        if all(c.structure != o.structure for o in out):
            out.append(c)
    return out


def affine_structure(s: Schedule) -> Schedule:
    """`s`'s loop structure up to its first tiling: a register or time tile moves loops too, but
    no interchange, reversal or skew applies after one."""
    kept: list = []
    for t in s.structure().steps:
        after = Schedule(s.program, (*kept, t))
        if any(r.div != 1 for rows in after.lowered.rows.values() for r in rows):
            break
        kept.append(t)
    return Schedule(s.program, tuple(kept))


def descends(c: Candidate, structure: Schedule) -> bool:
    """Whether `c` refines (or goes on from) the loop structure `structure`."""
    k = len(structure.steps)
    return bool(k) and c.schedule.steps[:k] == structure.steps


def kin_of(leader: Candidate) -> Callable[[Candidate], bool]:
    """Whether a candidate is a relative of `leader`: of its loop structure, or going on from its
    affine structure (what `regrow` ranks), so that its measured families count for it."""
    root = leader.root
    return lambda c: c.structure == leader.structure or descends(c, root)


def exploit(cands: list[Candidate], n: int, lead: int = 2) -> list[Candidate]:
    """The last round: the unmeasured relatives of the `lead` fastest measured candidates (their
    loop structure, or what goes on from it (`regrow`): other tiles, unroll factors, vector loops,
    register tile shapes, time tiles), best corrected first, then the corrected ranking's best.
    The breadth of the earlier rounds found the structure; its variants differ by tens of
    percent, which no estimate tells apart.  A leader's refinement families that none of its
    relatives measured yet come first (half the round at most), then shapes not measured yet:
    the fit corrects a family by what it showed on other structures, and seidel-2d MEDIUM's
    wavefront (5.8x plain) had its unroll factors measured before any of its time tiles.  A
    family with a thread team and without counts as two, those that run as the leader does
    first: gemver LARGE's fastest sequential nest (3.9x) had only parallel tiles measured, which
    lost in the confirmation, and none of its sequential ones."""
    best = leaders(cands, lead)
    kin = [kin_of(b) for b in best]
    near = sorted((c for c in cands if c.measured is None and any(k(c) for k in kin)),
                  key=lambda c: -c.corrected)
    out: list[Candidate] = []
    # each leader's families not measured yet, with threads and without apart, those as the
    # leader runs first, the fastest leader's first: half the round
    for as_leader in (True, False):
        for b, k in zip(best, kin):
            kinds = {(c.family, c.threaded) for c in cands if (c.measured is not None or c in out) and k(c)}
            for c in near:
                if (len(out) < max(1, n // 2) and c not in out and k(c) and (c.threaded == b.threaded) == as_leader
                        and (c.family, c.threaded) not in kinds):
                    out.append(c)
                    kinds.add((c.family, c.threaded))
    shapes = {c.shape for c in cands if c.measured is not None or c in out}
    for fresh in (lambda c: c.shape not in shapes, lambda c: True):
        for c in near:
            if len(out) < n and c not in out and fresh(c):
                out.append(c)
                shapes.add(c.shape)
    return out + next_round(cands, n - len(out), out)


# Ranks the refinements of a loop structure (a beam search from it, scored like the first one).
Grow = Callable[[Schedule], SearchResult]


def regrow(cands: list[Candidate], lead: Sequence[Candidate], grow: Grow, regions: bool,
           notes: list[str] | None = None) -> list[Candidate]:
    """New candidates: the ranking grown (`grow`) from the loop structures of the measured
    candidates `lead` that the first ranking hardly refined (fewer than two refinement families
    beside plain ones that run as the leader does, with a thread team or without), those it did
    not hold.  Its beam keeps a few structures by their estimates, and estimates often tie:
    seidel-2d MEDIUM's first affine level had a dozen structures within 1% of 3.70x, isl's
    wavefront among them, cut from the beam; measured plain in round two, it was the fastest
    (5.8x), and none of its time tiles had been ranked.  A growth that fails costs the growth,
    not the search; it is said in `notes`."""
    seen = {c.schedule.identity for c in cands} | {c.schedule.describe() for c in cands}
    out: list[Candidate] = []
    roots: list[Schedule] = []
    for c in lead:
        root = c.root
        if not root.steps or any(root.steps == r.steps for r in roots):
            continue
        kin = kin_of(c)
        if len({o.family for o in cands if kin(o) and o.threaded == c.threaded} - {"plain"}) >= 2:
            continue  # the first ranking refined it, as it runs (with threads or not): growing finds little new
        roots.append(root)
        try:
            found = grow(root)
        except Exception as e:  # a bug in one transformation's generator
            if notes is not None:
                notes.append(f"the ranking was not grown from {root.describe()}: {type(e).__name__}: {e}")
            continue
        for new in ranked(found, regions):
            text = new.schedule.describe()
            if new.schedule.identity not in seen and text not in seen:
                seen |= {new.schedule.identity, text}
                out.append(new)
    return out


# How much faster than every earlier measurement a neighbour must run for the search to climb on
# from it: a round's timings of one structure's variants differ by a few percent run to run
# (floyd-warshall MEDIUM's tile at 64 with and without an unroll: 4.41x and 4.40x).
CLIMB_GAIN = 0.05


# A schedule's neighbours with their estimates (`search.neighbours`, scored like the ranking).
Vary = Callable[[Schedule], list[tuple[Schedule, float]]]


def neighbour_round(cands: list[Candidate], batch: Sequence[Candidate], vary: Vary, regions: bool,
                    varied: set[tuple], n: int, gain: float = CLIMB_GAIN) -> list[Candidate]:
    """A round of the fastest measured candidate's neighbours not measured yet (at most `n`, best
    corrected first), those the ranking never held added to `cands` with their estimates; empty
    when the fastest was varied before (`varied`, kept here) or has no such neighbour.  The
    first varies the fastest after the planned rounds; a later one only a neighbour that ran
    faster than everything before it by more than `gain` (`climbed`): a climb, as TVM's
    evolutionary search mutates its measured best.  The planned rounds keep their places for
    loop structures and families: floyd-warshall MEDIUM's tiles of its own loops, measured in
    the last round as the second leader's relatives, ran 4.3x; with four of that round's places
    given to the first leader's neighbours, they never ran, and the answer was isl's schedule
    tiled (2.3x)."""
    top = leaders(cands, 1)
    if not top or top[0].schedule.identity in varied or (varied and not climbed(cands, batch, gain)):
        return []
    lead = top[0].schedule
    varied.add(lead.identity)
    held = {c.schedule.identity: c for c in cands} | {c.schedule.describe(): c for c in cands}
    near: list[Candidate] = []
    for s, predicted in vary(lead):
        s = with_region(s) if regions else s
        c = held.get(s.identity) or held.get(s.describe())
        if c is None:
            c = Candidate.of(s, predicted)
            cands.append(c)
            held[s.identity] = c
        if c.measured is None and c not in near:
            near.append(c)
    correct(cands)
    return sorted(near, key=lambda c: -c.corrected)[:n]


def climbed(cands: list[Candidate], batch: Sequence[Candidate], gain: float = CLIMB_GAIN) -> bool:
    """Whether the round just measured (`batch`) found a new fastest, faster than every earlier
    measurement by more than `gain`."""
    top = leaders(cands, 1)
    if not top or top[0] not in batch:
        return False
    earlier = [c.measured.speedup for c in cands if c.ratio is not None and c not in batch]
    return top[0].measured.speedup > (1 + gain) * max(earlier, default=0.0)


def overtaken(cands: list[Candidate], batch: Sequence[Candidate], before: Sequence[Candidate]
              ) -> Candidate | None:
    """The candidate of `batch` (the round just measured) that is now the fastest, when it beats
    the fastest before it and is new: it has neither the loop structure nor the affine
    structure of a leader `before` (`affine_structure`), or it runs its structure a new way (a
    thread team where every relative measured before ran without one, or the reverse).  Either
    way none of its refinements ran.  atax MEDIUM's interchanged nest ranked low (0.97x) and,
    measured in the last round, ran 2.7x while its tiles and unrolls, 20% faster again, were
    never measured.  cholesky LARGE's leader was isl's outer-parallel schedule plain (1.5x);
    the last round measured it on threads (2.4x), and its tiles on threads (4.9x gcc as the
    measuring search found them) never ran."""
    top = leaders(cands, 1)
    if not top or top[0] not in batch:
        return None
    new = top[0]
    earlier = [c for c in cands if c.ratio is not None and c not in batch]
    if new.measured.speedup < max((c.measured.speedup for c in earlier), default=0.0):
        return None
    if not any(new.structure == b.structure or new.root.steps == b.root.steps for b in before):
        return new
    ran = {(c.structure, c.threaded) for c in (*earlier, *before)}
    return None if (new.structure, new.threaded) in ran else new


# How strongly the fit pulls each loop structure's and family's effect toward none: the weight of
# one measurement that ran as predicted (`correct`).
SHRINK = 1.0


def correct(cands: list[Candidate], shrink: float = SHRINK) -> None:
    """Each unmeasured candidate's corrected prediction (step 3): its prediction times
    exp(mean + its loop structure's effect + its family's effect), fit by least squares with
    ridge `shrink` to log(measured / predicted) over the measured candidates.  A family counts
    twice, with a thread team and without: a team's start is most of a short parallel kernel's
    error and no part of a sequential one's.  An effect not measured is none.

    Why effects that add, not the nearest measured relatives' mean: one structure measured far
    above its prediction made its family's ratio for every other structure (seidel-2d LARGE: isl's
    outer-parallel schedule plain, 7x its prediction on the stand-in, spent round two on eight
    other sequential structures corrected to 7-10x, measured 1.1x), and a structure's own ratio
    gave way to its family's on other structures (its time tiles, 3.4x predicted and first of the
    grown ranking, corrected by time tiles of other structures to 3.2x, below its tiles, and
    never measured).  Apart, each measurement says how much of its error is its structure's and
    how much its family's; the shrinkage splits an effect seen once."""
    measured = [c for c in cands if c.ratio is not None]
    if not measured:
        return
    column: dict = {}  # each effect's column after the mean's (0): the structures', then the families'
    for key in [("structure", c.structure) for c in measured] + [("family", c.family, c.threaded) for c in measured]:
        column.setdefault(key, 1 + len(column))

    def columns(c: Candidate) -> list[int]:
        """The mean's column and those of `c`'s effects that were measured."""
        keys = (("structure", c.structure), ("family", c.family, c.threaded))
        return [0] + [column[k] for k in keys if k in column]
    rows = np.zeros((len(measured) + len(column), 1 + len(column)))
    y = np.zeros(len(rows))
    for r, c in enumerate(measured):
        rows[r, columns(c)] = 1.0
        y[r] = math.log(c.ratio)
    rows[len(measured):, 1:] = math.sqrt(shrink) * np.eye(len(column))  # the ridge: each effect toward none
    fit = np.linalg.lstsq(rows, y, rcond=None)[0]
    for c in cands:
        if c.measured is None:
            c.corrected = c.predicted * math.exp(fit[columns(c)].sum())


@dataclass(frozen=True)
class OnStandIn:
    """Where the rounds run when the program is long: a smaller stand-in of it (`search.proxy`),
    its dependences, and the evaluator that checks and times programs at its sizes."""

    program: Program
    deps: Dependences
    evaluator: ExecutionEvaluator


def measure_round(program: Program, cands: list[Candidate], evaluator: ExecutionEvaluator,
                  first_region: float = 0.0, stand_in: OnStandIn | None = None) -> None:
    """Check and time `cands` (fresh processes each, per the evaluator's protocol); a candidate
    that starts a thread team is scored by its expected mean (`as_run`).  With a stand-in, each
    candidate runs there, replayed (and checked by isl) at its sizes; one that does not replay
    runs on the program."""
    on_program: list[tuple[Candidate, Schedule]] = []
    on_stand_in: list[tuple[Candidate, Schedule]] = []
    for c in cands:
        if stand_in is not None:
            moved, why = replay(c.schedule, stand_in.program, stand_in.deps)
            if why is None:
                on_stand_in.append((c, moved))
                continue
        on_program.append((c, c.schedule))
    _measure(program, on_program, evaluator, first_region)
    if stand_in is not None:
        _measure(stand_in.program, on_stand_in, stand_in.evaluator, first_region)


def _measure(program: Program, pairs: list[tuple[Candidate, Schedule]], evaluator: ExecutionEvaluator,
             first_region: float) -> None:
    """Each candidate's score: its schedule (of `program`) checked and timed."""
    if pairs:
        for (c, s), sc in zip(pairs, evaluator.evaluate(program, [s for _, s in pairs])):
            c.measured = as_run(s, sc, first_region)


def expected_share(s: Schedule, times: Sequence[float], first_region: float) -> float:
    """The mean of `s`'s runs over what a user's runs cost on average (`runtime.judge.expected_mean`,
    at most 1): a few fresh runs of a parallel program often miss the slow start of its team,
    whose mean cost the target knows (`Limits.fork_seconds`).  A speedup times it is the
    speedup a user sees."""
    cost = team_cost(s, first_region)
    if not cost or not times:
        return 1.0
    return min(1.0, statistics.fmean(times) / expected_mean(times, cost))


def as_run(s: Schedule, sc: Score, first_region: float) -> Score:
    """`sc` scored by the expected mean of `s`'s runs (`expected_share`)."""
    if not sc.ok or sc.status != Status.OK:
        return sc
    share = expected_share(s, sc.times, first_region)
    if share >= 1.0:
        return sc
    return dataclasses.replace(sc, speedup=sc.speedup * share,
                               detail=(sc.detail + "; " if sc.detail else "") +
                               f"scored by its expected mean with its team's start ({1 / share:.2f}x its runs' mean)")


def distinct_best(measured: list[Candidate], n: int) -> list[Candidate]:
    """The `n` fastest measured candidates, the best of each refinement family first, then of
    each loop structure: siblings share their slow runs (the same parallel loop, the same
    barriers), so confirming three of one kind would leave nothing different to fall back on."""
    ranked_ = sorted(measured, key=lambda c: -c.measured.speedup)
    out: list[Candidate] = []
    for key in (lambda c: c.family, lambda c: (c.structure, c.family), lambda c: id(c)):
        seen = {key(c) for c in out}
        for c in ranked_:
            if len(out) < n and c not in out and key(c) not in seen:
                seen.add(key(c))
                out.append(c)
    return sorted(out, key=lambda c: -c.measured.speedup)


def confirmation_note(original: Sequence[float] | None, finalists: list[Candidate],
                      timed: Sequence[tuple[float | None, Sequence[float] | None]], answer: Schedule,
                      where: str = "", failed: Sequence[str | None] = ()) -> str:
    """What the confirmation timed at the program's sizes, for the report: each finalist's family,
    mean and range of runs, and which one was written.  The stand-in's rounds rank candidates of
    milliseconds on a noisy machine; when the answer is not the one they ranked first, this line
    says whether the program's own runs chose otherwise or a finalist failed there, and why
    (`failed`, per finalist)."""
    parts = []
    for k, (c, (sp, ts)) in enumerate(zip(finalists, timed)):
        mark = " <- answer" if c.schedule is answer else ""
        why = f" ({failed[k]})" if k < len(failed) and failed[k] else ""
        parts.append(f"{c.family} {describe_runs(ts) if sp and ts else 'failed' + why}{mark}")
    n = len(original or ())
    head = f"confirmed at the program's sizes, {n} interleaved fresh runs each{' ' + where if where else ''}: "
    return head + "; ".join(parts) + (f"; original {describe_runs(original)}" if original else "; original failed")


def confirm_finalists(program: Program, finalists: list[Candidate], evaluator: ExecutionEvaluator,
                      first_region: float, report: Budgeted) -> tuple[Schedule, Score]:
    """The finalists timed together with the original at the program's sizes: the fastest the
    judgement lets through (`runtime.judge`), else the original; what was timed goes to the
    report's notes (`confirmation_note`).  Timed in the user's own C program, the original loops
    in looper's code (`Schedule.rewrite`) are a finalist too while no finalist ran far faster in
    the rounds or its runs are cheap (`confirm.offers_rewrite`): the rounds ran in looper's
    harness, whose baseline is the original loops in looper's code without its scalar
    replacement, and in place in PolyBench's harness the rewrite runs bicg MEDIUM 3.4x and
    nussinov 2.2x as fast as PolyBench's own."""
    best_s, best_sc = Schedule(program), Score(1.0, Status.OK, "original", predicted=1.0)
    best = max((c.measured.speedup for c in finalists if c.measured is not None and c.measured.ok), default=1.0)
    if offers_rewrite(program, evaluator, best):  # the original loops in looper's code: an answer too
        finalists = finalists + [Candidate(Schedule.rewrite(program), 1.0, "", "rewritten")]
    if not finalists:
        return best_s, best_sc
    original, timed = evaluator.time_together(program, [c.schedule for c in finalists])
    ranked_final = sorted(((c, sp * expected_share(c.schedule, t, first_region), t)
                           for c, (sp, t) in zip(finalists, timed) if sp and t), key=lambda x: -x[1])
    for c, speedup, times in ranked_final:
        if not original:
            continue
        judged, again = judge(program, c.schedule, original, times, evaluator, team_cost(c.schedule, first_region))
        if again:
            report.notes.append(f"{c.family}'s mean won, but not clearly, so both were timed again as often: "
                                + (f"written ({judged.describe()})" if judged.faster else f"refused: {judged.why_not()}"))
        if judged.faster:
            report.judgement = judged
            best_s = c.schedule
            best_sc = Score(judged.speedup, Status.OK, "confirmed: " + judged.describe(), list(judged.answer),
                            predicted=c.predicted)
            break
        if report.judgement is None and original:
            report.judgement = judged
    report.notes.append(confirmation_note(original, finalists, timed, best_s, evaluator.judged_in,
                                          evaluator.failed))
    return best_s, best_sc


def budgeted(program: Program, result: SearchResult, evaluator: ExecutionEvaluator, rounds: int = 2,
             per_round: int = 8, confirm: int = 3, regions: bool = True, first_region: float = 0.0,
             grow: Grow | None = None, follow: int = 0, stand_in: OnStandIn | None = None,
             vary: Vary | None = None, analytic: Callable[[Schedule], float] | None = None
             ) -> tuple[SearchResult, list[Verified], Budgeted]:
    """The ranking search's `result` measured on a budget (steps 2-5 of the module docstring).
    `first_region`: the target's mean cost of a fresh process's first parallel region
    (`Limits.fork_seconds`; 0 on one thread), charged to candidates that start a team.  `grow`:
    ranks a loop structure's refinements, for the last round (`regrow`; None: not grown).
    `follow`: rounds added after the last, each only while the round before found a new fastest
    loop structure (`overtaken`), to measure its refinements (grown from it first), or for the
    fastest's neighbours (`vary`).
    `stand_in`: where the rounds run (`OnStandIn`; the confirmation runs the program itself).
    `vary`: the neighbours of a schedule with their estimates; when no new structure earns a
    follow-up round, one measures the fastest's neighbours, and another climbs on from one that
    ran clearly faster (`neighbour_round`, within `follow`; None: no neighbours).
    `analytic`: a schedule's speedup by the analytic terms alone (`Ranking.analytic`), for round
    one's second opinion (`terms_favourite`; None: none)."""
    began = time.perf_counter()
    cands = ranked(result, regions, analytic)
    report = Budgeted(cands)
    batch = first_round(cands, per_round)
    varied: set[tuple] = set()
    while batch:
        before = leaders(cands)
        measure_round(program, batch, evaluator, first_region, stand_in)
        report.rounds.append(len(batch))
        correct(cands)
        done = len(report.rounds)
        lead: Sequence[Candidate] = ()
        if done == rounds - 1 and rounds > 2:
            lead = leaders(cands)
        elif done >= rounds:
            more = done < rounds + follow
            new = overtaken(cands, batch, before) if more else None
            if new is None:
                count = len(cands)
                batch = neighbour_round(cands, batch, vary, regions, varied, per_round) if more and vary else []
                report.varied += len(cands) - count
                report.followed += bool(batch)
                continue
            lead = [new]
            report.followed += 1
        else:
            batch = next_round(cands, per_round)
            continue
        if grow is not None:
            grown = regrow(cands, lead, grow, regions, report.notes)
            cands.extend(grown)
            report.grown += len(grown)
            correct(cands)
        batch = exploit(cands, per_round)
    finalists = distinct_best([c for c in cands if c.ratio is not None], confirm)
    best_s, best_sc = confirm_finalists(program, finalists, evaluator, first_region, report)
    verified = [Verified(c.schedule, c.predicted, c.measured) for c in cands if c.measured is not None]
    # the search's time is the ranking's and the budget's: building, timing, growing, confirming
    out = SearchResult(best_s, best_sc, result.explored, result.seconds + time.perf_counter() - began,
                       result.machinery_seconds, result.levels)
    return out, verified, report
