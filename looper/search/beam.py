"""Beam search over transformation sequences, level by level (LOOPer's search).

At every level each schedule in the beam proposes its candidates (`expand`); "apply nothing
here" is always one of them (the schedule itself, already scored).  Illegal candidates are pruned
by isl before any evaluator sees them (`check`); a sequence already explored is never evaluated
again, and neither is a candidate whose lowered schedule equals one already scored (`score`).
The K best survive (`select`); exploration lanes for data collection follow beside them
(`explore`).  The answer is the best schedule seen at any level (`answer`), simplified and held
to the policy's margin over the original.  The original schedule is kept as an extra beam member,
so that the plain path (original -> parallel -> tile -> unroll) is always explored, however the
earlier levels were decided.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable

from ..caching import Memo
from ..codegen.astwalk import printed_form
from ..ir.program import Program
from ..poly.deps import Dependences
from ..poly.legality import check_step
from ..runtime.status import Status
from ..target import Target
from ..transforms.parallel import ParallelRegion, forks_more_than_once
from ..transforms.schedule import Schedule
from .candidates import ahead, generate
from .scoring import Evaluator, Explored, Score, SearchResult
from .policy import SearchPolicy
from .simplify import drop_idle_enablers


Scored = tuple[Schedule, Score]


@dataclass
class BeamState:
    """The search between levels: the beam, the lanes, what was explored and scored."""

    program: Program
    policy: SearchPolicy
    root: Scored
    explored: list[Explored]
    beam: list[Scored]
    best: Scored
    seen_keys: set[str] = field(default_factory=set)
    scored: dict[tuple, Score] = field(default_factory=dict)
    printed: dict[tuple, tuple] = field(default_factory=dict)  # identity -> `printed_form` (`select`)
    parallel: dict[tuple, Schedule | None] = field(default_factory=dict)  # identity -> `parallel_form`
    prefixes: Memo = field(default_factory=Memo)  # `check`'s outcomes of bundles' proper prefixes
    lanes: list[Scored] = field(default_factory=list)
    start: float = field(default_factory=time.perf_counter)
    machinery: float = 0.0
    base: Scored | None = None  # the schedule `keep_root` keeps refining: the original, or the start

    def refines_base(self, s: Schedule) -> bool:
        """Whether `s` only refines the base's loops (parallelizes, tiles, unrolls them)."""
        steps = self.base[0].steps if self.base is not None else ()
        return s.steps[:len(steps)] == steps and all(t.refines for t in s.steps[len(steps):])

    @staticmethod
    def begin(program: Program, evaluator: Evaluator, policy: SearchPolicy,
              start: Schedule | None = None) -> "BeamState":
        """The search before its first level: the beam holds the original, or `start` (a
        schedule to refine; the original stays the root every score is relative to)."""
        began = time.perf_counter()
        root = Schedule(program)
        root_score = evaluator.evaluate(program, [root])[0]
        if not root_score.ok:
            root_score = Score(1.0, Status.OK, "baseline", root_score.times)
        state = BeamState(program, policy, (root, root_score), [Explored(root, "original", "root", root_score)],
                          [(root, root_score)], (root, root_score), start=began)
        state.seen_keys.add(root.key)
        state.scored[root.identity] = root_score
        state.base = state.root
        if start is not None and start.steps:
            first = evaluator.evaluate(program, [start])[0]
            state.explored.append(Explored(start, start.describe(), "start", first))
            state.seen_keys.add(start.key)
            state.scored[start.identity] = first
            if first.ok:
                state.beam = [(start, first)]
                state.base = (start, first)
        return state

    def out_of_time(self) -> bool:
        budget = self.policy.time_budget
        return budget is not None and time.perf_counter() - self.start > budget

    def out_of_structure_time(self, level: str) -> bool:
        """Whether `level` chooses loop structure and the policy's budget for that is spent."""
        budget = self.policy.structure_budget
        return (level in STRUCTURE_LEVELS and budget is not None
                and time.perf_counter() - self.start > budget)


STRUCTURE_LEVELS = ("fusion", "affine")
SCORE_CHUNK = 8  # candidates scored between two looks at a budget (one build)


def keeps_original_structure(s: Schedule) -> bool:
    """Whether `s` only refines the original loops (parallelizes, tiles, unrolls them)."""
    return s.keeps_original_structure()


