"""Beam search over transformation sequences, level by level (LOOPer's search).

At every level each schedule in the beam proposes its candidates; "apply nothing here" is always
one of them (the schedule itself, already scored).  Illegal candidates are pruned by isl before
any evaluator sees them; a sequence already explored is never evaluated again, and neither is a
candidate whose lowered schedule equals one already scored.  The K best survive; the answer is the
best schedule seen at any level (a model-guided one without the reversals and skews it does not
need: `search.simplify`).  The original schedule is kept as an extra beam member, so that the
plain path (original -> parallel -> tile -> unroll) is always explored, however the earlier
levels were decided.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from ..ir.program import Program
from ..poly.deps import Dependences
from ..poly.legality import check_step
from ..transforms.schedule import Schedule
from .candidates import generate, level_plan
from .simplify import drop_idle_enablers


@dataclass
class Score:
    """An evaluator's verdict on one schedule: a speedup over the original, or why there is none."""

    speedup: float | None
    status: str = "ok"  # ok | predicted | crash | timeout | wrong | compile-error | slow
    detail: str = ""
    times: list[float] = field(default_factory=list)
    predicted: float | None = None

    @property
    def ok(self) -> bool:
        return self.speedup is not None


class Evaluator(Protocol):
    name: str

    def evaluate(self, program: Program, schedules: Sequence[Schedule]) -> list[Score]:
        ...


@dataclass
class Explored:
    schedule: Schedule
    description: str
    level: str
    score: Score | None = None
    rejected: str | None = None  # why isl said no


@dataclass
class SearchResult:
    best: Schedule
    best_score: Score
    explored: list[Explored]
    seconds: float
    machinery_seconds: float  # legality + lowering + candidate generation (no evaluator)
    levels: list[str]

    @property
    def evaluated(self) -> list[Explored]:
        return [e for e in self.explored if e.score is not None]

    @property
    def rejected(self) -> list[Explored]:
        return [e for e in self.explored if e.rejected is not None]

    @property
    def failed(self) -> list[Explored]:
        return [e for e in self.explored if e.score is not None and not e.score.ok]


DEFAULT_MAX_AFFINE = 4  # affine levels of a measurement-guided search (a model's own depth otherwise)


@dataclass
class SearchConfig:
    beam: int = 3
    max_affine: int | None = None  # None: the evaluator's own depth (`evaluator.max_affine`)
    max_fusion: int = 2
    time_budget: float | None = None  # seconds; the search stops opening levels after it
    # a child replaces its parent only if faster by this fraction (a guard against the evaluator's
    # noise or error); None: the evaluator's own `min_gain` (0 when it has none)
    min_gain: float | None = None
    # the best schedule of the original loop structure (the original itself at the fusion and
    # affine levels, its best parallelization, tiling, unrolling after) stays in the beam as an
    # extra member at every level
    keep_root: bool = True
    max_per_parent: int | None = None  # sample at most this many candidates per schedule and level
    seed: int = 0  # for that sampling (data collection), so a rerun explores the same candidates
    # data collection: this many exploration lanes beside the beam.  A measured beam refines only
    # the best loop structures, so a model trained on it never sees a poor structure tiled and
    # parallelized, which is what the model's own beam visits (LARGE gemm: a strided interchange,
    # tiled, predicted above the order measurement found, measured at a third of its speed).  A
    # lane starts at a random schedule the beam drops, walks at random through the fusion and
    # affine levels, then follows its best refinement (`explore_lanes`)
    explore: int = 0
    # ... or, given an evaluator here (a cost model), the lanes are its own beam: at every level its
    # favourites among the lanes and all new candidates (`guided_lanes`), measured by the search's
    # evaluator, so the data covers what a search guided by that model visits, where it errs
    explore_guide: Evaluator | None = None
    explain: bool = False  # name the dependences a rejected candidate breaks (costs a second check)
    # drop the answer's reversals and skews that no later step needs (see search.simplify);
    # None: when the evaluator predicts instead of measuring (`evaluator.predicts`)
    drop_idle_enablers: bool | None = None


