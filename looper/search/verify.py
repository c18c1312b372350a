"""What stands between a search's answer and the file looper writes: verification and the speed guard.

Every answer is checked before it is written, whatever evaluator chose it (the model evaluator
compiles nothing; the measuring ones compiled with their own flags and threads):

1. **Verification** (`runtime.verify`): the answer, replayed on the program at a small size
   (`lang.resize`: SMALL, or the run's size when smaller; re-checked there with isl, since legality
   can depend on sizes), is built with the user's compiler and flags, run at 2 and 4 threads and
   compared with the original exactly (FMA rounding excused only by the re-check without
   contraction).  When the sequence does not replay at the small size, it is verified at the
   tuned size, and the report says so.
2. **The speed guard** (`runtime.speedguard`, model evaluator only: the others measured the
   answer against the original already): when a run of the original at the requested size is
   short, the answer is timed against it, interleaved, and an answer slower than the original is
   not written.

An answer that fails either is replaced by the next-best candidate (`search.fallback`) that
passes both, else by the original; every candidate passed over is reported with the reason.
Where the guard times answers in the user's own C program, the original loops in looper's code
(`Schedule.rewrite`) are the last candidate before the original, timed like any other: the model
ranks candidates against that code, never against the user's text.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from ..ir.program import Program
from ..lang.resize import Resized
from ..poly.deps import Dependences, compute_dependences
from ..poly.legality import replay
from ..runtime.ompenv import DEFAULT_ENV, OmpEnv
from ..runtime.speedguard import GuardResult, SpeedGuard
from ..runtime.userprogram import UserProgram, UserTimer
from ..runtime.status import Status
from ..runtime.verify import OutputCheck, Toolchain, Unverifiable, Verdict, verify_threads
from ..transforms.schedule import Schedule
from .scoring import Score, SearchResult
from .fallback import alternatives
from .hybrid import Verified
from .policy import SearchPolicy


@dataclass(frozen=True)
class VerifyOptions:
    """How answers are checked (`looper optimize --cc --cflags --no-verify --no-speed-guard`)."""

    toolchain: Toolchain = Toolchain()
    threads: int | None = None  # the user's thread count (None: OMP_NUM_THREADS or all cores)
    omp_env: OmpEnv = DEFAULT_ENV
    verify: bool = True
    speed_guard: bool = True
    max_alternatives: int = 5  # candidates tried after the answer, before the original
    max_timed: int = 3  # candidates the speed guard times before it settles for the original
    rewrite: bool = True  # the guard may time the original loops in looper's code (`Schedule.rewrite`)
    user: UserProgram | None = None  # the user's own program, where the guard times answers


@dataclass(frozen=True)
class Rejection:
    """A candidate that was not written, and why."""

    sequence: str
    why: str


@dataclass
class AnswerCheck:
    """What happened between the search's answer and the written one."""

    toolchain: str
    threads: tuple[int, ...]
    size: str | None = None  # where the written answer was verified (None: it was not)
    remark: str = ""  # about that verification (the tuned size and why; FMA rounding)
    skipped: str | None = None  # why the written answer is not verified
    parallel: bool = False  # the written answer has parallel loops (verified at every thread count)
    rejected: list[Rejection] = field(default_factory=list)
    guard: GuardResult | None = None  # the written answer's timing against the original
    rewritten: bool = False  # the written answer is the original loops in looper's code
    verify_seconds: float = 0.0
    guard_seconds: float = 0.0

    def lines(self) -> list[str]:
        """The report's lines (`looper optimize` prints them under the answer)."""
        out = [f"  not written: {r.sequence}\n    ({r.why})" for r in self.rejected]
        if self.rejected:
            to = ("the original" if self.size == "original" else "the original loops in looper's code"
                  if self.rewritten else "the next-best candidate")
            out.append(f"  fell back to {to}")
        if self.skipped is not None:
            out.append(f"  not verified: {self.skipped}")
        elif self.size == "original":
            out.append("  the answer is the original program: nothing to verify")
        elif self.size is not None:
            runs = f"{_and(self.threads)} threads" if self.parallel else "sequential: one run"
            out.append(f"  verified at {self.size} with {self.toolchain} ({runs}): outputs identical to the "
                       f"original's" + (f"; {self.remark}" if self.remark else ""))
        if self.guard is not None:
            out.append(f"  speed guard: {self.guard.describe()}")
        return out

    def to_json(self) -> dict:
        return {"verified": self.size is not None and self.skipped is None, "size": self.size,
                "toolchain": self.toolchain, "threads": list(self.threads) if self.parallel else [],
                "remark": self.remark, "skipped": self.skipped, "rewritten": self.rewritten,
                "rejected": [dataclasses.asdict(r) for r in self.rejected],
                "speed_guard": self.guard.to_json() if self.guard is not None else None,
                "verify_seconds": round(self.verify_seconds, 3), "guard_seconds": round(self.guard_seconds, 3)}


