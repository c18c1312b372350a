"""Timing an answer against the original before it is written: never an answer slower than it.

Why: a cost model is sometimes wrong by more than its margin (on programs outside PolyBench, a
two-nest stencil's answer ran at 0.49x), and the model evaluator measures nothing.  When one run
of the original at the requested size is short (`GUARD_SECONDS`), timing both costs little: the
answer and the original run interleaved for a few rounds (this machine's speed drifts for minutes,
and only interleaved ratios hold; `runtime.run.time_interleaved`), in the user's OpenMP
environment, with the user's compiler and flags.  A longer original is not timed (the probe says
so; `--evaluator hybrid` measures the model's best candidates at any size).

Every run has a time limit: the probe `PROBE_LIMIT`, the timed runs `TimeLimits.process` of the
original's time (an answer more than a few times slower is cut off: slower, whatever its time).
"""
from __future__ import annotations

import statistics
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from ..ir.program import Program
from ..ir.schedule import Lowered, original
from ..codegen.harness import split_program_c
from .builder import ProgramBuilder
from .compile import Binary, CompileError, compile_split
from .limits import TimeLimits
from .ompenv import DEFAULT_ENV, OmpEnv
from .run import run_binary, runs_per_process, time_interleaved
from .verify import Toolchain

GUARD_SECONDS = 1.0  # the original's kernel time (one run) under which answers are timed
PROBE_LIMIT = 20.0  # seconds for the probe: one process running the original once
ROUNDS = 3


@dataclass
class GuardResult:
    """One answer timed against the original (or why it was not)."""

    timed: bool
    speedup: float | None = None  # ratio of medians; None: the answer's runs failed or timed out
    original: float | None = None  # median kernel seconds
    answer: float | None = None
    rounds: int = 0
    detail: str = ""

    @property
    def slower(self) -> bool:
        """Whether the answer must not be written: slower than the original (or cut off)."""
        return self.timed and (self.speedup is None or self.speedup < 1.0)

    def describe(self) -> str:
        if not self.timed:
            return self.detail
        if self.speedup is None:
            return f"the answer did not finish in time ({self.detail})"
        return (f"{self.speedup:.2f}x the original (median of {self.rounds} interleaved rounds: "
                f"{self.answer:.6f} s against {self.original:.6f} s)")

    def to_json(self) -> dict:
        return {"timed": self.timed, "speedup": self.speedup, "original_seconds": self.original,
                "answer_seconds": self.answer, "rounds": self.rounds, "detail": self.detail}


class SpeedGuard:
    """Times answers of one program at the requested size against its original."""

    def __init__(self, program: Program, toolchain: Toolchain, threads: int | None,
                 omp_env: OmpEnv = DEFAULT_ENV, rounds: int = ROUNDS, guard_seconds: float = GUARD_SECONDS):
        self.program = program
        self.builder = ProgramBuilder(program, toolchain.cflags, cc=toolchain.cc)
        self.threads = threads
        self.omp_env = omp_env
        self.rounds = rounds
        self.guard_seconds = guard_seconds
        self.limits = TimeLimits()
        self.baseline: float | None = None  # the probe's kernel time
        self.skipped: str | None = None  # why answers are not timed (the original is too long)
        self._pool: ThreadPoolExecutor | None = None
        self._pending: tuple[tuple, Future] | None = None  # (identity, build) started by `prepare`

    def prepare(self, lowered: Lowered) -> None:
        """Start compiling `lowered` with the original in the background (the C is generated
        here, gcc runs in a thread): the build overlaps the answer's verification at the small size,
        which is most of what the guard would otherwise wait for."""
        common, kernels = split_program_c(self.program, [original(self.program), lowered])
        self._pool = self._pool or ThreadPoolExecutor(max_workers=1)
        flags, cc = self.builder.flags, self.builder.cc
        self._pending = (lowered.identity, self._pool.submit(compile_split, common, kernels, flags, cc))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _binary(self, lowered: Lowered) -> Binary:
        if self._pending is not None and self._pending[0] == lowered.identity:
            return self._pending[1].result()
        return self.builder.build([original(self.program), lowered])

    def time(self, lowered: Lowered) -> GuardResult:
        """`lowered` and the original timed interleaved (after a probe of the original, once)."""
        if ProgramBuilder.code(lowered) == ProgramBuilder.code(original(self.program)):
            return GuardResult(True, 1.0, detail="the answer prints the original's code")
        try:
            binary = self._binary(lowered)
        except CompileError as e:
            return GuardResult(False, detail="not timed: " + str(e).splitlines()[0])
        if self.baseline is None and self.skipped is None:
            self._probe(binary.path)
        if self.skipped is not None:
            return GuardResult(False, detail=self.skipped)
        per_process = runs_per_process(self.baseline)
        limit = self.limits.process(1 + per_process, self.baseline)
        timed = time_interleaved([(binary.path, 0), (binary.path, 1)], self.rounds, threads=self.threads,
                                 timeout=limit, per_process=per_process, omp_env=self.omp_env)
        if not timed[0].ok:
            return GuardResult(False, detail=f"the original's timed run failed "
                                             f"({timed[0].failure.describe_failure()}): not compared")
        base = statistics.median(timed[0].times)
        if not timed[1].ok:
            return GuardResult(True, None, base, None, self.rounds, f"over {limit:.1f} s a process")
        mine = statistics.median(timed[1].times)
        return GuardResult(True, base / mine, base, mine, self.rounds)

    def _probe(self, binary) -> None:
        """One run of the original: its time decides whether answers are timed at all."""
        t0 = time.perf_counter()
        res = run_binary(binary, 0, 1, timeout=PROBE_LIMIT, threads=self.threads, omp_env=self.omp_env)
        wall = time.perf_counter() - t0
        if res.timed_out:
            self.skipped = f"not timed: one run of the original takes over {PROBE_LIMIT:.0f} s"
        elif not res.ok or not res.times:
            self.skipped = f"not timed: the original failed ({res.describe_failure()})"
        elif res.times[0] > self.guard_seconds:
            self.skipped = (f"not timed: one run of the original takes {res.times[0]:.2f} s "
                            f"(over {self.guard_seconds:g} s)")
        else:
            self.baseline = max(res.times[0], 1e-6)
            self.limits.overhead = max(0.0, wall - res.times[0])