# Steps that refine a loop structure without changing which loop runs where: schedules that
# differ only in these are variations of one loop structure.
REFINEMENTS = ("parallelize", "tile", "unroll")


def keeps_original_structure(s: Schedule) -> bool:
    """Whether `s` only refines the original loops (parallelizes, tiles, unrolls them)."""
    return all(t.kind in REFINEMENTS for t in s.steps)


def _fingerprint(s: Schedule) -> tuple:
    L = s.lowered
    return (tuple(sorted(L.rows.items())), L.parallel, tuple(sorted(L.unroll)), L.vector)


def _distinct(pairs: list[tuple[Schedule, Score]], taken: set) -> list[tuple[Schedule, Score]]:
    """The pairs whose schedules are not in `taken` (fingerprints), once each; adds them to it."""
    out = []
    for s, sc in pairs:
        fp = _fingerprint(s)
        if fp not in taken:
            taken.add(fp)
            out.append((s, sc))
    return out


def explore_lanes(lanes: list[tuple[Schedule, Score]], children: dict[str, list[Explored]],
                  dropped: list[tuple[Schedule, Score]], taken: set, n: int, level: str,
                  rng: random.Random) -> list[tuple[Schedule, Score]]:
    """The exploration lanes' next members (SearchConfig.explore).

    At a fusion or affine level a lane moves to a random one of its scored children or stays
    ("apply nothing" is a candidate); at a refinement level it takes its best.  Missing lanes start
    at random schedules from `dropped`.  None repeats a schedule in `taken` (the beam's)."""
    out = []
    for lane in lanes:
        kids = [(e.schedule, e.score) for e in children.get(lane[0].key, []) if e.score and e.score.ok]
        options = [o for o in [lane] + kids if _fingerprint(o[0]) not in taken]
        if not options:
            continue
        pick = rng.choice(options) if level in ("fusion", "affine") else max(options, key=lambda o: o[1].speedup)
        taken.add(_fingerprint(pick[0]))
        out.append(pick)
    rest = _distinct(dropped, taken)
    return out + rng.sample(rest, min(n - len(out), len(rest)))


def guided_lanes(program: Program, guide: Evaluator, lanes: list[tuple[Schedule, Score]],
                 fresh: list[Explored], taken: set, n: int) -> list[tuple[Schedule, Score]]:
    """The exploration lanes' next members when a guide scores them (SearchConfig.explore_guide):
    the guide's `n` favourites among the lanes ("apply nothing") and every new candidate, except
    schedules in `taken` (the beam's).  Each keeps the score the search measured."""
    options = _distinct(lanes + [(e.schedule, e.score) for e in fresh if e.score is not None and e.score.ok],
                        set(taken))
    if not options:
        return []
    guess = guide.evaluate(program, [s for s, _ in options])
    order = sorted(range(len(options)), key=lambda k: -guess[k].speedup)
    return [options[k] for k in order[:n]]


