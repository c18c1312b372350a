"""Timing a scop in the user's own program: the C file built and run as the user builds and runs it.

Why: looper's harness is not the user's program.  The same loops compile differently amid other
code (arrays as pointer parameters or as globals, sizes as variables or constants, what runs
before the kernel), and an answer judged faster in looper's harness can run slower in the user's.
PolyBench's deriche SMALL: `fuse ; expand ; tile`, a few % faster in looper's harness, ran at
0.72x gcc in PolyBench's own (0.444 ms against 0.319, every one of 24 fresh runs).

So where the input is a C file with a `main`, the judgements that decide what is written (the
confirmation of a search's finalists, the speed guard) time the candidates in that program: the
file with its scop region replaced as `looper optimize` writes it (`codegen.inplace`) and
bracketed by calls to a timer (its own translation unit, `templates/region_timer.c`), built with
the user's compiler and flags, the file's -I and -D, and the other sources the program links with,
then run with no arguments in fresh processes, in the user's OpenMP environment.  One run's time
is the seconds spent in the region, summed over its executions in the process: what a run of the
program pays for it, the team's start and every call included.

The timer must not move the user's code: its calls into the C library (clock_gettime, atexit,
fopen) would each add a PLT entry, and the PLT sits before `.text`, so every function of the
user's file would start 16-80 bytes later.  PolyBench's nussinov SMALL ran 0.43 ms as built and
0.6-0.7 ms with its `main` moved by 16 or 80 bytes (the same instructions), and a slower answer
was judged faster than that.  So the timer is its own object, compiled with `-fno-plt` (its calls
go through the GOT), reporting from a destructor kept in `.text` (`KEEP_PLACE`), and linked after
the user's file: the user's code keeps its addresses, but for the two calls that bracket the
region.

The other sources: `link` names them; else, when the file does not link alone, the `.c` beside
each header it includes (`polybench.h` -> `polybench.c`), the usual layout of a C library's
sources.  A file without `main`, a program that fails, or one that never runs the region is
timed in looper's harness instead, and the report says why (`UserTimer.skipped`); so is one whose
runs would spend more than `OUTSIDE_BUDGET` seconds outside the region (an expensive init).
"""
from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Sequence

from ..codegen.inplace import Version, versions_code
from ..ir.schedule import Lowered
from ..lang.c.cfile import CFile, CScop
from .compile import OPT_FLAGS, CompileError, openmp_flags, run_compiler
from .limits import TimeLimits
from .ompenv import DEFAULT_ENV, OmpEnv
from .process import run_tool
from .run import AS_RUN, Interleaved, Protocol, RunResult, time_as_run

TIME_VARIABLE = "LOOPER_REGION_TIME"  # the file the timer writes `seconds calls` to at exit
OPENMP = ("-fopenmp", "-fopenmp-simd")
PROBE_LIMIT = 120.0  # seconds for the probe (one run of the original), unless the caller knows better
# seconds a judgement may spend running the program outside the region (its init, its output):
# PolyBench's cholesky, lu and ludcmp at LARGE build their matrices in O(N^3), about 11 s a run
# against the kernel's 1.5 s, and 16 runs of them tripled cholesky's search (45 s -> 241 s)
OUTSIDE_BUDGET = 60.0
# the timer's own flags: its library calls through the GOT (a PLT entry would sit before `.text`),
# and its exit-time report in `.text` (reordered, a destructor goes to `.text.exit`, which the
# linker places before the user's `main`); dropped from the end where the compiler refuses them
KEEP_PLACE = ("-fno-plt", "-fno-reorder-functions")
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


class NotRunnable(Exception):
    """Why the user's program cannot time the region (said in the report, then looper's harness)."""


