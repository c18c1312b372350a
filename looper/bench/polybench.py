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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..errors import LooperUsageError
from ..ir.program import Program
from ..lang.parse import parse_file
from ..poly.deps import compute_dependences
from ..poly.flops import KernelWork, kernel_work
from ..poly.legality import replay
from ..runtime.compile import EXACT_FLAGS
from ..runtime.ompenv import DEFAULT_ENV, OmpEnv
from ..runtime.peaks import Limits
from ..transforms.schedule import Schedule
from . import check, native, peers, timing
from .results import KernelResult, geomean

if TYPE_CHECKING:
    from ..search.proxy import Proxy
    from ..tune.records import Record
    from .records import RecordedAnswers

__all__ = ["ALL_KERNELS", "KERNEL_DIR", "SIZES", "Answer", "BenchConfig", "geomean", "kernel_file",
           "run_kernel", "run_mode", "search"]

KERNEL_DIR = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "polybench"
SIZES = ("MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE")
ALL_KERNELS = sorted(p.stem.replace("_", "-") for p in KERNEL_DIR.glob("*.py"))


@dataclass
class BenchConfig:
    """One bench run's choices (the CLI's options, validated by `suite.config_from_options`)."""

    kernels: list[str]
    sizes: list[str]
    compare: list[str]
    evaluator: str = "model"
    beam: int = 3
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
    # timed runs per candidate in a measuring search (None: 3; hybrid 1: the bench times its
    # answer again anyway, with --repeat interleaved rounds)
    search_repeats: int | None = None
    # seconds a measuring search may spend choosing loop structure (SearchPolicy.structure_budget)
    structure_budget: float | None = None
    # seconds in all for a search (SearchPolicy.time_budget): at EXTRALARGE one candidate runs
    # for seconds and the refinement levels alone take a quarter of an hour
    search_budget: float | None = None
    # a measuring search measures on a stand-in with fewer time steps or smaller sizes (`search.proxy`)
    proxy: Proxy | None = None
    # tuning records replayed instead of searching (`--records`, a baseline's records); None: search
    records: RecordedAnswers | None = None

    def systems(self, mode: str) -> list[str]:
        """The systems of one input mode, the baseline first."""
        return ["gcc"] + (["original"] if mode == "native" else []) + ["looper"] + list(self.compare)


def kernel_file(name: str) -> Path:
    """The looper program of PolyBench kernel `name`, or a usage error listing the known ones."""
    path = KERNEL_DIR / f"{name.replace('-', '_')}.py"
    if not path.exists():
        raise LooperUsageError(f"no PolyBench kernel '{name}' (known: {', '.join(ALL_KERNELS)})")
    return path


@dataclass(frozen=True)
class Answer:
    """looper's answer for one kernel at one size, and what finding it took."""

    name: str
    program: Program
    schedule: Schedule
    seconds: float
    record: Record | None = None  # the tuning record replayed instead of a search (`bench.records`)


def search(name: str, size: str, cfg: BenchConfig) -> Answer:
    """Parse the kernel at `size` and run looper's search on it (once for every input mode); with
    records (`--records`), replay the kernel's best record instead."""
    if cfg.records is not None:
        return cfg.records.answer(name, size, cfg)
    program = parse_file(kernel_file(name), size)
    schedule, seconds = choose_schedule(program, cfg.evaluator, cfg.beam, cfg.threads, cfg.omp_envs[0],
                                        cfg.search_repeats, structure_budget=cfg.structure_budget,
                                        search_budget=cfg.search_budget, proxy=cfg.proxy)
    return Answer(name, program, schedule, seconds)


def choose_schedule(program: Program, evaluator: str, beam: int, threads: int,
                    omp_env: OmpEnv = DEFAULT_ENV, repeats: int | None = None,
                    written: bool = True, structure_budget: float | None = None,
                    search_budget: float | None = None, proxy: Proxy | None = None) -> tuple[Schedule, float]:
    """looper's answer for one program: the search with the requested evaluator, then (`written`)
    what `looper optimize` does before it writes an answer (`search.verify`: verification, and the
    model's speed guard when the original is short), so the bench times the answer a user gets.
    Hybrid only has to rank the model's 5 best (the bench times the winner itself, with --repeat
    runs): one timed run after the checked warm-up halves its cost at LARGE."""
    from ..lang.resize import smaller_python
    from ..search.factory import search_from_options
    from ..search.verify import VerifyOptions, check_answer
    deps = compute_dependences(program)
    t0 = time.perf_counter()
    if repeats is None:
        repeats = 1 if evaluator == "hybrid" else 3
    found = search_from_options(program, evaluator, beam=beam, threads=threads, repeats=repeats, omp_env=omp_env,
                                structure_budget=structure_budget, time_budget=search_budget,
                                proxy=proxy)
    result = found.run(deps, keep_open=True)
    try:
        if written:
            options = VerifyOptions(threads=threads, omp_env=omp_env)
            result, _ = check_answer(program, result, found.kind, found.policy, deps, smaller_python(program), 0,
                                     options, found.verified)
    finally:
        found.close()
    return result.best, time.perf_counter() - t0