def beam_search(program: Program, deps: Dependences, evaluator: Evaluator,
                config: SearchConfig | None = None,
                progress: Callable[[str, int, int], None] | None = None) -> SearchResult:
    cfg = config or SearchConfig()
    start = time.perf_counter()
    machinery = 0.0
    root = Schedule(program)
    root_score = evaluator.evaluate(program, [root])[0]
    if not root_score.ok:
        root_score = Score(1.0, "ok", "baseline", root_score.times)
    explored: list[Explored] = [Explored(root, "original", "root", root_score)]
    seen_keys = {root.key}
    scored: dict[tuple, Score] = {_fingerprint(root): root_score}
    beam: list[tuple[Schedule, Score]] = [(root, root_score)]
    lanes: list[tuple[Schedule, Score]] = []  # cfg.explore
    best = (root, root_score)
    max_affine = cfg.max_affine if cfg.max_affine is not None else \
        getattr(evaluator, "max_affine", DEFAULT_MAX_AFFINE)
    min_gain = cfg.min_gain if cfg.min_gain is not None else getattr(evaluator, "min_gain", 0.0)
    levels = level_plan(cfg.max_fusion, max_affine)
    for depth, level in enumerate(levels):
        if cfg.time_budget is not None and time.perf_counter() - start > cfg.time_budget:
            break
        t0 = time.perf_counter()
        fresh: list[Explored] = []
        children: dict[str, list[Explored]] = {}
        for parent, _ in beam + lanes:
            cands = generate(level, parent, deps)
            if cfg.max_per_parent is not None and len(cands) > cfg.max_per_parent:
                rng = random.Random(f"{cfg.seed}:{depth}:{parent.key}")
                keep = sorted(rng.sample(range(len(cands)), cfg.max_per_parent))
                cands = [cands[k] for k in keep]
            for cand in cands:
                steps = cand if isinstance(cand, tuple) else (cand,)
                key = repr(parent.steps + steps)
                if key in seen_keys:
                    continue
                seen_keys.add(key)
                child, why = parent, None
                for step in steps:  # a candidate may be a short sequence (distribute, then interchange)
                    nxt = child.then(step)
                    why = check_step(deps, child.lowered, step, nxt.lowered, cfg.explain)
                    child = nxt
                    if why is not None:
                        child = parent.then(*steps)
                        break
                entry = Explored(child, child.describe(), level, rejected=why)
                explored.append(entry)
                if why is None:
                    fresh.append(entry)
                    children.setdefault(parent.key, []).append(entry)
        machinery += time.perf_counter() - t0
        # identical schedules reached by different sequences are scored once
        todo: list[Explored] = []
        for e in fresh:
            fp = _fingerprint(e.schedule)
            if fp in scored:
                e.score = scored[fp]
            else:
                todo.append(e)
        if progress:
            progress(level, depth, len(todo))
        if todo:
            scores = evaluator.evaluate(program, [e.schedule for e in todo])
            for e, sc in zip(todo, scores):
                e.score = sc
                scored[_fingerprint(e.schedule)] = sc
        # "apply nothing" keeps every parent; with noisy scores a child must beat it by min_gain
        pool = [(s, sc, sc.speedup * (1 + min_gain)) for s, sc in beam] + \
               [(e.schedule, e.score, e.score.speedup) for e in fresh if e.score is not None and e.score.ok]
        pool.sort(key=lambda p: -p[2])
        next_beam: list[tuple[Schedule, Score]] = []
        fps: set = set()
        for s, sc, _ in pool:
            fp = _fingerprint(s)
            if fp in fps:
                continue
            fps.add(fp)
            next_beam.append((s, sc))
            if len(next_beam) == cfg.beam:
                break
        if cfg.keep_root and not any(keeps_original_structure(s) for s, _ in next_beam):
            # the plain path from the original stays open, refined as it goes: keeping the
            # original itself would tile and unroll the unparallelized loops at the later levels
            plain = next(((s, sc) for s, sc, _ in pool if keeps_original_structure(s)), None)
            next_beam.append(plain or (root, root_score))
        if cfg.explore:
            taken = {_fingerprint(s) for s, _ in next_beam}
            dropped = [(s, sc) for s, sc, _ in pool]
            if cfg.explore_guide is not None:
                lanes = guided_lanes(program, cfg.explore_guide, lanes, fresh, taken, cfg.explore)
            else:
                lanes = explore_lanes(lanes, children, dropped, taken, cfg.explore, level,
                                      random.Random(f"{cfg.seed}:explore:{depth}"))
        beam = next_beam
        if beam and beam[0][1].speedup > best[1].speedup * (1 + min_gain):
            best = beam[0]
    drop = cfg.drop_idle_enablers
    if drop is None:
        drop = getattr(evaluator, "predicts", False)
    if drop and best[0].steps:
        simple = drop_idle_enablers(deps, best[0])
        if simple.steps != best[0].steps:
            best = (simple, evaluator.evaluate(program, [simple])[0])
    # an answer must beat the original by the evaluator's margin (a model's error), or it is none
    margin = getattr(evaluator, "min_answer_gain", 0.0)
    if best[0].steps and not (best[1].ok and best[1].speedup > root_score.speedup * (1 + margin)):
        best = (root, root_score)
    return SearchResult(best[0], best[1], explored, time.perf_counter() - start, machinery, levels)