@dataclass(frozen=True)
class UserProgram:
    """One scop of a C file, in the program the file is part of."""

    cfile: CFile
    index: int  # which scop
    cc: str = "gcc"
    cflags: tuple[str, ...] = OPT_FLAGS  # the user's flags (`-fopenmp` only where a team starts)
    link: tuple[str, ...] = ()  # the program's other sources, objects and libraries (`--link`)
    cwd: str = "."  # where the program runs and relative paths of the flags start

    @property
    def scop(self) -> CScop:
        return self.cfile.scops[self.index]

    @property
    def timer(self) -> str:
        """The timer functions' prefix: the file's own prefix, which no identifier of it has."""
        return f"{self.cfile.prefix}region"

    def source(self, lowered: Lowered | None) -> str:
        """The file with the region replaced by `lowered` (None: kept as written; the other
        regions always are) and bracketed by the timer's calls, in a block of its own."""
        cfile, scop = self.cfile, self.scop
        nl = "\r\n" if scop.text.split("\n", 1)[0].endswith("\r") else "\n"
        region = versions_code([Version(scop, lowered, "looper: timed")], cfile.prefix, nl)
        ind, t = scop.indent, self.timer
        line = cfile.original.count("\n", 0, scop.begin) + 1
        return (f"void {t}_begin(void);{nl}void {t}_end(void);{nl}#line 1 \"{_quoted(cfile.path)}\"{nl}"
                + cfile.original[:scop.begin] + f"{ind}{{ {t}_begin();{nl}#line {line}{nl}" + region
                + f"{ind}{t}_end(); }}{nl}#line {line + scop.text.count(chr(10))}{nl}" + cfile.original[scop.end:])

    def timer_source(self) -> str:
        return resources.files(__package__).joinpath("templates", "region_timer.c").read_text() \
            .replace("PREFIX", self.timer)

    def flags(self, source: str) -> tuple[str, ...]:
        """The compiler's flags for `source`: the user's, with OpenMP where it starts a team
        (`compile.openmp_flags`, as the bench builds every system), the file's -D and -I (paths
        from `cwd`), and its directory for its quoted includes."""
        cpp = tuple(_absolute(f, self.cwd) for f in self.cfile.cpp_flags)
        here = str(Path(self.cwd, self.cfile.path).resolve().parent)
        return tuple(f for f in self.cflags if f not in OPENMP) + openmp_flags(source) + cpp + ("-iquote", here)

    def companions(self) -> tuple[str, ...]:
        """The `.c` beside each header the file includes (in its directory or an -I one)."""
        dirs = [Path(self.cwd, self.cfile.path).resolve().parent] + \
            [Path(self.cwd, f[2:]).resolve() for f in self.cfile.cpp_flags if f.startswith("-I") and len(f) > 2]
        itself = Path(self.cwd, self.cfile.path).resolve()
        out: list[str] = []
        for header in _INCLUDE.findall(self.cfile.original):
            if not header.endswith(".h"):
                continue
            for d in dirs:
                c = (d / header).with_suffix(".c")
                if (d / header).is_file() and c.is_file():
                    if c.resolve() != itself and str(c) not in out:
                        out.append(str(c))
                    break
        return tuple(out)


def _quoted(path: str) -> str:
    return path.replace("\\", "\\\\").replace('"', '\\"')


def _absolute(flag: str, cwd: str) -> str:
    return f"-I{Path(cwd, flag[2:]).resolve()}" if flag.startswith("-I") and len(flag) > 2 else flag