def _and(xs: Sequence[int]) -> str:
    return " and ".join(str(x) for x in xs) if len(xs) <= 2 else ", ".join(map(str, xs[:-1])) + f" and {xs[-1]}"


def check_answer(program: Program, result: SearchResult, kind: str, policy: SearchPolicy, deps: Dependences,
                 resized: Resized, index: int = 0, options: VerifyOptions = VerifyOptions(),
                 verified: Sequence[Verified] = ()) -> tuple[SearchResult, AnswerCheck]:
    """The answer to write, and the report of how it was chosen.  `resized`: the program at the
    verification size (`lang.resize`; its `index`-th program is this one's); `kind`: the
    evaluator that scored the search; `verified`: hybrid's measured candidates."""
    threads = verify_threads(options.threads)
    check = AnswerCheck(options.toolchain.describe(), threads)
    if not options.verify:
        check.skipped = "--no-verify"
    session = _Session(program, resized, index, options, check, guard=kind == "model" and options.speed_guard)
    if session.guard is not None and result.best.written:
        t0 = time.perf_counter()
        session.guard.prepare(result.best.lowered)  # gcc runs while the answer is verified
        check.guard_seconds += time.perf_counter() - t0
    try:
        chosen = None
        for schedule, score in _candidates(result, kind, policy, deps, verified, options.max_alternatives,
                                           options.rewrite and session.offers_rewrite):
            if schedule.steps and session.exhausted:
                continue  # what is left: the rewrite (timed however many were), the original
            if not schedule.written or session.accepts(schedule):
                chosen = (schedule, score)
                break
        if chosen is None:  # the speed guard timed its last candidate: the original
            chosen = (Schedule(program), _original_score(result))
        if not chosen[0].written:
            check.size, check.guard = ("original" if check.skipped is None else None), None
        check.rewritten = chosen[0].rewritten
    finally:
        session.close()
    return dataclasses.replace(result, best=chosen[0], best_score=chosen[1]), check


def _candidates(result: SearchResult, kind: str, policy: SearchPolicy, deps: Dependences,
                verified: Sequence[Verified], limit: int, rewrite: bool = False) -> Iterator[tuple[Schedule, Score]]:
    """The answer, then at most `limit` alternatives, then (`rewrite`) the original loops in
    looper's code, then the original."""
    if result.best.written:
        yield result.best, result.best_score
        for k, alt in enumerate(alternatives(result, kind, policy, deps, verified)):
            if k == limit:
                break
            yield alt
    program = result.best.program
    if rewrite and not result.best.rewritten:
        yield Schedule.rewrite(program), Score(1.0, Status.PREDICTED, "the original loops in looper's code",
                                               predicted=1.0)
    yield Schedule(program), _original_score(result)


def _original_score(result: SearchResult) -> Score:
    root = result.explored[0].score if result.explored and result.explored[0].score else None
    return Score(1.0, Status.OK, "original", list(root.times) if root else [], predicted=1.0)


