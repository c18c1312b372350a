"""Running an answer and the original at one size and comparing every output exactly.

Why looper checks what it writes, whatever evaluator chose it: the model evaluator compiles
nothing, and a legal schedule can still come out wrong.  gcc 12 miscompiles some legal fused
stencils under AVX-512 (docs/design/verification.md), a user's compiler or flags are not the ones
the search measured with, and a parallel loop that isl proved free of dependences is still the one
place where a code generator bug shows only when threads really run at once.  So the answer is
built with the compiler and flags the user will use (`Toolchain`), run next to the original, and
its outputs compared value for value (`runtime.exact`); a difference that only FMA contraction
explains is told from a wrong value by `runtime.reference`'s re-check without contraction.

Races: a parallel answer runs at every thread count of `threads` (at least 2, and 4 so that
chunks meet on a 2-core machine too), each run compared with the original.  looper emits
`schedule(static)` and `schedule(static, k)` only, which fix the iteration-to-thread map, so the
thread count is what varies it; a kernel with `schedule(runtime)` would also run under each of
`RUNTIME_SCHEDULES`.

Every run has a time limit: the original's first run gets `FIRST_RUN_LIMIT` (nothing to derive one
from yet), each candidate run `TimeLimits.process` of the original's time.
"""
from __future__ import annotations

import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..ir.program import Program
from ..ir.schedule import Lowered, original
from .builder import ProgramBuilder
from .compile import OPT_FLAGS, Binary, CompileError
from .exact import outputs_differ
from .limits import TimeLimits
from .ompenv import DEFAULT_ENV, OmpEnv
from .reference import Reference
from .run import RunResult, Runner, run_binary
from ..target.host import cores

FIRST_RUN_LIMIT = 600.0  # seconds for the original's own run at the verification size
RUNTIME_SCHEDULES = ("static,1", "dynamic,3", "guided")  # OMP_SCHEDULE for schedule(runtime) loops


@dataclass(frozen=True)
class Toolchain:
    """The compiler and flags the user builds the answer with (`--cc`, `--cflags`)."""

    cc: str = "gcc"
    cflags: tuple[str, ...] = OPT_FLAGS

    def describe(self) -> str:
        return shlex.join((self.cc, *self.cflags))

    @staticmethod
    def parse(cc: str | None, cflags: str | Sequence[str] | None) -> "Toolchain":
        """From the command line's strings (`--cflags "-O2 -fopenmp"`) or the API's sequences."""
        flags = shlex.split(cflags) if isinstance(cflags, str) else cflags
        return Toolchain(cc or "gcc", tuple(OPT_FLAGS if flags is None else flags))


def verify_threads(threads: int | None) -> tuple[int, ...]:
    """The thread counts a parallel answer is verified at: the user's (at least 2), and 4."""
    return tuple(sorted({max(2, threads or 2), 4}))


class Unverifiable(Exception):
    """The original itself cannot be built or run with the toolchain at this size: nothing to
    compare a candidate with."""


@dataclass(frozen=True)
class Verdict:
    """What running a candidate at the verification size showed."""

    ok: bool
    detail: str = ""  # what differed or failed; for an ok verdict, a remark ("" when none)
    fma_only: bool = False  # equal only once neither program contracts FMAs


