"""`tune(program, options, target) -> Answer`: one tuning run, in one place.

After TVM's `auto_schedule(task, policy, options)`.  The stages, in order:

1. **dependences** of the program (`poly.deps`);
2. **the search** (`prepare`): the policy for the evaluator, the evaluators (the cost model,
   measurement as users run programs), a stand-in when the program is long (`search.proxy`),
   restraint for kernels too short for threads (`search.restraint`);
3. **its end**: a measuring search confirms its best candidates against the original
   (`search.confirm`); the hybrid measures its budget of candidates and confirms the best
   (`search.hybrid`);
4. **verification and fallback** (`search.verify.check_answer`): the answer is replayed at a small
   size, built with the user's compiler and compared exactly with the original, a model answer is
   timed against the original, and a refused answer gives way to the next-best candidate, then to
   the original.

The command line, the Python API, `looper bench` and the benchmark scripts all go through `tune`,
so what a benchmark times is what `looper optimize` writes.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Callable

from ..ir.program import Program
from ..ir.schedule import original as original_schedule
from ..lang.resize import Origin, Resized
from ..poly.deps import Dependences, compute_dependences, dependences_of
from ..poly.flops import instances
from ..runtime.measurements import MeasurementStore
from ..runtime.ompenv import OmpEnv
from ..runtime.userprogram import UserProgram, UserTimer
from ..runtime.verify import Toolchain
from ..search.beam import beam_search
from ..search.scoring import SearchResult
from ..search.confirm import confirm
from ..search.evaluators import ExecutionEvaluator, ModelEvaluator
from ..search.budget import TERMS_LANES, Budgeted, OnStandIn, Ranking, budgeted
from ..search.hybrid import Verified
from ..search.neighbours import neighbours
from ..search.policy import SearchPolicy, policy_for, refining
from ..search.proxy import StandIn, automatic, carry, regime_apart, rounds_on_program, stand_in
from ..search.restraint import estimated_seconds, restraint, team_start
from ..search.verify import AnswerCheck, VerifyOptions, check_answer
from ..target import Target
from ..transforms.registry import TRANSFORMS
from ..transforms.schedule import Schedule
from .options import Evaluator, TuneOptions

Progress = Callable[[int, int], None]
LevelProgress = Callable[[str, int, int], None]


@dataclass
class Search:
    """A ready search: its policy, the evaluator that scores the beam, and (measure, hybrid) the
    measuring evaluator.  `run` returns the answer; `verified` holds hybrid's measured candidates."""

    program: Program
    kind: Evaluator
    policy: SearchPolicy
    evaluator: object
    measure: ExecutionEvaluator | None = None
    options: TuneOptions = field(default_factory=TuneOptions)
    verified: list[Verified] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the search did differently from what was asked
    # a stand-in with fewer time steps or smaller sizes (`search.proxy`), and its evaluator: a
    # measuring search's beam runs on it, the hybrid's rounds do
    stand_in: StandIn | None = None
    stand_in_measure: ExecutionEvaluator | None = None
    budget: Budgeted | None = None  # the hybrid's measurements and confirmation
    first_region: float = 0.0  # the target's mean cost of a team's start, charged to parallel candidates

    def run(self, deps: Dependences, progress: LevelProgress | None = None, keep_open: bool = False) -> SearchResult:
        """The search's answer (`keep_open`: the measuring evaluator stays usable after it, for
        reports that time the answer again; `close()` it then)."""
        try:
            if self.stand_in is not None and self.kind is Evaluator.MEASURE:
                found = beam_search(self.stand_in.program, compute_dependences(self.stand_in.program),
                                    self.stand_in_measure, self.policy, progress)
                result = carry(found, self.program, deps)
            else:
                result = beam_search(self.program, deps, self.evaluator, self.policy, progress)
            if self.kind is Evaluator.MEASURE and self.policy.confirm_top > 1:
                result = confirm(self.program, result, self.measure, self.policy.confirm_top)
            if self.kind is Evaluator.HYBRID:
                h = self.options.hybrid
                refine = refining(self.policy, result.seconds)

                def grow(structure: Schedule) -> SearchResult:
                    return beam_search(self.program, deps, self.evaluator, refine, start=structure)

                def vary(s: Schedule) -> list[tuple[Schedule, float]]:
                    found = neighbours(s, deps, self.policy.target)
                    scores = self.evaluator.evaluate(self.program, found) if found else []
                    return [(n, sc.speedup) for n, sc in zip(found, scores) if sc.ok]

                on = self._rounds_on(result)
                result, self.verified, self.budget = budgeted(self.program, result, self.measure, h.rounds,
                                                              h.per_round, h.confirm, regions=self.policy.regions,
                                                              first_region=self.first_region, grow=grow,
                                                              follow=h.follow, stand_in=on, vary=vary,
                                                              analytic=self.evaluator.analytic)
                self.notes.extend(self.budget.notes)
            user = self.measure.user if self.measure is not None else None
            if user is not None and user.skipped is not None:
                self.notes.append(f"the finalists were timed in looper's harness, not in your program: {user.skipped}")
            return result
        finally:
            if not keep_open:
                self.close()

    def _rounds_on(self, ranking: SearchResult) -> OnStandIn | None:
        """Where the hybrid's rounds run: on the stand-in, unless the ranking's candidates would
        run there for only a few team starts (`search.proxy.rounds_on_program`) or it runs in a
        faster memory regime than the program (`search.proxy.regime_apart`)."""
        if self.stand_in is None:
            return None
        on_stand_in, on_program = self.stand_in_measure.original_seconds(), self.measure.original_seconds()
        predicted = ranking.best_score.speedup
        h = self.options.hybrid
        work_ratio = instances(self.program) / max(instances(self.stand_in.program), 1)
        why = (rounds_on_program(on_stand_in, on_program, predicted, self.first_region)
               or regime_apart(on_stand_in, on_program, work_ratio, predicted, h.rounds * h.per_round))
        if why is not None:
            self.notes.append(why)
            return None
        self.notes.append(f"candidates measured with {self.stand_in.describe()}; the best timed again at the "
                          "program's sizes")
        return OnStandIn(self.stand_in.program, dependences_of(self.stand_in.program), self.stand_in_measure)

    def close(self) -> None:
        TRANSFORMS.abandon()
        for evaluator in (self.measure, self.stand_in_measure):
            if evaluator is not None:
                evaluator.close()


