"""`looper bench polybench`: looper against its peers on the PolyBench kernels, measured fairly.

Per (kernel, size), looper searches once (with the chosen evaluator).  Then, per input mode,
every system is built and run once at a small size with its outputs compared (a mismatch is
WRONG and never timed), and the systems that passed are timed interleaved at the run's size
(`timing.py`: rounds, each running every system once in a fresh process; median over rounds).

- scop mode: every system compiles looper's `#pragma scop` C of the original program and runs in
  looper's harness; gcc's build of it is the baseline, and is looper's original.
- native mode: the peers compile PolyBench's own C with PolyBench's own harness (`native.py`)
  and gcc's build of it is the baseline; looper and `original` (looper's untransformed program,
  gcc -O3 -march=native) run in looper's harness, so a harness effect shows as original/gcc and
  is never mistaken for a transformation's gain.

Each kernel's work (exact flops and compulsory bytes, `poly/flops.py`) turns times into GFLOP/s
and fractions of the machine's measured peak (`runtime/peaks.py`).
"""
from __future__ import annotations

import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol

from ..ir.program import Program
from ..kernels import polybench_file, polybench_names
from ..lang.parse import parse_file
from ..poly.flops import KernelWork, kernel_work
from ..poly.legality import replay
from ..runtime.compile import EXACT_FLAGS, openmp_flags
from ..runtime.ompenv import DEFAULT_ENV, OmpEnv
from ..target import Limits, Target
from ..transforms.schedule import Schedule
from ..tune.options import TuneOptions
from . import blas, check, native, peers, timing
from .results import BLAS_REFERENCE, KernelResult, SystemResult, geomean

if TYPE_CHECKING:
    from ..tune.pipeline import Answer as Tuned
    from ..tune.records import Record


class Replayed(Protocol):
    """Recorded answers a run times instead of searching (`bench.records.RecordedAnswers`)."""

    def answer(self, name: str, size: str, cfg: "BenchConfig") -> "Answer":
        """The kernel's recorded answer at `size`, replayed and checked."""

__all__ = ["ALL_KERNELS", "SIZES", "Answer", "BenchConfig", "geomean", "kernel_file",
           "run_kernel", "run_mode", "search"]

SIZES = ("MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE")
TIMED_DEFINES = ("POLYBENCH_TIME",)  # every timed build of every system, and the native search's preprocessing
CEILING = "looper-measure"  # the measuring search's answers: a ceiling for the default, not the product
ALL_KERNELS = polybench_names()
kernel_file = polybench_file  # the bench's and the benchmarks' name for it


@dataclass
class BenchConfig:
    """One bench run's choices (the CLI's options, validated by `suite.config_from_options`)."""

    kernels: list[str]
    sizes: list[str]
    compare: list[str]
    tune: TuneOptions = field(default_factory=TuneOptions)  # looper's search, as `looper optimize` runs it
    target: Target | None = None  # the machine (None: this one, with `threads`)
    repeat: int = 5
    threads: int = 2
    check_only: bool = False
    polycc: str | None = None
    inputs: list[str] = field(default_factory=lambda: ["scop"])
    polybench_c: str | None = None  # PolyBench/C's tree for the native mode (None: the default place)
    timeout_factor: float = 20.0  # a peer 20x slower than gcc is reported as a timeout
    min_timeout: float = 60.0
    baseline_timeout: float = 900.0  # per gcc run: LARGE floyd-warshall/lu/seidel-2d take seconds each
    pluto_timeout: float = 300.0  # polycc takes seconds on PolyBench, over 7 minutes on looper's scop C of adi
    limits: Limits | None = None  # the machine's measured peak and bandwidth (None: not timing)
    # OpenMP environments timed in (`runtime.ompenv`): the first is the search's and the table's;
    # every system is timed in the others too (as `system@env`), in the same interleaved rounds
    omp_envs: list[OmpEnv] = field(default_factory=lambda: [DEFAULT_ENV])
    # also run the measuring search and time its answers in the same rounds (a ceiling, labelled
    # `looper-measure`), with its own budgets
    ceiling: TuneOptions | None = None
    # more looper systems timed in the same rounds (`--variant`: another model, the model alone, a
    # smaller budget), by name (`looper-NAME`): diagnostics beside the default, never the headline
    variants: dict[str, TuneOptions] = field(default_factory=dict)
    # tuning records replayed instead of searching (`--records`, a baseline's records); None: search
    records: Replayed | None = None
    # variants whose answers are replayed from records, not searched (`--variant NAME:records=F`)
    replays: dict[str, Replayed] = field(default_factory=dict)

    @property
    def evaluator(self) -> str:
        return self.tune.evaluator.value

    def searches(self) -> dict[str, TuneOptions]:
        """The looper systems and how each searches: `looper` is what `looper optimize` runs with
        these options; `looper-measure` the measuring search, when asked for."""
        out = {"looper": self.tune.with_(omp_env=self.omp_envs[0])}
        if self.ceiling is not None:
            out[CEILING] = self.ceiling.with_(omp_env=self.omp_envs[0])
        for name, options in self.variants.items():
            out[name] = options.with_(omp_env=self.omp_envs[0])
        return {name: _own_memo(name, options) for name, options in out.items()}

    def machine(self) -> Target:
        """The target looper tunes for."""
        return self.target if self.target is not None else Target.detect(self.threads)

    def systems(self, mode: str) -> list[str]:
        """The systems of one input mode, the baseline first (`original`: looper's harness around
        the untransformed program, a diagnostic of the harness effect in the native mode)."""
        return ["gcc"] + (["original"] if mode == "native" else []) + list(self.searches()) + list(self.compare)