def distinct(pairs: list[Scored], taken: set) -> list[Scored]:
    """The pairs whose schedules are not in `taken` (identities), once each; adds them to it."""
    out = []
    for s, sc in pairs:
        if s.identity not in taken:
            taken.add(s.identity)
            out.append((s, sc))
    return out


# -- one level ----------------------------------------------------------------------------------

def expand(state: BeamState, level: str, depth: int, deps: Dependences
           ) -> tuple[list[Explored], dict[str, list[Explored]]]:
    """Every new candidate of the beam's and the lanes' schedules at `level`, checked with isl.
    Returns the legal ones and, per parent (its key), its legal children."""
    fresh: list[Explored] = []
    children: dict[str, list[Explored]] = {}
    parents = [parent for parent, _ in state.beam + state.lanes]
    with ahead(level, parents, state.policy.grown):
        for parent in parents:
            _expand_parent(state, level, depth, deps, parent, fresh, children)
    return fresh, children


def _expand_parent(state: BeamState, level: str, depth: int, deps: Dependences, parent: Schedule,
                   fresh: list[Explored], children: dict[str, list[Explored]]) -> None:
    """`expand` for one parent: its sampled candidates, each checked once."""
    for steps in sample(state.policy, generate(level, parent, deps, state.policy.target, state.policy.grown), depth, parent):
        if state.policy.sequential:
            steps = without_threads(steps)
        key = repr(parent.steps + steps)
        if key in state.seen_keys:
            continue
        state.seen_keys.add(key)
        entry = check(parent, steps, deps, level, state.policy.explain, state.prefixes)
        if entry.rejected is None and state.policy.sequential and entry.schedule.lowered.parallel:
            entry.rejected = state.policy.sequential
        state.explored.append(entry)
        if entry.rejected is None:
            fresh.append(entry)
            children.setdefault(parent.key, []).append(entry)


def without_threads(steps: tuple) -> tuple:
    """A bundled candidate (an expansion or a cache tile, a parallel loop, then a register tile)
    without its parallel steps, for a search kept sequential (`policy.sequential`): rejected
    whole for its threads, the bundles left doitgen MEDIUM (3.4 ms, too short to pay for a
    team) with no register tile at all.  A lone parallel step stays, to be rejected.  Every step
    that starts a team on the side does without it (`Transform.sequential`): a pack's copy ran
    on the threads, and every pack of syrk MEDIUM (1.5 ms) was rejected for it, and with the
    packs every register tile of its product."""
    steps = tuple(t.sequential() for t in steps)
    if len(steps) < 2:
        return steps
    return tuple(t for t in steps if not t.threads)


def sample(policy: SearchPolicy, cands: list, depth: int, parent: Schedule) -> list:
    """At most `policy.max_per_parent` of a parent's candidates, the same ones on every rerun;
    with `policy.stratified`, drawn from each kind in turn (the kind of a candidate's last step)."""
    if policy.max_per_parent is None or len(cands) <= policy.max_per_parent:
        return cands
    rng = random.Random(f"{policy.seed}:{depth}:{parent.key}")
    if not policy.stratified:
        keep = sorted(rng.sample(range(len(cands)), policy.max_per_parent))
        return [cands[k] for k in keep]
    return [cands[k] for k in sorted(stratified(cands, policy.max_per_parent, rng))]


def stratified(cands: list, n: int, rng: random.Random) -> list[int]:
    """`n` indices of `cands`, one of each kind in turn (kinds in random order, a random member
    each): a tile level offers hundreds of cache tiles and a dozen register tiles, and a uniform
    draw of five measures the tiles (data collection for a model of the whole space)."""
    by_kind: dict[str, list[int]] = {}
    for k, c in enumerate(cands):
        by_kind.setdefault(c[-1].kind, []).append(k)
    pools = [rng.sample(ks, len(ks)) for _, ks in sorted(by_kind.items())]
    rng.shuffle(pools)
    out: list[int] = []
    while len(out) < n:
        for pool in pools:
            if pool and len(out) < n:
                out.append(pool.pop())
    return out


