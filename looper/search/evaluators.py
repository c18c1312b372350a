"""Evaluators: what the search asks for a score.  All behind one protocol (`beam.Evaluator`).

`ExecutionEvaluator` measures: candidates are compiled several to one C file (to amortize gcc),
every variant's outputs are checked against the original's in the same run that warms it up, then
timed `repeats` times with the arrays restored before each run; the median counts.  A candidate
that crashes, times out or computes something else is reported and never scored.  Outputs that
differ only because gcc contracts a*b+c into an FMA in one loop order and not in another
(ill-conditioned kernels such as gramschmidt amplify that rounding) are told apart from wrong code
by a second check with both programs built with -ffp-contract=off.  Results are
memoized in SQLite (see `looper.runtime.measurements`), so nothing is measured twice.
"""
from __future__ import annotations

import contextlib
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from ..codegen.harness import HARNESS_VERSION, kernel_function, split_program_c
from ..ir.program import Program
from ..runtime.compile import EXACT_FLAGS, OPT_FLAGS, CompileError, compile_split, compiler_id
from ..runtime.machine import cpu_model, default_threads, load_average
from ..runtime.measurements import Measurement, MeasurementStore, measurement_key
from ..runtime.run import run_binary, runs_per_process, status_line, time_interleaved
from ..transforms.schedule import Schedule
from .beam import DEFAULT_MAX_AFFINE, Score