class UserBuilder:
    """Builds variants of the region into the user's program, once per distinct source."""

    def __init__(self, user: UserProgram, workdir: Path, timeout: float = 600.0, jobs: int = 1):
        self.user = user
        self.workdir = workdir
        self.timeout = timeout
        self.jobs = jobs  # builds run at once: the host's CPUs (`Target.cores`)
        self.link: tuple[str, ...] | None = None  # what links, once a build did
        self._built: dict[str, Path] = {}
        self._names = itertools.count()  # v0, v1, ...: one per build, reserved under `_lock`
        self._lock = threading.Lock()
        self._timer: Path | None = None  # the timer's object, compiled at the first build

    def describe(self) -> str:
        """`deriche.c with polybench.c`: the program, for reports."""
        others = [Path(x).name for x in (self.link or ())]
        return Path(self.user.cfile.path).name + (f" with {', '.join(others)}" if others else "")

    def build(self, lowered: Lowered | None) -> Path:
        """The program with `lowered` in the region: a `NotRunnable` when it cannot be built
        (a `CompileError` where looper's code does not compile, which is looper's bug)."""
        source = self.user.source(lowered)
        if source in self._built:
            return self._built[source]
        with self._lock:
            n = next(self._names)
        src = self.workdir / f"v{n}_{Path(self.user.cfile.path).name}"
        src.write_bytes(source.encode("utf-8", "surrogateescape"))
        out = self.workdir / f"v{n}"
        try:
            self.timer_object()
        except CompileError as e:  # not the user's file: say what failed
            raise NotRunnable("looper's region timer does not compile with the program's compiler and flags: "
                              + _first_error(str(e))) from e
        choices = [self.link] if self.link is not None else \
            [self.user.link] if self.user.link else list(dict.fromkeys([(), self.user.companions()]))
        error: CompileError | None = None
        for link in choices:
            try:
                self._compile(src, out, link, source)
            except CompileError as e:
                error = e
                if "undefined reference" not in str(e) or "main" in _undefined(str(e)):
                    break
                continue
            self.link = link
            self._built[source] = out
            return out
        raise NotRunnable(_why(str(error), lowered is None)) from error

    def build_all(self, variants: Sequence[Lowered | None]) -> list[Path]:
        """`build` of each variant, `jobs` at a time: the first alone, which settles how the
        program links and compiles the timer, then the others at once."""
        if not variants:
            return []
        first = self.build(variants[0])
        if len(variants) == 1 or self.jobs < 2:
            return [first] + [self.build(v) for v in variants[1:]]
        with ThreadPoolExecutor(min(self.jobs, len(variants) - 1)) as pool:
            return [first] + list(pool.map(self.build, variants[1:]))

    def timer_object(self) -> Path:
        """The timer compiled alone, with the user's compiler and flags (its ABI) and those of
        `KEEP_PLACE` the compiler takes: nothing of it lands before the user's code."""
        if self._timer is None:
            src, obj = self.workdir / "region_timer.c", self.workdir / "region_timer.o"
            src.write_text(self.user.timer_source())
            flags = [f for f in self.user.cflags if f not in OPENMP]
            for n in range(len(KEEP_PLACE), -1, -1):
                cmd = [self.user.cc, *flags, *KEEP_PLACE[:n], "-c", str(src), "-o", str(obj)]
                try:
                    run_compiler(cmd, self.timeout, " ".join(flags + list(KEEP_PLACE[:n])))
                    break
                except CompileError:
                    if n == 0:
                        raise
            self._timer = obj
        return self._timer

    def _compile(self, src: Path, out: Path, link: tuple[str, ...], source: str) -> None:
        flags = self.user.flags(source)
        timer = self.timer_object()
        others = [str(Path(self.user.cwd, x).resolve()) if not x.startswith("-") else x for x in link]
        # the user's file first: its code starts where it does in the user's own build
        cmd = [self.user.cc, *flags, str(src), *others, str(timer), "-lm", "-o", str(out)]
        run_compiler(cmd, self.timeout, " ".join(flags))


def _undefined(message: str) -> set[str]:
    return set(re.findall(r"undefined reference to [`'](\w+)'", message))


def _why(message: str, original: bool) -> str:
    """What a failed build of the user's program says in the report."""
    if "main" in _undefined(message):
        return "the file has no main (pass the program's other sources with --link)"
    missing = sorted(_undefined(message))
    if missing:
        return (f"it does not link: {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''} undefined "
                f"(pass the program's other sources with --link)")
    head = "the file does not compile" if original else "looper's code does not compile in the file"
    return f"{head}: {_first_error(message)}"


def _first_error(message: str) -> str:
    """The compiler's first error line (its message's first line is the command)."""
    lines = [ln for ln in message.splitlines()[1:] if "error" in ln] or message.splitlines()[1:2]
    return lines[0].strip() if lines else "the compiler failed"