def check(parent: Schedule, steps: tuple, deps: Dependences, level: str, explain: bool,
          prefixes: Memo | None = None) -> Explored:
    """`parent` followed by `steps` (one candidate, possibly a short sequence), each step checked
    for legality in turn; the first illegal one rejects the candidate.  `prefixes` keeps each
    proper prefix's outcome for the next candidate that starts with it: a bundle's enablers
    (an expansion, distributions, a parallel loop) come before each of its register shapes, and
    symm's model search applied and checked them again for every one."""
    child, why = parent, None
    for n, step in enumerate(steps, 1):
        def apply(child: Schedule = child, step=step) -> tuple[Schedule, str | None]:
            nxt = child.then(step)
            return nxt, check_step(deps, child.lowered, step, nxt.lowered, explain)
        try:
            if prefixes is not None and n < len(steps):
                child, why = prefixes.lookup((parent.key, steps[:n]), apply)
            else:
                child, why = apply()
        except Exception as e:  # a bug in one transformation costs its candidate, not the search
            unlowered = Schedule(parent.program, parent.steps + tuple(steps))
            where = " ; ".join(t.kind for t in steps)
            return Explored(unlowered, f"{parent.describe()} ; {where}", level,
                            rejected=f"internal error in {step.kind} ({type(e).__name__}: {e}); please report it")
        if why is not None:
            child = parent.then(*steps)
            break
    return Explored(child, None, level, rejected=why)


def score(state: BeamState, fresh: list[Explored], evaluator: Evaluator, level: str = "") -> None:
    """Scores for the new candidates: identical lowered schedules reached by different sequences
    are scored once.  Under a budget (the search's, or at a structure level the structure
    budget), in chunks, until it is spent: the rest stay unscored, and `select` passes them over
    (an EXTRALARGE candidate runs for seconds, and one refinement level scores dozens)."""
    todo: list[Explored] = []
    for e in fresh:
        known = state.scored.get(e.schedule.identity)
        if known is not None:
            e.score = known
        else:
            todo.append(e)
    budgeted = state.policy.time_budget is not None or \
        (level in STRUCTURE_LEVELS and state.policy.structure_budget is not None)
    step = SCORE_CHUNK if budgeted else max(1, len(todo))
    for k in range(0, len(todo), step):
        if budgeted and (state.out_of_time() or state.out_of_structure_time(level)):
            break
        chunk = todo[k:k + step]
        for e, sc in zip(chunk, evaluator.evaluate(state.program, [e.schedule for e in chunk])):
            e.score = sc
            state.scored[e.schedule.identity] = sc


def unscored(fresh: list[Explored], scored: dict) -> int:
    """How many new candidates the evaluator will be asked about (progress display)."""
    return sum(1 for e in fresh if e.schedule.identity not in scored)


def select(state: BeamState, fresh: list[Explored], deps: Dependences | None = None,
           evaluator: Evaluator | None = None) -> list[tuple[Schedule, Score, float]]:
    """The next beam: the best `policy.beam` distinct schedules among the parents ("apply
    nothing", which a child must beat by `min_gain`) and their scored children, plus the best
    refinement of the original loop structure when none of them is one, (`keep_sequential`)
    the best schedule without threads when all of them start a team, and (`keep_parallel`, with
    `deps` and `evaluator`) the one whose free loops run best on threads when none of them has a
    loop that may (`best_on_threads`).  Returns the ranked pool.

    Distinct means printing different C (`printed_form`): schedules whose rows differ only in
    the constants that order statements can print the same loops (cholesky's fuse then
    distribute gives back the original), and two copies of one program in a beam of three crowded out LARGE cholesky's
    isl schedule, the start of its 5.8x answer."""
    gain = state.policy.min_gain
    pool = [(s, sc, sc.speedup * (1 + gain)) for s, sc in state.beam] + \
           [(e.schedule, e.score, e.score.speedup) for e in fresh if e.score is not None and e.score.ok]
    pool.sort(key=lambda p: -p[2])
    next_beam: list[Scored] = []
    ids: set = set()
    texts: set[tuple] = set()
    for s, sc, _ in pool:
        if s.identity in ids:
            continue
        ids.add(s.identity)
        text = state.printed.get(s.identity)
        if text is None:
            text = state.printed[s.identity] = printed_form(s.lowered)
        if text in texts:
            continue
        texts.add(text)
        next_beam.append((s, sc))
        if len(next_beam) == state.policy.beam:
            break
    if state.policy.keep_root and not any(state.refines_base(s) for s, _ in next_beam):
        # the plain path from the original (or the start) stays open, refined as it goes: keeping
        # the original itself would tile and unroll the unparallelized loops at the later levels
        plain = next(((s, sc) for s, sc, _ in pool if state.refines_base(s)), None)
        next_beam.append(plain or state.base)
    if state.policy.keep_sequential and all(s.lowered.parallel for s, _ in next_beam):
        taken = {s.identity for s, _ in next_beam}
        alone = next(((s, sc) for s, sc, _ in pool if not s.lowered.parallel and s.identity not in taken), None)
        if alone is not None:
            next_beam.append(alone)
    if state.policy.keep_both_origins:
        # the original's structure, refined, has its own place (`keep_root`)
        chosen = [s for s, _ in next_beam if not keeps_original_structure(s)]
        origins = {s.from_isl for s in chosen}
        if len(origins) == 1:
            taken = {s.identity for s, _ in next_beam}
            other = next(((s, sc) for s, sc, _ in pool if not keeps_original_structure(s)
                          and s.from_isl not in origins and s.identity not in taken), None)
            if other is not None:
                next_beam.append(other)
    if state.policy.keep_parallel and state.policy.sequential is None and evaluator is not None:
        next_beam += kept_free(state, deps, evaluator, pool, next_beam)
    state.beam = next_beam
    if next_beam and next_beam[0][1].speedup > state.best[1].speedup * (1 + gain):
        state.best = next_beam[0]
    return pool