@dataclass
class Answer:
    """A tuning run's outcome: the answer, how it was found and checked."""

    program: Program
    result: SearchResult
    evaluator: Evaluator
    target: Target
    verified: list[Verified] = field(default_factory=list)  # hybrid: the candidates measured
    notes: list[str] = field(default_factory=list)
    omp_env: OmpEnv | None = None  # the environment measurements were taken in (None: none taken)
    environment: list[str] = field(default_factory=list)  # the answer's speed in each OpenMP environment
    check: AnswerCheck | None = None  # verification and the speed guard (None: not run)
    seconds: float = 0.0  # the whole run: search, confirmation, verification
    measured: int = 0  # candidates the search compiled and ran (memo answers not counted)
    original_seconds: float | None = None  # the original's kernel time, when the search measured it
    budget: Budgeted | None = None  # hybrid: every ranked candidate, what the rounds measured

    @property
    def check_seconds(self) -> float:
        """Of `seconds`, what verifying the answer and the speed guard took (0: not run)."""
        return self.check.verify_seconds + self.check.guard_seconds if self.check is not None else 0.0


def never_runs(program: Program) -> str | None:
    """Why the cost model cannot describe a program with a statement that never runs at these
    sizes (`-D TSTEPS=0`, a loop whose range is empty): its features need every statement's loop
    bounds.  None when every statement runs."""
    idle = [s for s in program.statements if s.domain.is_empty()]
    if not idle:
        return None
    lines = ", ".join(str(s.line) for s in idle[:3]) + (", ..." if len(idle) > 3 else "")
    return (f"{'a statement' if len(idle) == 1 else f'{len(idle)} statements'} (line {lines}) never "
            f"run{'s' if len(idle) == 1 else ''} at these sizes, which the cost model cannot describe")