def check_size(size: str, check_only: bool) -> str:
    """Where outputs are compared: MINI for --check-only, else the run's size up to SMALL."""
    if check_only:
        return "MINI"
    return size if SIZES.index(size) <= SIZES.index("SMALL") else "SMALL"


def run_kernel(name: str, size: str, cfg: BenchConfig, log: Callable[[str], None] = lambda s: None,
               inputs: list[str] | None = None) -> list[KernelResult]:
    """Search once, then check and time every system in each input mode (default: cfg.inputs)."""
    answer = search(name, size, cfg)
    work = kernel_work(answer.program)
    return [run_mode(answer, work, mode, cfg, log) for mode in (inputs or cfg.inputs)]


def run_mode(answer: Answer, work: KernelWork, mode: str, cfg: BenchConfig,
             log: Callable[[str], None] = lambda s: None) -> KernelResult:
    """Check every system's outputs (exact arithmetic, small size), then time the systems that
    computed the right thing at the run's size."""
    log(f" input: {mode}")
    systems = cfg.systems(mode)
    cprog, csched = _at_size(answer, check_size(answer.program.size_label, cfg.check_only), cfg)
    if mode == "scop":
        builds = {s: build_scop(s, cprog, csched, cfg, (), EXACT_FLAGS) for s in systems}
        results = check.check_outputs(builds, log, threads=cfg.threads)
    else:
        builds = {s: build_native(s, cprog, csched, cfg, ("POLYBENCH_DUMP_ARRAYS",), EXACT_FLAGS)
                  for s in systems}
        results = native.check_dumps(builds, cfg.threads, log=log)
    for r in results.values():
        if r.status in ("checked", "WRONG"):
            r.detail = (r.detail + f" (at {cprog.size_label})").strip()
    if not cfg.check_only:
        build = build_scop if mode == "scop" else build_native
        timed = {s: build(s, answer.program, answer.schedule, cfg, ("POLYBENCH_TIME",))
                 for s in systems if results[s].status == "checked"}
        envs = {s: cfg.omp_envs[0] for s in timed}
        for env in cfg.omp_envs[1:]:
            envs.update({f"{s}@{env.name}": env for s in list(timed)})
            timed.update({f"{s}@{env.name}": timed[s] for s in list(timed) if "@" not in s})
        results.update(timing.time_systems(timed, cfg, log, envs))
    evaluator = answer.record.evaluator if answer.record is not None else cfg.evaluator
    out = KernelResult(answer.name, answer.program.size_label, answer.schedule.describe(), evaluator,
                       answer.seconds, results, mode, work.flops, work.bytes, work.precision,
                       [e.describe() for e in cfg.omp_envs], answer.schedule.to_json(),
                       answer.record.origin if answer.record is not None else "")
    if cfg.limits is not None:
        out.rate(cfg.limits.peak(work.precision))
    return out


def build_scop(system: str, program: Program, schedule: Schedule, cfg: BenchConfig,
               defines: tuple[str, ...], extra: tuple[str, ...] = ()) -> peers.Build:
    """A system's binary of looper's scop C, in looper's harness."""
    if system == "gcc":
        return peers.build_gcc(program, defines, extra)
    if system == "looper":
        return peers.build_looper(program, schedule, defines, extra)
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


def build_native(system: str, program: Program, schedule: Schedule, cfg: BenchConfig,
                 defines: tuple[str, ...], extra: tuple[str, ...] = ()) -> peers.Build:
    """A system's binary in the native mode: looper and its original in looper's harness, the
    others from PolyBench's own C with PolyBench's harness."""
    if system == "original":
        b = peers.build_gcc(program, defines, extra)
        b.system = "original"
        return b
    if system == "looper":
        return peers.build_looper(program, schedule, defines, extra)
    tree = native.PolyBenchC.find(cfg.polybench_c)
    kernel = native.NativeKernel(tree, program.name.replace("_", "-"), program.size_label)
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
        return small, choose_schedule(small, cfg.evaluator, cfg.beam, cfg.threads, written=False)[0]
    return program, schedule