def parallel_form(state: BeamState, deps: Dependences, s: Schedule) -> Schedule | None:
    """`s` with its outermost free loops on threads, the parallel level's first candidate (`s`
    itself when it already runs a loop on threads; None: no loop of it may), remembered per
    schedule in `state.parallel`."""
    if s.identity not in state.parallel:
        from ..transforms import Parallelize
        from ..transforms.registry import CandidateContext
        if s.lowered.parallel:
            form = s
        else:
            ctx = CandidateContext(s.lowered, deps, state.policy.target, grown=state.policy.grown)
            first = next(Parallelize.candidates(ctx), None)
            form = s.then(first) if first is not None else None
        state.parallel[s.identity] = form
    return state.parallel[s.identity]


def may_run_parallel(state: BeamState, deps: Dependences, s: Schedule) -> bool:
    """Whether `s` runs a loop on threads or has one that carries no dependence."""
    return parallel_form(state, deps, s) is not None


# Schedules with free loops whose parallel form `best_on_threads` scores, best first
LOOKAHEAD = 12


def kept_free(state: BeamState, deps: Dependences, evaluator: Evaluator, pool: list, beam: list[Scored]
              ) -> list[Scored]:
    """The member `keep_parallel` adds to `beam` (none when a member may already run a loop in
    parallel, or no candidate of `pool` may)."""
    if any(may_run_parallel(state, deps, s) for s, _ in beam):
        return []
    taken = {s.identity for s, _ in beam}
    freed = best_on_threads(state, deps, evaluator, [(s, sc) for s, sc, _ in pool if s.identity not in taken])
    return [freed] if freed is not None else []


def best_on_threads(state: BeamState, deps: Dependences, evaluator: Evaluator, pool: list[Scored]
                    ) -> Scored | None:
    """Of the first `LOOKAHEAD` schedules of `pool` (best first) that may run a loop in parallel,
    the one whose outermost free loops run best on threads, by `evaluator`'s score of that
    parallel form; the schedule itself is kept, and the parallel level proposes its loops.  A
    wavefront is slower than the original until its free loop runs on threads: scored as it
    is, the beam drops it before that level."""
    freed: list[Scored] = []
    forms: list[Schedule] = []
    for s, sc in pool:
        if len(freed) == LOOKAHEAD:
            break
        form = parallel_form(state, deps, s)
        if form is not None:
            freed.append((s, sc))
            forms.append(form)
    if not freed:
        return None
    scores = evaluator.evaluate(state.program, forms)
    ranked_ = sorted(zip(freed, scores), key=lambda p: -(p[1].speedup if p[1].ok else 0.0))
    return ranked_[0][0] if ranked_[0][1].ok else None


def explore(state: BeamState, pool: list, fresh: list[Explored], children: dict[str, list[Explored]],
            level: str, depth: int) -> None:
    """Move the exploration lanes (`policy.explore`) one level on, next to the new beam."""
    policy = state.policy
    taken = {s.identity for s, _ in state.beam}
    if policy.explore_guide is not None:
        state.lanes = guided_lanes(state.program, policy.explore_guide, state.lanes, fresh, taken, policy.explore)
    else:
        state.lanes = explore_lanes(state.lanes, children, [(s, sc) for s, sc, _ in pool], taken,
                                    policy.explore, level, random.Random(f"{policy.seed}:explore:{depth}"))