def prepare(program: Program, options: TuneOptions, target: Target, model=None,
            store: MeasurementStore | None = None, progress: Progress | None = None,
            origin: Origin = Origin()) -> Search:
    """The search of `program` that `options` ask for on `target`.  `model`: a loaded (network,
    metadata) pair (None: `options.model`, else the shipped weights, loaded here); `store`: the
    measurement memo (None: `options.db`'s, when `options.memo`); `origin`: where the program
    was parsed from (a stand-in is parsed from it again at smaller sizes)."""
    kind = Evaluator.parse(options.evaluator)
    notes = []
    encodable = True
    if kind.predicts:
        from ..costmodel.features import unencodable
        why = unencodable(program) or never_runs(program)
        if why is not None:
            encodable = False
            if kind is Evaluator.MODEL:
                notes.append(f"{why}: measuring instead of predicting")
                kind = Evaluator.MEASURE
            else:
                notes.append(f"{why}: ranked by the analytic cost terms alone")
    if kind is Evaluator.MODEL:
        # nothing is timed: slow candidate work (isl's scheduler) starts on the program's own
        # schedule now, on another core while the model loads and the search gets ready, for the
        # search's first level to collect (`Transform.ahead`; `Search.close` stops what the
        # search never asks for)
        TRANSFORMS.start_ahead(original_schedule(program), grown=True)
    measure = None
    if kind.measures:
        if store is None and options.memo:
            store = MeasurementStore(options.db)
        measure = _measuring(program, options, target, store, progress)
        measure.user = user_timer(options, target, origin)
    made, proxy_measure = _stand_in(program, options, kind, target, store, progress, notes, origin, measure)
    first_region = team_start(target)

    @functools.cache
    def original() -> float:
        """The original's time: measured when the search measures, else the terms' estimate."""
        return measure.original_seconds() if measure is not None else estimated_seconds(program, target)

    scorer, meta = (measure, None) if kind is Evaluator.MEASURE else \
        _predicting(program, kind, options, target, model, first_region, original() if encodable else None)
    policy = policy_for(kind.value, meta, beam=options.beam, max_affine=options.max_affine,
                        max_fusion=options.max_fusion, time_budget=options.budget,
                        structure_budget=options.structure_budget, explain=options.explain or None, target=target)
    if isinstance(scorer, Ranking):  # the terms' favourites beside the beam (`budget.TERMS_LANES`)
        policy = policy.with_(explore=TERMS_LANES, explore_guide=scorer.by_terms())
    why = restraint(original(), target, estimated=measure is None)
    if why is not None:
        policy = policy.with_(sequential=why)
        notes.append(why)
    return Search(program, kind, policy, scorer, measure, options, notes=notes, stand_in=made,
                  stand_in_measure=proxy_measure, first_region=first_region)


def _predicting(program: Program, kind: Evaluator, options: TuneOptions, target: Target, model,
                first_region: float, original: float | None) -> tuple[object, dict]:
    """The scorer of a search that predicts, and its model's metadata: the model (`model`, else
    `options.model`'s, else the shipped one), or the ranking over it and the analytic terms (the
    hybrid); without the model where the program cannot be encoded (`original` None)."""
    if model is None:
        from ..costmodel.inference import load_inference_model
        model = load_inference_model(options.model)
    net, meta = model
    predictor = ModelEvaluator(program, net, meta, target, first_region, original) if original is not None else None
    return (predictor if kind is Evaluator.MODEL else Ranking(program, target, predictor)), meta


def _measuring(program: Program, options: TuneOptions, target: Target, store, progress) -> ExecutionEvaluator:
    return ExecutionEvaluator(program, repeats=options.repeats, threads=target.threads,
                              flags=target.cflags, store=store, memoize=options.memo, progress=progress,
                              omp_env=options.omp_env, protocol=options.protocol, jobs=target.cores)