@dataclass(frozen=True)
class Answer:
    """looper's answer for one kernel at one size (one search), and what finding it took.
    `program` is looper's Python program of the kernel (its work, the scop mode's C); `source`,
    in the native mode, PolyBench's own C file with its scop rewritten in place."""

    name: str
    program: Program
    schedule: Schedule
    seconds: float
    sequence: str
    source: str | None = None
    measured: int = 0  # candidates the search ran
    record: Record | None = None  # the tuning record replayed instead of a search (`bench.records`)
    evaluator: str = ""  # what scored the search
    notes: tuple[str, ...] = ()  # what the search and the checks reported (`looper optimize`'s notes)
    check_seconds: float | None = None  # of `seconds`, verification and the speed guard (None: not split)


def _own_memo(system: str, options: TuneOptions) -> TuneOptions:
    """Every looper system but the default searches with a memo of its own beside the default's
    (`--db FILE`: FILE-looper-measure.sqlite, ...), so that none is answered by another's
    measurements: each system's search time and measured candidates are a new user's."""
    if system == "looper" or options.db is None:
        return options
    db = Path(options.db)
    return options.with_(db=str(db.with_name(f"{db.stem}-{system}{db.suffix}")))


def search(name: str, size: str, cfg: BenchConfig, options: TuneOptions | None = None,
           records: Replayed | None = None) -> Answer:
    """Parse the kernel at `size` and run looper's search on it (the scop mode); with records
    (`records`, else `--records`), replay the kernel's best record instead."""
    records = records or cfg.records
    if records is not None:
        return records.answer(name, size, cfg)
    program = parse_file(kernel_file(name), size)
    found = choose_schedule(program, cfg, options=options)
    schedule = found.result.best
    evaluator = (options or cfg.searches()["looper"]).evaluator.value
    return Answer(name, program, schedule, found.seconds, schedule.describe(), evaluator=evaluator,
                  check_seconds=found.check_seconds)


def choose_schedule(program: Program, cfg: BenchConfig, written: bool = True,
                    options: TuneOptions | None = None) -> "Tuned":
    """looper's answer for one program, as `looper optimize` finds and checks it (`tune`: the
    search, then, when `written`, verification and the model's speed guard), so the bench times
    the answer a user gets."""
    from ..lang.resize import smaller_python
    from ..tune import tune
    options = options or cfg.searches()["looper"]
    return tune(program, options, cfg.machine(), resized=smaller_python(program) if written else None)


