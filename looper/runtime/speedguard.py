"""Timing an answer against the original before it is written: never an answer slower than it.

Why: a cost model is sometimes wrong by more than its margin (on programs outside PolyBench, a
two-nest stencil's answer ran at 0.49x), and the model evaluator measures nothing.  When one run
of the original at the requested size is short (`GUARD_SECONDS`), timing both costs little: the
answer and the original run as users run them, interleaved, each run a fresh process timing one
cold call (`runtime.run.time_as_run`), in the user's OpenMP environment, with the user's compiler
and flags, and are judged by their means (`runtime.judge`).  A longer original is not timed (the
probe says so; the hybrid search measures its candidates at any size).  Where the input is a C
file with a `main`, both run in that program, as the user runs it (`runtime.userprogram`; in
looper's harness when it cannot time the region, and the report says why).

Every run has a time limit: the probe `PROBE_LIMIT`, the timed runs `TimeLimits.process` of the
original's time (an answer more than a few times slower is cut off: slower, whatever its time).
"""
from __future__ import annotations

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
from .judge import Judgement
from .run import AS_RUN, Protocol, run_binary, time_as_run
from .userprogram import UserTimer
from .verify import Toolchain

GUARD_SECONDS = 1.0  # the original's kernel time (one run) under which answers are timed
PROBE_LIMIT = 20.0  # seconds for the probe: one process running the original once


@dataclass
class GuardResult:
    """One answer timed against the original (or why it was not)."""

    timed: bool
    judgement: Judgement | None = None  # None: not timed, or the answer's runs failed
    detail: str = ""

    @property
    def speedup(self) -> float | None:
        return self.judgement.speedup if self.judgement is not None else None

    @property
    def slower(self) -> bool:
        """Whether the answer must not be written: not faster as users run it (or cut off)."""
        return self.timed and (self.judgement is None or not self.judgement.faster)

    def describe(self) -> str:
        if not self.timed:
            return self.detail
        if self.judgement is None:
            return f"the answer did not finish in time ({self.detail})"
        return self.judgement.why_not() or self.judgement.describe()

    def to_json(self) -> dict:
        return {"timed": self.timed, "speedup": self.speedup, "detail": self.detail,
                **(self.judgement.to_json() if self.judgement is not None else {})}


class SpeedGuard:
    """Times answers of one program at the requested size against its original."""

    def __init__(self, program: Program, toolchain: Toolchain, threads: int | None,
                 omp_env: OmpEnv = DEFAULT_ENV, rounds: int | None = None, guard_seconds: float = GUARD_SECONDS,
                 protocol: Protocol = AS_RUN, user: UserTimer | None = None):
        self.program = program
        self.user = user  # the user's own program, where answers are timed when it can
        self.builder = ProgramBuilder(program, toolchain.cflags, cc=toolchain.cc)
        self.threads = threads
        self.omp_env = omp_env
        self.rounds = rounds  # None: as many as the protocol judges by
        self.protocol = protocol
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
        if self.user is not None:
            self.user.close()

    def _binary(self, lowered: Lowered) -> Binary:
        if self._pending is not None and self._pending[0] == lowered.identity:
            return self._pending[1].result()
        return self.builder.build([original(self.program), lowered])

    @property
    def in_program(self) -> bool:
        """Whether answers are timed in the user's own program (probing it once): only there can
        the original loops in looper's code (`Schedule.rewrite`) be told from the user's."""
        return self.user is not None and self.user.ready(PROBE_LIMIT) and self.user.seconds is not None \
            and self.user.seconds <= self.guard_seconds

    def time(self, lowered: Lowered, rewritten: bool = False) -> GuardResult:
        """`lowered` and the original timed interleaved (after a probe of the original, once).
        `rewritten`: `lowered` is the original's loops, timed only in the user's program."""
        if rewritten:
            if not self.in_program:
                return GuardResult(False, detail="not timed: only your program tells looper's code of the "
                                                 "original loops from yours")
            return self._in_program(lowered, fallback=False)
        if ProgramBuilder.code(lowered) == ProgramBuilder.code(original(self.program)):
            return GuardResult(False, detail="not timed: the answer prints the original's code")
        if self.user is not None and self.user.ready(PROBE_LIMIT):
            return self._in_program(lowered)
        try:
            binary = self._binary(lowered)
        except CompileError as e:
            return GuardResult(False, detail="not timed: " + str(e).splitlines()[0])
        if self.baseline is None and self.skipped is None:
            self._probe(binary.path)
        if self.skipped is not None:
            return GuardResult(False, detail=self.skipped)
        rounds = self.rounds or self.protocol.runs(self.baseline, judging=True)
        limit = self.limits.process(2, self.baseline)
        timed = time_as_run([(binary.path, 0), (binary.path, 1)], rounds, threads=self.threads,
                            timeout=limit, omp_env=self.omp_env)
        where = "in looper's harness" + (f" (not in your program: {self.user.skipped})" if self.user else "")
        return _result(timed, limit, where)

    def _in_program(self, lowered: Lowered, fallback: bool = True) -> GuardResult:
        """`lowered` and the original timed in the user's program (`runtime.userprogram`);
        `fallback`: in looper's harness when it does not build there."""
        assert self.user is not None and self.user.seconds is not None
        if self.user.seconds > self.guard_seconds:
            return GuardResult(False, detail=f"not timed: the region takes {self.user.seconds:.2f} s in your program "
                                             f"(over {self.guard_seconds:g} s)")
        timed = self.user.time([None, lowered], self.rounds)
        if timed is None:  # the answer did not build there: `skipped` says why, the harness times it
            return self.time(lowered) if fallback else GuardResult(False, detail=f"not timed: {self.user.skipped}")
        return _result(timed, self.user.limits.process(1, self.user.seconds), self.user.describe())

    def _probe(self, binary) -> None:
        """One run of the original: its time decides whether answers are timed at all."""
        t0 = time.perf_counter()
        res = run_binary(binary, 0, 1, timeout=PROBE_LIMIT, threads=self.threads, omp_env=self.omp_env, cold=True)
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


def _result(timed: list, limit: float, where: str) -> GuardResult:
    """The original's and the answer's interleaved runs judged (or why they could not be)."""
    if not timed[0].ok:
        return GuardResult(False, detail=f"the original's timed run failed "
                                         f"({timed[0].failure.describe_failure()}): not compared")
    if not timed[1].ok:
        return GuardResult(True, None, f"over {limit:.1f} s a process")
    return GuardResult(True, Judgement(tuple(timed[0].times), tuple(timed[1].times), where=where))