def _stand_in(program: Program, options: TuneOptions, kind: Evaluator, target: Target, store, progress,
              notes: list[str], origin: Origin, measure: ExecutionEvaluator | None
              ) -> tuple[StandIn | None, ExecutionEvaluator | None]:
    """The stand-in `options.proxy` asks for (a measuring search's beam, or the hybrid's rounds,
    run on it), or, for the hybrid, the one a long program gets (`search.proxy.automatic`), and
    its evaluator."""
    proxy = options.proxy
    if proxy is None and kind is Evaluator.HYBRID and measure is not None:
        proxy = automatic(program, measure.original_seconds())
    if proxy is None:
        return None, None
    made = stand_in(program, proxy, origin) if kind.measures else "a search that measures nothing needs none"
    if isinstance(made, str):
        notes.append(f"no stand-in ({proxy.describe()}): {made}")
        return None, None
    if kind is not Evaluator.HYBRID:  # the hybrid says where its rounds ran once it decides (`Search._rounds_on`)
        notes.append(f"candidates measured with {made.describe()}; the best replayed and timed again "
                     "at the program's sizes")
    return made, _measuring(made.program, options, target, store, progress)


def verify_options(options: TuneOptions, target: Target, origin: Origin = Origin()) -> VerifyOptions:
    """How `options` ask the answer to be checked, with the target's compiler and threads."""
    return VerifyOptions(Toolchain(target.cc, tuple(target.cflags)), target.threads, options.omp_env, options.verify,
                         options.speed_guard, options.max_alternatives, options.max_timed,
                         user=user_program(options, target, origin))


def user_program(options: TuneOptions, target: Target, origin: Origin) -> UserProgram | None:
    """The user's own program around a C file's scop, where judgements time their runs (None:
    a Python program, `judge_in="harness"`, or runs timed warm)."""
    if origin.cfile is None or options.judge_in != "program" or not options.protocol.cold:
        return None
    return UserProgram(origin.cfile, origin.index, target.cc, tuple(target.cflags), tuple(options.link))


def user_timer(options: TuneOptions, target: Target, origin: Origin) -> UserTimer | None:
    user = user_program(options, target, origin)
    return UserTimer(user, target.threads, options.omp_env, options.protocol, jobs=target.cores) \
        if user is not None else None


def tune(program: Program, options: TuneOptions, target: Target, *, model=None,
         store: MeasurementStore | None = None, resized: Resized | None = None, index: int = 0,
         progress: Progress | None = None, level_progress: LevelProgress | None = None,
         origin: Origin = Origin()) -> Answer:
    """Tune `program` for `target` as `options` say (the stages in the module docstring).
    `resized`: the program at the verification size (`lang.resize`; its `index`-th program is this
    one), None to skip verification and the speed guard.  `origin`: where the program was parsed
    from (default: its own Python source)."""
    t0 = time.perf_counter()
    search = prepare(program, options, target, model, store, progress, origin)
    deps = compute_dependences(program)
    result = search.run(deps, progress=level_progress, keep_open=True)
    check, lines = None, []
    try:
        if resized is not None:
            result, check = check_answer(program, result, search.kind.value, search.policy, deps, resized, index,
                                         verify_options(options, target, origin), search.verified)
        if options.report_environment and search.measure is not None and result.best.steps \
                and result.best.lowered.parallel:
            from ..search.report import environment_lines
            lines = environment_lines(program, search.measure, result.best)
    finally:
        search.close()
    env = options.omp_env if search.measure is not None else None
    measured = sum(e.measured for e in (search.measure, search.stand_in_measure) if e is not None)
    return Answer(program, result, search.kind, target, list(search.verified), list(search.notes), env, lines, check,
                  time.perf_counter() - t0, measured, search.measure.baseline if search.measure else None,
                  search.budget)