def search_native(name: str, size: str, cfg: BenchConfig, options: TuneOptions,
                  records: Replayed | None = None) -> Answer:
    """`looper optimize` on PolyBench's own C file of the kernel at `size`, in place, as a user of
    polycc or Polly would run it: the file's scop searched, checked, and rewritten (with records,
    `records` else `--records`, the best record replayed instead)."""
    from ..api import optimize
    tree = native.PolyBenchC.find(cfg.polybench_c)
    c_file = tree.kernel(name)
    t0 = time.perf_counter()
    records = records or cfg.records
    if records is not None:  # replayed in place, as `looper apply RECORDS FILE.c` writes it
        source, k = records.native_source(str(c_file), size, [str(tree.utilities)], cfg)
        return Answer(name, parse_file(kernel_file(name), size), k.schedule, time.perf_counter() - t0, k.sequence,
                      source, record=k.record, evaluator=k.record.evaluator)
    # searched with the timed build's defines: its timer runs PolyBench's cache flush before the
    # kernel, and the search times candidates after it as well (`ir.program.Preamble`)
    # and judged in PolyBench's own program, as the timed build makes it (`runtime.userprogram`)
    options = options.with_(link=(str(tree.utilities / "polybench.c"),))
    done = optimize(str(c_file), size, defines=list(TIMED_DEFINES), includes=[str(tree.utilities)], options=options,
                    target=cfg.machine())
    seconds = time.perf_counter() - t0
    [k] = done.kernels
    # `program` is looper's Python program of the kernel (its work); `schedule`, of the C scop's
    notes = tuple(k.notes) + tuple(line.strip() for line in (k.check.lines() if k.check is not None else ()))
    return Answer(name, parse_file(kernel_file(name), size), k.schedule, seconds, k.sequence, done.source,
                  k.answer.measured, evaluator=options.evaluator.value, notes=notes,
                  check_seconds=k.answer.check_seconds)


def check_size(size: str, check_only: bool) -> str:
    """Where outputs are compared: MINI for --check-only, else the run's size up to SMALL."""
    if check_only:
        return "MINI"
    return size if SIZES.index(size) <= SIZES.index("SMALL") else "SMALL"


def run_kernel(name: str, size: str, cfg: BenchConfig, log: Callable[[str], None] = lambda s: None,
               inputs: list[str] | None = None) -> list[KernelResult]:
    """Search (once per looper system and input: the scop mode searches looper's program, the
    native mode PolyBench's C file), then check and time every system in each input mode
    (default: cfg.inputs)."""
    out = []
    for mode in inputs or cfg.inputs:
        answers = {}
        for system, options in cfg.searches().items():
            log(f" search: {system} ({options.evaluator.value}, {mode})")
            replay = cfg.replays.get(system)
            answers[system] = search_native(name, size, cfg, options, replay) if mode == "native" \
                else search(name, size, cfg, options, replay)
        work = kernel_work(answers["looper"].program)
        out.append(run_mode(answers, work, mode, cfg, log))
    return out


def run_mode(answers: dict[str, Answer], work: KernelWork, mode: str, cfg: BenchConfig,
             log: Callable[[str], None] = lambda s: None) -> KernelResult:
    """Check every system's outputs (exact arithmetic; the scop mode at a small size, the native
    mode at the run's own, where looper's in-place code runs its tuned version), then time the
    systems that computed the right thing at the run's size, as users run them."""
    log(f" input: {mode}")
    reference = blas.build_reference(answers["looper"].program) if BLAS_REFERENCE in cfg.compare else None
    systems = [s for s in cfg.systems(mode) if s != BLAS_REFERENCE]
    answer = answers["looper"]
    if mode == "scop":
        size = check_size(answer.program.size_label, cfg.check_only)
        builds = {s: build_scop(s, *_at_size(answers.get(s, answer), size, cfg), cfg, (), EXACT_FLAGS) for s in systems}
        results = check.check_outputs(builds, log, threads=cfg.threads)
        where = size
    else:
        # with the timer too, so each compiler sees the code it is timed with: clang-19 with
        # Polly parallelizes gemm only where the timer's calls surround the kernel
        builds = {s: build_native(s, answers, cfg, CHECKED_DEFINES, EXACT_FLAGS) for s in systems}
        results = native.check_dumps(builds, cfg.threads, log=log)
        where = answer.program.size_label
    for r in results.values():
        if r.status in ("checked", "WRONG"):
            r.detail = (r.detail + f" (at {where})").strip()
    if reference is not None:  # a rate to compare with: it computes a product, not the kernel
        results[BLAS_REFERENCE] = SystemResult(BLAS_REFERENCE, "checked" if reference.binary else reference.status,
                                               detail=reference.detail)
    if not cfg.check_only:
        timed = {s: (build_scop(s, answer.program, answers[s].schedule if s in answers else answer.schedule, cfg,
                                TIMED_DEFINES) if mode == "scop" else
                     build_native(s, answers, cfg, TIMED_DEFINES))
                 for s in systems if results[s].status == "checked"}
        if reference is not None and reference.binary is not None:
            timed[BLAS_REFERENCE] = reference
        envs = {s: cfg.omp_envs[0] for s in timed}
        for env in cfg.omp_envs[1:]:
            envs.update({f"{s}@{env.name}": env for s in list(timed)})
            timed.update({f"{s}@{env.name}": timed[s] for s in list(timed) if "@" not in s})
        results.update(timing.time_systems(timed, cfg, log, envs))
    for s, a in answers.items():
        if s in results:
            r = results[s]
            r.sequence, r.search_seconds, r.measured = a.sequence, a.seconds, a.measured
            r.check_seconds = a.check_seconds
            r.sequence_json, r.evaluator, r.notes = a.schedule.to_json(), a.evaluator, list(a.notes)
            r.rewritten = a.schedule.rewritten
    evaluator = answer.record.evaluator if answer.record is not None else cfg.evaluator
    out = KernelResult(answer.name, answer.program.size_label, answer.sequence, evaluator,
                       answer.seconds, results, mode, work.flops, work.bytes, work.precision,
                       [e.describe() for e in cfg.omp_envs], answer.schedule.to_json(),
                       answer.record.origin if answer.record is not None else "")
    if reference is not None and reference.binary is not None:
        out.multiply_adds, out.blas_flops = blas.multiply_adds(answer.program), reference.info["flops"]
    if cfg.limits is not None or out.blas_flops:
        out.rate(cfg.limits.peak(work.precision) if cfg.limits is not None else None)
    return out