class _Session:
    """One answer's checks: the output checks per size (built once, reused by every candidate)
    and the speed guard; records what it finds in `check`."""

    def __init__(self, program: Program, resized: Resized, index: int, options: VerifyOptions,
                 check: AnswerCheck, guard: bool):
        self.program = program
        self.small = resized.programs[index] if resized.programs else program
        self.small_label = resized.label if resized.programs else program.size_label
        self.note = resized.note
        self.options = options
        self.check = check
        self.checkers: dict[int, OutputCheck] = {}
        self.small_deps: Dependences | None = None
        user = UserTimer(options.user, options.threads, options.omp_env) if options.user is not None else None
        self.guard = SpeedGuard(program, options.toolchain, options.threads, options.omp_env, user=user) \
            if guard else None
        self.timed = 0

    def close(self) -> None:
        for c in self.checkers.values():
            c.close()
        if self.guard is not None:
            self.guard.close()

    def accepts(self, schedule: Schedule) -> bool:
        """Whether `schedule` may be written: it verifies (when asked) and is not slower than the
        original (when the guard times it); a refusal is recorded with its reason."""
        why = self._verify(schedule) if self.check.skipped is None else None
        if why is None and self.guard is not None and self.guard.skipped is None:
            why = self._time(schedule)
        if why is not None:
            self.check.rejected.append(Rejection(schedule.describe(), why))
        return why is None

    def _verify(self, schedule: Schedule) -> str | None:
        """None when the schedule's outputs are the original's; otherwise why not."""
        t0 = time.perf_counter()
        try:
            target, label, remark = self._at_small_size(schedule)
            checker = self._checker(target.program)
            verdict: Verdict = checker.verify(target.lowered)
        except Unverifiable as e:
            self.check.skipped = f"{e} (at {self.small_label}); written unverified"
            return None
        finally:
            self.check.verify_seconds += time.perf_counter() - t0
        if not verdict.ok:
            where = f"{label} ({remark})" if remark else label
            return f"wrong at {where} with {self.check.toolchain}: {verdict.detail}"
        self.check.size = label
        self.check.remark = "; ".join(filter(None, (remark, verdict.detail)))
        self.check.parallel = len(checker.thread_counts(target.lowered)) > 1
        return None

    def _at_small_size(self, schedule: Schedule) -> tuple[Schedule, str, str]:
        """The schedule replayed on the small program when it is legal there; else itself at the
        tuned size (with the reason)."""
        tuned = "the tuned size"
        if self.small is self.program:
            return schedule, self.program.size_label, (f"{tuned}: {self.note}" if self.note else "")
        if self.small_deps is None:
            self.small_deps = compute_dependences(self.small)
        replayed, why = replay(schedule, self.small, self.small_deps)
        if why is None:
            return replayed, self.small_label, ""
        return schedule, self.program.size_label, f"{tuned}: at {self.small_label}, {why}"

    def _checker(self, program: Program) -> OutputCheck:
        if id(program) not in self.checkers:
            self.checkers[id(program)] = OutputCheck(program, self.options.toolchain, self.check.threads,
                                                     self.options.omp_env)
        return self.checkers[id(program)]

    @property
    def offers_rewrite(self) -> bool:
        """Whether the guard times answers in the user's program, where the original loops in
        looper's code may beat the user's own (`Schedule.rewrite`)."""
        return self.guard is not None and self.guard.in_program

    @property
    def exhausted(self) -> bool:
        """The speed guard timed as many candidates as it may: what is left is the original."""
        return self.guard is not None and self.guard.skipped is None and self.timed >= self.options.max_timed

    def _time(self, schedule: Schedule) -> str | None:
        """None when the guard finds the schedule no slower than the original (or cannot time it)."""
        assert self.guard is not None
        t0 = time.perf_counter()
        g = self.guard.time(schedule.lowered, rewritten=True) if schedule.rewritten else self.guard.time(schedule.lowered)
        self.check.guard_seconds += time.perf_counter() - t0
        self.timed += g.timed
        self.check.guard = g
        if schedule.rewritten and not g.timed:  # nothing but the user's program tells it apart
            return g.describe()
        return f"slower than the original at {self.program.size_label}: {g.describe()}" if g.slower else None
