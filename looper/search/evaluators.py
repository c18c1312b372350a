"""Evaluators: what the search asks for a score.  Both behind one protocol (`beam.Evaluator`).

`ExecutionEvaluator` measures, by composing the runtime's parts: a builder (variants -> binary,
cached, several candidates to one C file to amortize gcc), a runner (binary -> times, outputs and
a `Status`), the reference (the original's outputs and time, and the FMA-rounding excuse), time
limits, and the SQLite memo (nothing is measured twice).  A candidate that crashes, times out or
computes something else is reported and never scored.

`ModelEvaluator` predicts with the learned cost model, relative to its prediction for the
original (so a per-program bias of the model cancels).
"""
from __future__ import annotations

import contextlib
import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from ..codegen.harness import HARNESS_VERSION
from ..codegen.inplace import answer_code
from ..forked import forked_map
from ..ir.program import Program
from ..runtime.builder import ProgramBuilder
from ..runtime.compile import OPT_FLAGS, CompileError
from ..target.isa import compiler_id
from ..runtime.limits import TimeLimits
from ..target.host import cores, cpu_id, default_threads, load_average
from ..runtime.measurements import Measurement, MeasurementStore, Provenance, measurement_key
from ..runtime.ompenv import DEFAULT_ENV, TUNED_ENV, OmpEnv
from ..runtime.reference import Reference
from ..runtime.run import AS_RUN, Protocol, Runner, runs_per_process
from ..runtime.status import Status
from ..runtime.userprogram import PROBE_LIMIT, UserTimer
from ..transforms.schedule import Schedule
from .restraint import team_cost
from .scoring import Score


def speedup_over(baseline: float | None, seconds: float | None) -> float | None:
    """The speedup of a run of `seconds` over the original's `baseline` (None if either is)."""
    return baseline / seconds if baseline and seconds else None