def build_scop(system: str, program: Program, schedule: Schedule, cfg: BenchConfig,
               defines: tuple[str, ...], extra: tuple[str, ...] = ()) -> peers.Build:
    """A system's binary of looper's scop C, in looper's harness."""
    if system == "gcc":
        return peers.build_gcc(program, defines, extra)
    if system in cfg.searches():
        b = peers.build_looper(program, schedule, defines, extra)
        b.system = system
        return b
    if system == "pluto":
        return peers.build_pluto(program, defines, peers.find_polycc(cfg.polycc), cfg.pluto_timeout, extra)
    if system == "polly":
        return peers.build_polly(program, defines, extra=extra)
    if system == "graphite":
        return peers.build_graphite(program, cfg.threads, defines, extra)
    if system == "isl":
        return peers.build_isl(program, defines, timeout=20.0 if cfg.check_only else peers.ISL_TIMEOUT,
                               extra=extra)
    raise ValueError(f"unknown system {system}")


CHECKED_DEFINES = ("POLYBENCH_DUMP_ARRAYS",) + TIMED_DEFINES  # a native check's build: the timed one, dumping


def build_native(system: str, answers: dict[str, Answer], cfg: BenchConfig, defines: tuple[str, ...],
                 extra: tuple[str, ...] = ()) -> peers.Build:
    """A system's binary in the native mode: every system from PolyBench's own C with PolyBench's
    harness (looper's from the file it rewrote in place), and `original`, looper's harness around
    the untransformed program (how much the harness alone changes: a diagnostic)."""
    answer = answers["looper"]
    program = answer.program
    if system == "original":
        b = peers.build_gcc(program, defines, extra)
        b.system = "original"
        return b
    tree = native.PolyBenchC.find(cfg.polybench_c)
    kernel = native.NativeKernel(tree, program.name.replace("_", "-"), program.size_label)
    if system in answers:
        # -fopenmp only where the answer starts a team (`compile.openmp_flags`; native.py says why)
        source = answers[system].source
        omp = openmp_flags(source)
        b = kernel.compile(system, source, peers.BASE_FLAGS + omp + extra, "gcc", defines)
        if b.binary is not None:
            b.detail = (f"looper optimize in place on PolyBench's {kernel.c_file.name}, then gcc"
                        + ("" if omp == ("-fopenmp",) else f" (sequential: {' '.join(omp) or 'no OpenMP flag'})"))
        return b
    return native.build_native(system, kernel, defines, cfg, extra)


def _at_size(answer: Answer, size: str, cfg: BenchConfig) -> tuple[Program, Schedule]:
    """The kernel at `size` with looper's sequence replayed on it.  Legality can depend on sizes
    (a shift, a skew): when the sequence is illegal there, a timed run checks at its own size,
    and --check-only searches again at the check size (unless the answer is a record)."""
    program, schedule = answer.program, answer.schedule
    if size == program.size_label:
        return program, schedule
    small = parse_file(kernel_file(answer.name), size)
    replayed, why = replay(schedule, small)
    if why is None:
        return small, replayed
    if cfg.check_only and cfg.records is None:  # a recorded answer is checked as it is, never searched for
        return small, choose_schedule(small, cfg, written=False).result.best
    return program, schedule