class ExecutionEvaluator:
    name = "measure"
    max_affine = DEFAULT_MAX_AFFINE  # affine levels a search with it explores by default
    min_gain = 0.02  # a child must be 2% faster than its parent to replace it: timing noise

    def __init__(self, program: Program, *, repeats: int = 3, threads: int | None = None,
                 flags: tuple[str, ...] = OPT_FLAGS, store: MeasurementStore | None = None,
                 memoize: bool = True, batch_size: int = 8, slow_factor: float = 2.0,
                 timeout_factor: float = 4.0, min_timeout: float = 5.0,
                 progress: Callable[[int, int], None] | None = None, timing_lock=None,
                 memo_only: bool = False):
        self.program = program
        self.repeats = repeats
        self.threads = threads or default_threads()
        self.flags = tuple(flags)
        # what gcc was actually given: self.flags, plus the medium code model for programs with
        # more than 2 GB of arrays (runtime.compile)
        self.build_flags = tuple(flags)
        self.store = store if store is not None else (MeasurementStore() if memoize else None)
        self.batch_size = batch_size
        self.slow_factor = slow_factor
        self.timeout_factor = timeout_factor
        self.min_timeout = min_timeout
        self.progress = progress
        self.timing_lock = timing_lock or contextlib.nullcontext
        self.workdir = Path(tempfile.mkdtemp(prefix="looper-eval-"))
        self.reference = self.workdir / "reference.bin"
        self.exact_reference = self.workdir / "reference-exact.bin"
        self.fma_sensitive: bool | None = None  # do the original's outputs depend on FMA contraction?
        self.baseline: float | None = None
        self.baseline_times: list[float] = []
        self.best_time: float | None = None
        # seconds a run of the binary spends outside the timed kernel (allocation, init: lu LARGE's
        # O(N^3) init takes longer than its kernel), which every time limit must allow for; measured
        # on the original's reference run (None: not yet, when the baseline came from the memo)
        self.overhead: float | None = None
        self.has_reference = False
        self.measured = 0  # candidates actually run (memo misses)
        # replay an earlier search from the memo alone: a miss is "unmeasured", nothing is run
        self.memo_only = memo_only

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __del__(self):  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    # -- keys ---------------------------------------------------------------------------------------
    def _code(self, s: Schedule) -> str:
        return str(kernel_function(s.lowered, "kernel"))

    def _key(self, code: str, repeats: int | None = None) -> str:
        repeats = self.repeats if repeats is None else repeats
        return measurement_key(self.program.fingerprint, code, compiler_id(), " ".join(self.flags),
                               cpu_model(), str(self.threads), str(repeats), f"harness{HARNESS_VERSION}")

    def _record(self, key: str, m: Measurement, schedule: Schedule, store: MeasurementStore | None) -> None:
        if store is not None:
            store.put(key, m, program=self.program.name, size=self.program.size_label,
                      schedule=schedule.describe(), compiler=compiler_id(),
                      flags=" ".join(self.flags), cpu=cpu_model(), threads=self.threads)

    # -- timing -------------------------------------------------------------------------------------
    def _time_limit(self, runs: int, per_run: float) -> float:
        """How long one process of `runs` runs of about `per_run` seconds each may take."""
        return self.min_timeout + 2 * (self.overhead or 0.0) + runs * self.timeout_factor * per_run

    def _limits(self, repeats: int) -> tuple[float, float]:
        best = self.best_time or self.baseline or 1.0
        return self.slow_factor * best, self._time_limit(repeats + 1, best)

    def _run(self, binary: Path, variant: int, mode: str, cutoff: float, timeout: float,
             repeats: int) -> Measurement:
        with self.timing_lock():
            res = run_binary(binary, variant, repeats + 1, timeout=timeout, threads=self.threads,
                             mode=mode, cutoff=cutoff)
        load = load_average()
        if res.timed_out:
            return Measurement("timeout", res.times, timeout, f"no result within {timeout:.1f} s", load)
        if res.returncode == 4:
            bad = status_line(res.stdout, "CHECK")
            return Measurement("wrong", res.times, cutoff, f"{bad} output values differ from the original", load)
        if not res.ok:
            return Measurement("crash", res.times, cutoff, res.describe_failure(), load)
        if status_line(res.stdout, "CUTOFF") is not None:
            return Measurement("slow", res.times[:1], cutoff, f"first run slower than {cutoff:.3g} s", load)
        return Measurement("ok", res.times[1:] or res.times, cutoff, "", load)

    def _ensure_baseline(self, need_reference: bool, repeats: int, store: MeasurementStore | None) -> None:
        """The original's time (from the memo when it has it) and, when a candidate must be
        checked, its outputs: the reference every candidate's outputs are compared with."""
        root = Schedule(self.program)
        key = self._key(self._code(root), repeats)
        if self.baseline is None and store is not None:
            m = store.get(key)
            if m is not None and m.status == "ok" and m.times:
                self.baseline_times = list(m.times)
                self.baseline = statistics.median(m.times)
                self.best_time = self.best_time or self.baseline
        if self.baseline is not None and (self.has_reference or not need_reference):
            return
        binary = compile_split(*split_program_c(self.program, [root.lowered]), self.flags)
        self.build_flags = tuple(f for f in binary.flags if not f.startswith("-D"))
        with self.timing_lock():
            t0 = time.perf_counter()
            res = run_binary(binary.path, 0, repeats + 1, threads=self.threads,
                             mode=f"save:{self.reference}")
            wall = time.perf_counter() - t0
        if not res.ok:
            raise CompileError(f"the original program failed: {res.describe_failure()}")
        self.overhead = max(self.overhead or 0.0, wall - sum(res.times))
        self.has_reference = True
        if self.baseline is None:
            times = res.times[1:] or res.times
            self.baseline_times = list(times)
            self.baseline = statistics.median(times)
            self.best_time = self.baseline
            self._record(key, Measurement("ok", times, 0.0, "baseline", load_average()), root, store)

    def _exact_flags(self) -> tuple[str, ...]:
        return self.flags + tuple(f for f in EXACT_FLAGS if f not in self.flags)

    def _same_without_fma(self, program: Program, schedule: Schedule, timeout: float) -> bool:
        """Whether `schedule` computes what the original does once neither contracts FMAs, in a
        program whose outputs depend on FMA contraction at all: the original's own outputs must
        differ between the two builds.  Otherwise the difference is not rounding (gcc's
        AVX-512 miscompile of some fused stencils, see README, is caught this way)."""
        flags = self._exact_flags()
        if flags == self.flags:
            return False  # the check that failed was already exact
        try:
            if self.fma_sensitive is None:
                ref = compile_split(*split_program_c(program, [Schedule(program).lowered]), flags)
                with self.timing_lock():
                    saved = run_binary(ref.path, 0, 1, timeout=timeout, threads=self.threads,
                                       mode=f"save:{self.exact_reference}")
                    versus = run_binary(ref.path, 0, 1, timeout=timeout, threads=self.threads,
                                        mode=f"check:{self.reference}")
                self.fma_sensitive = saved.ok and versus.returncode == 4
            if not self.fma_sensitive:
                return False
            cand = compile_split(*split_program_c(program, [schedule.lowered]), flags)
        except CompileError:
            return False
        with self.timing_lock():
            res = run_binary(cand.path, 0, 1, timeout=timeout, threads=self.threads,
                             mode=f"check:{self.exact_reference}")
        return res.ok and status_line(res.stdout, "CHECK") == "0"

    def time_together(self, program: Program, schedules: Sequence[Schedule], rounds: int
                      ) -> tuple[list[float] | None, list[tuple[float | None, list[float] | None]]]:
        """Already-checked schedules timed with the original, interleaved
        (`runtime.run.time_interleaved`: this machine's speed drifts for minutes, and ratios of
        runs taken apart drift with it).  Returns the original's `rounds` times and, per schedule,
        its speedup (ratio of medians) and times; None where a run failed.  Nothing is memoized.

        Schedules that print the same C (the original among them) are built and timed once and
        share those times: two copies of one function at different addresses time differently
        (floyd-warshall MEDIUM: up to 1.3x, from code alignment alone)."""
        if self.overhead is None:  # every check was answered by the memo: run the original once
            self._ensure_baseline(True, self.repeats, self.store)
        lowered = [Schedule(program).lowered] + [s.lowered for s in schedules]
        variant_of: dict[str, int] = {}
        which = [variant_of.setdefault(str(kernel_function(L, "kernel")), len(variant_of)) for L in lowered]
        distinct = [lowered[which.index(v)] for v in range(len(variant_of))]
        binary = compile_split(*split_program_c(program, distinct), self.flags)
        base = self.baseline or 1.0
        per_process = runs_per_process(base)
        limit = self._time_limit(1 + per_process, base)
        with self.timing_lock():
            timed = time_interleaved([(binary.path, k) for k in range(len(distinct))], rounds,
                                     threads=self.threads, timeout=limit, per_process=per_process)
        times = [timed[v].times if timed[v].ok else None for v in which]
        original = statistics.median(times[0]) if times[0] else None
        return times[0], [(original / statistics.median(t) if original and t else None, t) for t in times[1:]]

    def _score(self, m: Measurement) -> Score:
        if m.status in ("ok", "slow") and m.times:
            t = statistics.median(m.times)
            if m.status == "ok" and (self.best_time is None or t < self.best_time):
                self.best_time = t
            return Score(self.baseline / t, m.status, m.detail, list(m.times))
        return Score(None, m.status, m.detail, list(m.times))

    def check(self, program: Program, schedules: Sequence[Schedule]) -> list[Score]:
        """Each schedule's outputs checked against the original's in one run (the FMA excuse
        included), nothing read from or written to the memo: for candidates that are timed
        interleaved next (hybrid, benchmarks/model_bench.py), whose repeats here were thrown
        away (at LARGE, three runs of seconds per candidate)."""
        return self._evaluate(program, schedules, repeats=0, store=None)

    # -- the protocol -----------------------------------------------------------------------------
    def evaluate(self, program: Program, schedules: Sequence[Schedule]) -> list[Score]:
        return self._evaluate(program, schedules, self.repeats, self.store)

    def _evaluate(self, program: Program, schedules: Sequence[Schedule], repeats: int,
                  store: MeasurementStore | None) -> list[Score]:
        """Each schedule run `repeats` times after one untimed run (the check), memoized in
        `store` when there is one."""
        self._ensure_baseline(False, repeats, store)
        out: list[Score | None] = [None] * len(schedules)
        pending: list[tuple[int, Schedule, str]] = []
        for k, s in enumerate(schedules):
            if not s.steps:
                out[k] = Score(1.0, "ok", "original", list(self.baseline_times))
                continue
            key = self._key(self._code(s), repeats)
            m = store.get(key) if store is not None else None
            if m is not None and (m.status != "timeout" or m.cutoff >= self._limits(repeats)[1]):
                out[k] = self._score(m)
            else:
                pending.append((k, s, key))
        if self.memo_only:
            for k, _s, _key in pending:
                out[k] = Score(None, "unmeasured", "not in the memo")
            pending = []
        done = 0
        if pending:
            self._ensure_baseline(True, repeats, store)
        for start in range(0, len(pending), self.batch_size):
            batch = pending[start:start + self.batch_size]
            try:
                binary = compile_split(*split_program_c(program, [s.lowered for _, s, _ in batch]), self.flags)
            except CompileError as e:
                for k, s, key in batch:
                    m = Measurement("compile-error", [], 0.0, str(e).splitlines()[0], load_average())
                    self._record(key, m, s, store)
                    out[k] = self._score(m)
                continue
            for j, (k, s, key) in enumerate(batch):
                cutoff, timeout = self._limits(repeats)
                m = self._run(binary.path, j, f"check:{self.reference}", cutoff, timeout, repeats)
                if m.status == "wrong" and self._same_without_fma(program, s, timeout):
                    m = self._run(binary.path, j, "-", cutoff, timeout, repeats)
                    if m.status in ("ok", "slow"):
                        m.detail = "; ".join(filter(None, (
                            "outputs differ by FMA rounding only (equal with -ffp-contract=off)", m.detail)))
                self.measured += 1
                self._record(key, m, s, store)
                out[k] = self._score(m)
                done += 1
                if self.progress:
                    self.progress(done, len(pending))
        return [o for o in out if o is not None]