class ExecutionEvaluator:
    """Scores by building, checking and timing every candidate (memoized)."""

    name = "measure"

    def __init__(self, program: Program, *, repeats: int | None = 3, threads: int | None = None,
                 flags: tuple[str, ...] = OPT_FLAGS, store: MeasurementStore | None = None,
                 memoize: bool = True, batch_size: int = 8, slow_factor: float = 2.0,
                 timeout_factor: float = 4.0, min_timeout: float = 5.0,
                 progress: Callable[[int, int], None] | None = None, timing_lock=None,
                 memo_only: bool = False, omp_env: OmpEnv = DEFAULT_ENV, protocol: Protocol = AS_RUN,
                 jobs: int = 1):
        self.program = program
        # samples per candidate; None: as many as the protocol ranks by, for the original's time
        self.auto = repeats is None
        self.repeats = repeats or protocol.rank_runs
        self.threads = threads or default_threads()
        self.builder = ProgramBuilder(program, tuple(flags), jobs=jobs)  # `jobs`: compilers at once
        self.omp_env = omp_env  # what every run adds to the user's environment (runtime.ompenv)
        self.protocol = protocol  # how runs are timed (`runtime.run.Protocol`: as users run them)
        self.runner = Runner(self.threads, timing_lock or contextlib.nullcontext, omp_env, protocol)
        self.limits = TimeLimits(slow_factor, timeout_factor, min_timeout)
        self.workdir = Path(tempfile.mkdtemp(prefix="looper-eval-"))
        self.reference = Reference(self.builder, self.runner, self.limits, self.workdir)
        self.store = store if store is not None else (MeasurementStore() if memoize else None)
        self.batch_size = batch_size
        self.progress = progress
        self.baseline: float | None = None
        self.baseline_times: list[float] = []
        self.measured = 0  # candidates actually run (memo misses)
        # replay an earlier search from the memo alone: a miss is "unmeasured", nothing is run
        self.memo_only = memo_only
        # where `time_together` judges (`runtime.userprogram`): the user's own program, when the
        # input is a C file that has one; None (or when it cannot time the region): this harness
        self.user: UserTimer | None = None
        # why each schedule of the last `time_together` has no times (None where it has), for reports
        self.failed: tuple[str | None, ...] = ()

    @property
    def flags(self) -> tuple[str, ...]:
        return self.builder.flags

    @property
    def build_flags(self) -> tuple[str, ...]:
        return self.builder.build_flags

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
        if self.user is not None:
            self.user.close()

    def __del__(self):  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    # -- the memo -----------------------------------------------------------------------------------
    def memo_key(self, schedule: Schedule, repeats: int | None = None) -> str:
        """What a measurement of `schedule` depends on: program, kernel C, compiler, flags, CPU,
        threads, repeats, harness."""
        repeats = self.repeats if repeats is None else repeats
        count = "auto" if self.auto and repeats == self.repeats else str(repeats)
        parts = [self.program.fingerprint, ProgramBuilder.code(schedule.lowered), compiler_id(),
                 " ".join(self.flags), cpu_id(), str(self.threads), count, f"harness{HARNESS_VERSION}"]
        if self.omp_env != TUNED_ENV:  # every memo entry before environments were a choice was tuned
            parts.append(f"env:{self.omp_env.assignments()}")
        if self.protocol.cold:
            parts.append("as-run")
        if self.program.preamble is not None:  # the harness runs the user's preamble before each call
            parts.append(f"preamble:{self.program.preamble.flush_kib}")
        return measurement_key(*parts)

    @property
    def environment(self) -> str:
        """How this evaluator's times are taken, as data points record it: the OpenMP settings it
        adds, the protocol, the harness (`datagen.environment`)."""
        preamble = "" if self.program.preamble is None else f"; flush {self.program.preamble.flush_kib} KiB"
        return f"{self.omp_env.assignments() or 'default'}; {self.protocol.name}; harness{HARNESS_VERSION}{preamble}"

    def _record(self, key: str, m: Measurement, schedule: Schedule, store: MeasurementStore | None) -> None:
        if store is not None:
            p = self.program
            store.put(key, m, program=p.name, size=p.size_label, schedule=schedule.describe(),
                      compiler=compiler_id(), flags=" ".join(self.flags), cpu=cpu_id(), threads=self.threads,
                      provenance=Provenance(json.dumps(schedule.to_json()), p.fingerprint, p.path,
                                            json.dumps(p.sizes, sort_keys=True), self.environment))

    # -- the original -------------------------------------------------------------------------------
    def _set_baseline(self, times: list[float]) -> None:
        self.baseline_times = list(times)
        self.baseline = self.protocol.summary(times)
        self.limits.best = self.limits.best or self.baseline

    def _ensure_baseline(self, need_reference: bool, repeats: int, store: MeasurementStore | None) -> None:
        """The original's time (from the memo when it has it) and, when a candidate must be
        checked, its outputs: the reference every candidate's outputs are compared with."""
        root = Schedule(self.program)
        key = self.memo_key(root, repeats)
        if self.baseline is None and store is not None:
            m = store.get(key)
            if m is not None and m.status == Status.OK and m.times:
                self._set_baseline(m.times)
                if self.auto:
                    self.repeats = self.protocol.runs(self.baseline, judging=False)
        if self.baseline is not None and (self.reference.has_outputs or not need_reference):
            return
        auto = self.auto and self.baseline is None and repeats == self.repeats
        times = self.reference.record(1 if auto else repeats)
        if auto:  # as many samples as a program of its time needs: one more run for a short one
            self.repeats = self.protocol.runs(times[0], judging=False)
            if self.repeats > 1:
                times += self.reference.record(self.repeats - 1)
        if self.baseline is None:
            self._set_baseline(times)
            self._record(key, Measurement(Status.OK, times, 0.0, "baseline", load_average()), root, store)

    def original_seconds(self) -> float:
        """The original's kernel time as the protocol summarizes it (measured once, or from the memo)."""
        self._ensure_baseline(False, self.repeats, self.store)
        assert self.baseline is not None
        return self.baseline

    # -- scores ------------------------------------------------------------------------------------
    def _score(self, m: Measurement) -> Score:
        if m.status.timed and m.times:
            t = self.protocol.summary(m.times)
            if m.status == Status.OK:
                self.limits.saw(t)
            return Score(speedup_over(self.baseline, t), m.status, m.detail, list(m.times))
        return Score(None, m.status, m.detail, list(m.times))

    def evaluate(self, program: Program, schedules: Sequence[Schedule]) -> list[Score]:
        """The protocol: each schedule checked and timed `repeats` times (memoized)."""
        self._ensure_baseline(False, self.repeats, self.store)  # settles an automatic count
        return self._evaluate(schedules, self.repeats, self.store)

    def check(self, program: Program, schedules: Sequence[Schedule]) -> list[Score]:
        """Each schedule's outputs checked against the original's in one run (the FMA excuse
        included), nothing read from or written to the memo: for candidates that are timed
        interleaved next, whose repeats here would be thrown
        away (at LARGE, three runs of seconds per candidate)."""
        return self._evaluate(schedules, repeats=0, store=None)

    def _evaluate(self, schedules: Sequence[Schedule], repeats: int, store: MeasurementStore | None) -> list[Score]:
        """Each schedule run `repeats` times after one untimed run (the check), memoized in
        `store` when there is one."""
        self._ensure_baseline(False, repeats, store)
        out: list[Score | None] = [None] * len(schedules)
        pending: list[tuple[int, Schedule, str]] = []
        for k, s in enumerate(schedules):
            if not s.steps:
                out[k] = Score(1.0, Status.OK, "original", list(self.baseline_times))
                continue
            key = self.memo_key(s, repeats)
            m = store.get(key) if store is not None else None
            # a compile error is looper's bug or the build's, never the candidate's speed: built again
            if m is not None and m.status != Status.COMPILE_ERROR \
                    and (m.status != Status.TIMEOUT or m.cutoff >= self.limits.for_candidate(repeats, self.baseline)[1]):
                out[k] = self._score(m)
            else:
                pending.append((k, s, key))
        if self.memo_only:
            for k, _s, _key in pending:
                out[k] = Score(None, Status.UNMEASURED, "not in the memo")
            pending = []
        if pending:
            self._ensure_baseline(True, repeats, store)
            self._measure(pending, out, repeats, store)
        return [o for o in out if o is not None]

    def _measure(self, pending: list[tuple[int, Schedule, str]], out: list, repeats: int,
                 store: MeasurementStore | None) -> None:
        """Build the pending candidates in batches, run and record each."""
        done = [0, len(pending)]
        for start in range(0, len(pending), self.batch_size):
            self._measure_batch(pending[start:start + self.batch_size], out, repeats, store, done)

    def _measure_batch(self, batch: list[tuple[int, Schedule, str]], out: list, repeats: int,
                       store: MeasurementStore | None, done: list[int]) -> None:
        """One binary for `batch`, each variant run and recorded.  A batch gcc refuses is halved
        until each refused variant is alone: one bad variant must not take the others with it."""
        try:
            binary = self.builder.build([s.lowered for _, s, _ in batch])
        except CompileError as e:
            if len(batch) > 1:
                half = len(batch) // 2
                self._measure_batch(batch[:half], out, repeats, store, done)
                self._measure_batch(batch[half:], out, repeats, store, done)
                return
            (k, s, key), = batch
            m = Measurement(Status.COMPILE_ERROR, [], 0.0, str(e).splitlines()[0], load_average())
            self._record(key, m, s, store)
            out[k] = self._score(m)
            return
        for j, (k, s, key) in enumerate(batch):
            m = self._measure_one(binary.path, j, s, repeats)
            self.measured += 1
            self._record(key, m, s, store)
            out[k] = self._score(m)
            done[0] += 1
            if self.progress:
                self.progress(done[0], done[1])

    def _measure_one(self, binary: Path, variant: int, s: Schedule, repeats: int) -> Measurement:
        cutoff, timeout = self.limits.for_candidate(repeats, self.baseline)
        m = self.runner.measure(binary, variant, f"check:{self.reference.outputs}", cutoff, timeout, repeats)
        if m.status == Status.WRONG and self.reference.same_without_fma(s.lowered, timeout):
            m = self.runner.measure(binary, variant, "-", cutoff, timeout, repeats)
            if m.status.timed:
                m.detail = "; ".join(filter(None, (
                    "outputs differ by FMA rounding only (equal with -ffp-contract=off)", m.detail)))
        return m

    def time_together(self, program: Program, schedules: Sequence[Schedule], rounds: int | None = None
                      ) -> tuple[list[float] | None, list[tuple[float | None, list[float] | None]]]:
        """Already-checked schedules timed with the original, interleaved in `rounds` rounds
        (None: as many as the protocol judges by; `runtime.run.time_as_run`: this machine's speed
        drifts for minutes, and ratios of runs taken apart drift with it).  Returns the
        original's times and, per schedule, its speedup (ratio of the protocol's summaries: means
        as run) and times; None where a run failed.  Nothing is memoized.

        Schedules that print the same C (the original among them) are built and timed once and
        share those times: two copies of one function at different addresses time differently
        (floyd-warshall MEDIUM: up to 1.3x, from code alignment alone).

        They are timed in the user's own program when the evaluator has one (`user`), as long as
        it can time the region (its `skipped` says why not), else in this harness."""
        if self.user is not None and program is self.program:
            with self.runner.timing_lock():
                theirs = self.user.time([None] + [answer_code(s) for s in schedules], rounds,
                                        PROBE_LIMIT + 20 * (self.baseline or 5.0))
            if theirs is not None:
                own = [t.times if t.ok else None for t in theirs]
                self.failed = tuple(t.why for t in theirs[1:])
                original = statistics.fmean(own[0]) if own[0] else None
                return own[0], [(speedup_over(original, statistics.fmean(t) if t else None), t) for t in own[1:]]
        if self.limits.overhead is None:  # every check was answered by the memo: run the original once
            self._ensure_baseline(True, self.repeats, self.store)
        lowered = [Schedule(program).lowered] + [s.lowered for s in schedules]
        variant_of: dict[str, int] = {}
        which = [variant_of.setdefault(ProgramBuilder.code(L), len(variant_of)) for L in lowered]
        distinct = [lowered[which.index(v)] for v in range(len(variant_of))]
        binary = self.builder.build(distinct)
        base = self.baseline or 1.0
        rounds = rounds if rounds is not None else self.protocol.runs(base, judging=True)
        per_process = 1 if self.protocol.cold else runs_per_process(base)
        limit = self.limits.process(1 + per_process, base)
        timed = self.runner.interleaved([(binary.path, k) for k in range(len(distinct))], rounds,
                                        timeout=limit, per_process=per_process)
        times = [timed[v].times if timed[v].ok else None for v in which]
        self.failed = tuple(timed[v].why for v in which[1:])
        summary = self.protocol.summary
        original = summary(times[0]) if times[0] else None
        return times[0], [(speedup_over(original, summary(t) if t else None), t) for t in times[1:]]

    def times_in_program(self, program: Program) -> bool:
        """Whether `time_together` times `program`'s schedules in the user's own program: only
        there do the original loops in looper's code (`Schedule.rewrite`) differ from the original."""
        return self.user is not None and program is self.program

    def added_seconds(self) -> float | None:
        """About how many seconds one more schedule adds to `time_together`: the original's time,
        as last measured (in the user's program when it ran there), times the runs the protocol
        judges by.  None before the original ran."""
        base = self.user.seconds if self.user is not None and self.user.seconds else self.baseline
        return None if base is None else base * self.protocol.runs(base, judging=True)

    @property
    def judged_in(self) -> str:
        """Where `time_together` ran its last runs, for reports."""
        if self.user is not None and self.user.seconds is not None and self.user.skipped is None:
            return self.user.describe()
        return "in looper's harness"

    def compare_environments(self, program: Program, schedule: Schedule, envs: Sequence[OmpEnv],
                             rounds: int | None = None) -> dict[OmpEnv, tuple[list[float], list[float]]]:
        """The original's and `schedule`'s times in each environment, all runs interleaved in
        one set of rounds (so that ratios across environments share this machine's drift;
        `rounds`: None, as many as the protocol judges by)."""
        binary = self.builder.build([Schedule(program).lowered, schedule.lowered])
        base = self.baseline or 1.0
        rounds = rounds if rounds is not None else self.protocol.runs(base, judging=True)
        per_process = 1 if self.protocol.cold else runs_per_process(base)
        runs = [(binary.path, v, env) for env in envs for v in (0, 1)]
        timed = self.runner.interleaved(runs, rounds, timeout=self.limits.process(1 + per_process, 4 * base),
                                        per_process=per_process)
        return {env: (timed[2 * k].times, timed[2 * k + 1].times) for k, env in enumerate(envs)}