def explore_lanes(lanes: list[Scored], children: dict[str, list[Explored]], dropped: list[Scored],
                  taken: set, n: int, level: str, rng: random.Random) -> list[Scored]:
    """The exploration lanes' next members (SearchPolicy.explore).

    At a fusion or affine level a lane moves to a random one of its scored children or stays
    ("apply nothing" is a candidate); at a refinement level it takes its best.  Missing lanes start
    at random schedules from `dropped`.  None repeats a schedule in `taken` (the beam's)."""
    out = []
    for lane in lanes:
        kids = [(e.schedule, e.score) for e in children.get(lane[0].key, []) if e.score and e.score.ok]
        options = [o for o in [lane] + kids if o[0].identity not in taken]
        if not options:
            continue
        pick = rng.choice(options) if level in ("fusion", "affine") else max(options, key=lambda o: o[1].speedup)
        taken.add(pick[0].identity)
        out.append(pick)
    rest = distinct(dropped, taken)
    return out + rng.sample(rest, min(n - len(out), len(rest)))


def guided_lanes(program: Program, guide: Evaluator, lanes: list[Scored], fresh: list[Explored],
                 taken: set, n: int) -> list[Scored]:
    """The exploration lanes' next members when a guide scores them (SearchPolicy.explore_guide):
    the guide's `n` favourites among the lanes ("apply nothing") and every new candidate, except
    schedules in `taken` (the beam's).  Each keeps the score the search measured."""
    options = distinct(lanes + [(e.schedule, e.score) for e in fresh if e.score is not None and e.score.ok],
                       set(taken))
    if not options:
        return []
    guess = guide.evaluate(program, [s for s, _ in options])
    order = sorted(range(len(options)), key=lambda k: -guess[k].speedup)
    return [options[k] for k in order[:n]]


# -- the whole search ---------------------------------------------------------------------------

def answer(state: BeamState, deps: Dependences, evaluator: Evaluator) -> Scored:
    """The best schedule seen, without the enablers it does not need (when the policy says so),
    and only if it beats the original by the policy's margin; with one parallel region when the
    policy asks for it."""
    best = state.best
    if state.policy.drop_idle_enablers and best[0].steps:
        simple = drop_idle_enablers(deps, best[0])
        if simple.steps != best[0].steps:
            best = (simple, evaluator.evaluate(state.program, [simple])[0])
    root_score = state.root[1]
    margin = state.policy.min_answer_gain
    if best[0].steps and not (best[1].ok and best[1].speedup > root_score.speedup * (1 + margin)):
        best = state.root
    if state.policy.regions and forks_more_than_once(best[0].lowered):
        region = best[0].then(ParallelRegion())
        best = (region, evaluator.evaluate(state.program, [region])[0])  # the same prediction
    return best


def beam_search(program: Program, deps: Dependences, evaluator: Evaluator,
                policy: SearchPolicy | None = None,
                progress: Callable[[str, int, int], None] | None = None,
                start: Schedule | None = None) -> SearchResult:
    """Search `program`'s transformation sequences level by level with `evaluator`'s scores
    (see the module docstring); `progress(level, depth, candidates to score)` at each level.
    `start`: the beam begins from it rather than from the original (its refinements)."""
    policy = policy or SearchPolicy()
    if policy.target is None:
        policy = policy.with_(target=Target.detect())
    state = BeamState.begin(program, evaluator, policy, start)
    levels = policy.levels
    for depth, level in enumerate(levels):
        if state.out_of_time():
            break
        if state.out_of_structure_time(level):
            continue
        t0 = time.perf_counter()
        fresh, children = expand(state, level, depth, deps)
        state.machinery += time.perf_counter() - t0
        if progress:
            progress(level, depth, unscored(fresh, state.scored))
        score(state, fresh, evaluator, level)
        pool = select(state, fresh, deps, evaluator)
        if policy.explore:
            explore(state, pool, fresh, children, level, depth)
    best = answer(state, deps, evaluator)
    return SearchResult(best[0], best[1], state.explored, time.perf_counter() - state.start,
                        state.machinery, levels)