class OutputCheck:
    """One program at the verification size, built with the user's toolchain: the original runs
    once (its outputs saved), then each candidate at every thread count."""

    def __init__(self, program: Program, toolchain: Toolchain, threads: Sequence[int],
                 omp_env: OmpEnv = DEFAULT_ENV):
        self.program = program
        self.threads = tuple(threads)
        self.omp_env = omp_env
        self.workdir = Path(tempfile.mkdtemp(prefix="looper-verify-"))
        self.builder = ProgramBuilder(program, toolchain.cflags, cc=toolchain.cc)
        self.runner = Runner(self.threads[0], omp_env=omp_env)
        self.limits = TimeLimits()
        self.reference = Reference(self.builder, self.runner, self.limits, self.workdir, exact=True)
        self.original_seconds: float | None = None

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)

    def verify(self, lowered: Lowered) -> Verdict:
        """Run `lowered` at every thread count (and OpenMP schedule) and compare its outputs with
        the original's, exactly; FMA rounding excused only through the re-check without it."""
        try:
            binary, variant = self._binary(lowered)
        except CompileError as e:
            return Verdict(False, "; ".join(str(e).splitlines()[:3]))
        limit = self.limits.process(1, self.original_seconds or 1.0)
        problem = None
        for threads, schedule in self._runs(lowered):
            problem = self._run_one(binary, variant, threads, schedule, limit)
            if problem is not None:
                break
        if problem is None:
            return Verdict(True)
        got = self.workdir / "candidate.bin"  # the failing run's outputs
        if problem.startswith("wrong") and self.reference.same_without_fma(lowered, limit, self.thread_counts(lowered),
                                                                          contracted=got):
            return Verdict(True, "outputs differ by FMA rounding only (identical with -ffp-contract=off)", True)
        return Verdict(False, problem)

    def _binary(self, lowered: Lowered) -> tuple[Binary, int]:
        """The candidate's binary and variant; the first one is built with the original (variant 0),
        which runs then and saves the outputs every candidate is compared with.  A CompileError
        is the candidate's; `Unverifiable` when the original does not build or run either."""
        if self.reference.has_outputs:
            return self.builder.build([lowered]), 0
        try:
            binary = self.builder.build([original(self.program), lowered])
        except CompileError:
            self._original_alone()
            raise
        try:
            times = self.reference.record(0, binary, timeout=FIRST_RUN_LIMIT)
        except CompileError as e:
            raise Unverifiable(str(e)) from None
        self.original_seconds = times[0] if times else None
        return binary, 1

    def _original_alone(self) -> None:
        """Raise `Unverifiable` when the toolchain cannot build the original on its own."""
        try:
            self.builder.build([original(self.program)])
        except CompileError as e:
            raise Unverifiable(f"{self.builder.cc} cannot build the original: "
                               + "; ".join(str(e).splitlines()[1:3])) from None

    def thread_counts(self, lowered: Lowered) -> tuple[int, ...]:
        """Every thread count for a parallel candidate; one run for a sequential one."""
        return self.threads if "#pragma omp" in ProgramBuilder.code(lowered) else self.threads[:1]

    def _runs(self, lowered: Lowered) -> list[tuple[int, str | None]]:
        """(threads, OMP_SCHEDULE or None) of every run the candidate gets."""
        schedules: Sequence[str | None] = (None,)
        if "schedule(runtime)" in ProgramBuilder.code(lowered):
            schedules = RUNTIME_SCHEDULES
        return [(t, s) for t in self.thread_counts(lowered) for s in schedules]

    def _run_one(self, binary: Binary, variant: int, threads: int, schedule: str | None,
                 limit: float) -> str | None:
        """None when one run computes the original's outputs; otherwise what went wrong."""
        got = self.workdir / "candidate.bin"
        got.unlink(missing_ok=True)
        extra = run_environment(threads)
        if schedule is not None:
            extra["OMP_SCHEDULE"] = schedule
        res = run_binary(binary.path, variant, 1, timeout=limit, threads=threads, mode=f"save:{got}",
                         omp_env=self.omp_env, extra_env=extra)
        where = f"at {threads} threads" + (f", OMP_SCHEDULE={schedule}" if schedule else "")
        if not res.ok:
            return f"failed {where}: {_failure(res, limit)}"
        diff = outputs_differ(self.reference.outputs, got, self.program)
        return None if diff is None else f"wrong outputs {where}: {diff}"


def run_environment(threads: int) -> dict[str, str]:
    """What a verification run adds to the user's environment.  More threads than cores (4 on
    this 2-core machine) with threads spinning while they wait, bound one per core, can crawl
    for seconds at every barrier; such runs check outputs, not speed, so their threads sleep."""
    if threads <= cores():
        return {}
    return {"OMP_WAIT_POLICY": "passive", "OMP_PROC_BIND": "false"}


def _failure(res: RunResult, limit: float) -> str:
    return f"no result within {limit:.1f} s" if res.timed_out else res.describe_failure()