class ModelEvaluator:
    """Scores from the learned cost model: predicted speedups, batched over a beam's candidates."""

    name = "model"
    predicts = True  # its answers drop idle reversals and skews (search.simplify)
    # An answer predicted less than 5% faster than the original is not worth the risk: the model's
    # median error on held-out programs is 18%.  MEDIUM gesummv and trisolv: predicted 1.01x and
    # 1.05x, measured 0.57x and 0.80x.  (The same 5% asked of every step, as `min_gain`, cut the
    # tiling from LARGE gemm's answer and left its strided interchange: 0.35x.)
    min_answer_gain = 0.05

    def __init__(self, program: Program, model=None, meta: dict | None = None):
        from ..costmodel.features import ProgramInfo
        from ..costmodel.store import load_model
        if model is None:
            model, meta = load_model()
        self.model = model
        self.meta = meta or {}
        self.info = ProgramInfo(program)
        self.predicted = 0
        self._original: float | None = None

    @property
    def max_affine(self) -> int:
        """Affine levels to search with this model: as deep as its training data's search went."""
        return int(self.meta.get("search_space", {}).get("max_affine", DEFAULT_MAX_AFFINE))

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
        from ..costmodel.features import featurize
        out: list[Score | None] = [None] * len(schedules)
        todo = []
        for k, s in enumerate(schedules):
            if not s.steps:
                out[k] = Score(1.0, "ok", "original", predicted=1.0)
            else:
                todo.append(k)
        if todo:
            feats = [featurize(schedules[k], self.info) for k in todo]
            preds = self.model.predict(feats) / self.original_prediction()
            self.predicted += len(todo)
            for k, p in zip(todo, preds):
                out[k] = Score(float(p), "predicted", "", predicted=float(p))
        return [o for o in out if o is not None]

    def close(self) -> None:
        pass