def run_user(path: Path, timeout: float | None, threads: int | None = None, omp_env: OmpEnv = DEFAULT_ENV,
             cwd: str = ".") -> RunResult:
    """One fresh run of the user's program: its time is the region's (`TIME_VARIABLE`)."""
    env = omp_env.apply(dict(os.environ))
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    fd, out = tempfile.mkstemp(prefix="looper-region-", suffix=".txt")
    os.close(fd)
    env[TIME_VARIABLE] = out
    try:
        try:
            res = run_tool([str(path)], timeout, env=env, cwd=cwd, stdin=subprocess.DEVNULL, errors="replace")
        except subprocess.TimeoutExpired:
            return RunResult(-9, [], "", "", timed_out=True)
        text = Path(out).read_text().split()
    finally:
        os.unlink(out)
    result = RunResult(res.returncode, [], "", res.stderr[-2000:])
    if res.returncode == 0 and len(text) == 2 and int(text[1]) > 0:
        result.times = [float(text[0])]
    elif res.returncode == 0:
        result.returncode, result.stderr = 1, "the program never ran the region"
    return result


class UserTimer:
    """Variants of one scop timed in the user's program, interleaved in fresh processes: a probe
    of the original first (whether the program runs, how long the region and a run take)."""

    def __init__(self, user: UserProgram, threads: int | None = None, omp_env: OmpEnv = DEFAULT_ENV,
                 protocol: Protocol = AS_RUN, outside_budget: float = OUTSIDE_BUDGET, jobs: int = 1):
        self.user = user
        self.outside_budget = outside_budget
        self.threads = threads
        self.omp_env = omp_env
        self.protocol = protocol
        self.workdir = Path(tempfile.mkdtemp(prefix="looper-user-"))
        self.builder = UserBuilder(user, self.workdir, jobs=jobs)  # `jobs`: builds at once
        self.limits = TimeLimits()
        self.seconds: float | None = None  # the region's time in the probe
        self.skipped: str | None = None  # why the program cannot time the region

    def describe(self) -> str:
        return f"in your program ({self.builder.describe()})"

    def ready(self, limit: float = PROBE_LIMIT) -> bool:
        """Whether the program times the region (the probe, one run of the original within
        `limit` seconds, runs once)."""
        if self.seconds is None and self.skipped is None:
            self._probe(limit)
        return self.skipped is None

    def _probe(self, limit: float) -> None:
        try:
            binary = self.builder.build(None)
        except NotRunnable as e:
            self.skipped = str(e)
            return
        t0 = time.perf_counter()
        res = run_user(binary, limit, self.threads, self.omp_env, self.user.cwd)
        wall = time.perf_counter() - t0
        if res.timed_out:
            self.skipped = f"one run of the program took over {limit:.0f} s"
        elif not res.ok:
            self.skipped = f"the program failed ({res.describe_failure()})"
        else:
            self.seconds = max(res.times[0], 1e-6)
            self.limits.overhead = max(0.0, wall - res.times[0])

    def time(self, variants: Sequence[Lowered | None], rounds: int | None = None,
             limit: float = PROBE_LIMIT) -> list[Interleaved] | None:
        """Each variant's runs (None: the region as written), interleaved in `rounds` rounds
        (None: as many as the protocol judges by); variants that print the same file share one
        binary and its runs.  None when the program cannot time them (`skipped` says why).
        `limit`: the probe's, when it has not run yet."""
        if not self.ready(limit):
            return None
        try:
            binaries = self.builder.build_all(variants)
        except NotRunnable as e:
            self.skipped = str(e)
            return None
        distinct = list(dict.fromkeys(binaries))
        rounds = rounds if rounds is not None else self.protocol.runs(self.seconds, judging=True)
        outside = (self.limits.overhead or 0.0) * rounds * len(distinct)
        if outside > self.outside_budget:
            self.skipped = (f"a run of it spends {self.limits.overhead:.1f} s outside the region, and {rounds} runs "
                            f"of {len(distinct)} programs would add {outside:.0f} s (over {self.outside_budget:.0f})")
            return None
        limit = self.limits.process(1, self.seconds)
        timed = time_as_run([(b, 0) for b in distinct], rounds, timeout=limit,
                            run_one=lambda pair, lim: run_user(pair[0], lim, self.threads, self.omp_env,
                                                                self.user.cwd))
        return [timed[distinct.index(b)] for b in binaries]

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