class ModelEvaluator:
    """Scores from the learned cost model: predicted speedups, batched over a beam's candidates."""

    name = "model"

    def __init__(self, program: Program, model=None, meta: dict | None = None, target=None,
                 first_region: float = 0.0, original_seconds: float | None = None, jobs: int | None = None):
        """`model`: anything with `predict(samples)` giving speedups (None: the default weights in
        numpy, `costmodel.inference`, which needs no torch; a torch `Ensemble` predicts the same).
        `target`: the machine the candidates are predicted for (their cost terms are computed
        on it; None: `costmodel.features.reference_target`).  `first_region`: what starting a
        thread team costs there on average, charged to a parallel candidate's predicted time
        against `original_seconds` (the original's time, measured or estimated): the model's
        labels were timed warm and never paid it, as a program that calls its kernel once does.
        `jobs`: the processes that featurize a level's candidates (`looper.forked`; None: every
        core this process may run on)."""
        from ..costmodel.features import ProgramInfo
        from ..costmodel.inference import load_inference_model
        if model is None:
            model, meta = load_inference_model()
        self.model = model
        self.meta = meta or {}
        self.info = ProgramInfo(program, target)
        self.predicted = 0
        self._original: float | None = None
        self.first_region = first_region if original_seconds else 0.0
        self.original_seconds = original_seconds
        self.jobs = jobs if jobs is not None else cores()

    def original_prediction(self) -> float:
        """The model's prediction for the untransformed program (its speedup is 1 by definition).

        Candidates are scored relative to it, so a bias the model has for this program (MAPE
        training biases predictions low) cancels instead of favouring the original."""
        if self._original is None:
            from ..costmodel.features import featurize
            self._original = float(self.model.predict([featurize(Schedule(self.info.program), self.info)])[0])
            self.predicted += 1
        return self._original

    def evaluate(self, program: Program, schedules: Sequence[Schedule]) -> list[Score]:
        """The protocol: predicted speedups over the original (1.0 for the original itself)."""
        from ..costmodel.features import featurize
        out: list[Score | None] = [None] * len(schedules)
        todo = []
        for k, s in enumerate(schedules):
            if not s.steps:
                out[k] = Score(1.0, Status.OK, "original", predicted=1.0)
            else:
                todo.append(k)
        if todo:
            feats = forked_map(lambda k: featurize(schedules[k], self.info), todo, self.jobs)
            preds = self.model.predict(feats) / self.original_prediction()
            self.predicted += len(todo)
            for k, p in zip(todo, preds):
                p = self.as_run(schedules[k], float(p))
                out[k] = Score(p, Status.PREDICTED, "", predicted=p)
        return [o for o in out if o is not None]

    def as_run(self, s: Schedule, speedup: float) -> float:
        """A predicted speedup with the team's start charged when `s` runs in parallel."""
        cost = team_cost(s, self.first_region)
        if not cost:
            return speedup
        t0 = self.original_seconds
        return t0 / (t0 / speedup + cost)

    def close(self) -> None:
        pass
