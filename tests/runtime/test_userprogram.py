"""Timing a scop in the user's own program (`runtime.userprogram`): the file built with its main
and the program's other sources, the region bracketed by looper's timer, run as the user runs it.
Every build here also runs, and its output is compared with the untimed original's: the timer
must measure the program without changing what it computes."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from looper.lang.c.cfile import parse_c_file
from looper.runtime.userprogram import NotRunnable, UserBuilder, UserProgram, UserTimer, run_user
from looper.search.evaluators import ExecutionEvaluator
from looper.transforms import Interchange, Parallelize
from looper.transforms.schedule import Schedule

from helpers import C_CFLAGS, SIZED_BY_DEFINES

# SIZED_BY_DEFINES with its init and print in another file, declared in a header beside it: the
# layout the companion rule finds (`UserProgram.companions`); main calls the kernel `CALLS` times
HEADER = "#define N 48\nvoid fill(double A[N][N], double B[N][N]);\nvoid show(double A[N][N]);\n"
HELPERS = r"""
#include <stdio.h>
#include "util.h"
void fill(double A[N][N], double B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      A[i][j] = (i * 7 + j) % 13 / 13.0;
      B[i][j] = (i + 3 * j) % 11 / 11.0;
    }
}
void show(double A[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      printf("%.17g\n", A[i][j]);
}
"""
# SIZED_BY_DEFINES's kernel, as it stands there
KERNEL = "void k(" + SIZED_BY_DEFINES.split("void k(", 1)[1].split("int main", 1)[0]
MAIN = r"""
#include "util.h"
static double A[N][N], B[N][N];

""" + KERNEL + r"""int main(void) {
  fill(A, B);
  for (int c = 0; c < CALLS; c++)
    k(N, A, B);
  show(A);
  return 0;
}
"""


def _project(tmp_path: Path, calls: int = 3, helpers: bool = True) -> Path:
    src = tmp_path / "k.c"
    src.write_text(MAIN.replace("CALLS", str(calls)))
    (tmp_path / "util.h").write_text(HEADER)
    if helpers:
        (tmp_path / "util.c").write_text(HELPERS)
    return src


def _tuned(program):
    """j outermost and parallel: different code, the same values."""
    return Schedule(program).then(Interchange(("S0",), 1, 3)).then(Parallelize(((("S0",), 1),)))


def _user(src: Path, **kw) -> UserProgram:
    return UserProgram(parse_c_file(src), 0, "gcc", tuple(C_CFLAGS), **kw)


def _plain_output(tmp_path: Path, src: Path) -> str:
    """What the untouched program prints, built by hand."""
    exe = tmp_path / "plain.exe"
    subprocess.run(["gcc", *C_CFLAGS, str(src), str(tmp_path / "util.c"), "-o", str(exe)], check=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


def _output(binary: Path) -> str:
    return subprocess.run([str(binary)], capture_output=True, text=True, check=True,
                          env=dict(os.environ, OMP_NUM_THREADS="2")).stdout


def test_the_region_is_timed_in_the_program_it_belongs_to(tmp_path):
    src = _project(tmp_path)
    user = _user(src)
    assert user.companions() == (str(tmp_path / "util.c"),)
    (tmp_path / "build").mkdir()
    builder = UserBuilder(user, tmp_path / "build")
    original, tuned = builder.build(None), builder.build(_tuned(user.scop.program).lowered)
    assert builder.link == (str(tmp_path / "util.c"),)  # it did not link alone
    assert builder.describe() == "k.c with util.c"
    plain = _plain_output(tmp_path, src)
    assert _output(original) == plain and _output(tuned) == plain  # timed, and computing the same
    assert "omp parallel for" in user.source(_tuned(user.scop.program).lowered)
    assert user.source(None).count("#pragma scop") == 1  # the region as written, bracketed
    res = run_user(tuned, 60, threads=2)
    assert res.ok and len(res.times) == 1 and res.times[0] > 0


def _address(binary: Path, symbol: str) -> int:
    out = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True).stdout
    return int(next(ln.split()[0] for ln in out.splitlines() if ln.split()[-1] == symbol), 16)


def test_the_timer_does_not_move_the_users_code(tmp_path):
    """The timed original's code starts where the user's own build of the file puts it (`main`
    first, the kernel inlined in it, as in PolyBench's files): the timer's library calls add no
    PLT entry before `.text` (nussinov SMALL ran 1.5x slower with its code 16-80 bytes later, and
    a slower answer was judged faster than it)."""
    src = _project(tmp_path)
    user = _user(src)
    (tmp_path / "build").mkdir()
    builder = UserBuilder(user, tmp_path / "build")
    timed = builder.build(None)
    plain = tmp_path / "plain.exe"
    subprocess.run(["gcc", *user.flags(user.source(None)), str(src), str(tmp_path / "util.c"), "-lm", "-o",
                    str(plain)], check=True)
    undefined = subprocess.run(["nm", "-u", str(timed)], capture_output=True, text=True, check=True).stdout
    assert "clock_gettime" in undefined  # the timer does call into the C library
    assert _address(timed, "main") == _address(plain, "main")


def test_every_execution_of_the_region_is_counted(tmp_path):
    """Main calls the kernel three times: the run's time is the three executions' sum, and a
    program that never runs the region cannot time it."""
    tmp_path.joinpath("three").mkdir()
    tmp_path.joinpath("none").mkdir()
    three = UserBuilder(_user(_project(tmp_path / "three", calls=3)), tmp_path / "three")
    res = run_user(three.build(None), 60)
    assert res.ok and res.times[0] > 0
    timer_file = (tmp_path / "seen.txt")
    subprocess.run([str(three.build(None))], check=True, capture_output=True,
                   env=dict(os.environ, LOOPER_REGION_TIME=str(timer_file)))
    assert timer_file.read_text().split()[1] == "3"
    never = UserBuilder(_user(_project(tmp_path / "none", calls=0)), tmp_path / "none")
    res = run_user(never.build(None), 60)
    assert not res.ok and "never ran the region" in res.describe_failure()


def test_link_names_what_the_companion_rule_would_not_find(tmp_path):
    elsewhere = tmp_path / "lib"
    elsewhere.mkdir()
    src = _project(tmp_path, helpers=False)
    (elsewhere / "helpers.c").write_text(HELPERS.replace('"util.h"', f'"{tmp_path / "util.h"}"'))
    (tmp_path / "b1").mkdir()
    with pytest.raises(NotRunnable, match=r"does not link: .*(fill|show).* undefined \(pass the program's other "
                                          r"sources with --link\)"):
        UserBuilder(_user(src), tmp_path / "b1").build(None)
    (tmp_path / "b2").mkdir()
    linked = UserBuilder(_user(src, link=(str(elsewhere / "helpers.c"),)), tmp_path / "b2")
    assert _output(linked.build(None)) == _output(linked.build(_tuned(linked.user.scop.program).lowered))


def test_a_timer_the_compiler_refuses_is_not_blamed_on_the_users_file(tmp_path):
    """A compiler that builds the user's file but not looper's timer: the reason names the timer
    (it read "the file does not compile" when the timer was built inside the link attempts)."""
    src = _project(tmp_path)
    cc = tmp_path / "picky-cc"
    cc.write_text('#!/bin/sh\ncase "$*" in *region_timer.c*) '
                  'echo "region_timer.c:1:1: error: refused here" >&2; exit 1;; esac\nexec gcc "$@"\n')
    cc.chmod(0o755)
    user = UserProgram(parse_c_file(src), 0, str(cc), tuple(C_CFLAGS))
    (tmp_path / "build").mkdir()
    with pytest.raises(NotRunnable, match=r"^looper's region timer does not compile with the program's compiler "
                                          r"and flags: region_timer.c:1:1: error: refused here$"):
        UserBuilder(user, tmp_path / "build").build(None)


def test_a_file_without_main_is_timed_in_looper_harness(tmp_path):
    src = tmp_path / "lib.c"
    src.write_text(SIZED_BY_DEFINES.split("int main(void)")[0])
    timer = UserTimer(_user(src), threads=2)
    try:
        assert not timer.ready()
        assert timer.skipped == "the file has no main (pass the program's other sources with --link)"
        assert timer.time([None]) is None
    finally:
        timer.close()


def test_the_evaluator_judges_in_the_users_program(tmp_path):
    """`time_together` times the original and the schedules in the user's program when the
    evaluator has it, says so (`judged_in`), and in its own harness when it has not."""
    src = _project(tmp_path, calls=1)
    user = _user(src)
    program = user.scop.program
    evaluator = ExecutionEvaluator(program, threads=2, flags=tuple(C_CFLAGS), memoize=False)
    try:
        evaluator.user = UserTimer(user, threads=2)
        original, [(speedup, times)] = evaluator.time_together(program, [_tuned(program)], rounds=3)
        assert len(original) == 3 and len(times) == 3 and speedup > 0
        assert evaluator.judged_in == "in your program (k.c with util.c)"
        evaluator.user.close()
        evaluator.user = None
        original, [(speedup, times)] = evaluator.time_together(program, [_tuned(program)], rounds=3)
        assert len(original) == 3 and evaluator.judged_in == "in looper's harness"
    finally:
        evaluator.close()


def test_the_speed_guard_times_answers_in_the_users_program(tmp_path):
    from looper.runtime.speedguard import SpeedGuard
    from looper.runtime.verify import Toolchain
    src = _project(tmp_path, calls=1)
    user = _user(src)
    guard = SpeedGuard(user.scop.program, Toolchain("gcc", tuple(C_CFLAGS)), 2, rounds=3,
                       user=UserTimer(user, threads=2))
    try:
        result = guard.time(_tuned(user.scop.program).lowered)
    finally:
        guard.close()
    assert result.timed and result.judgement is not None, result.describe()
    assert result.judgement.where == "in your program (k.c with util.c)"
    assert len(result.judgement.answer) == 3 and "in your program (k.c with util.c)" in result.judgement.describe()


def test_a_program_whose_init_would_cost_too_much_is_judged_in_looper_harness(tmp_path):
    """A judgement may spend `outside_budget` seconds running the program outside the region
    (LARGE cholesky builds its matrix in O(N^3): 11 s a run, tripling the search)."""
    src = _project(tmp_path, calls=1)
    timer = UserTimer(_user(src), threads=2, outside_budget=0.0)
    try:
        assert timer.ready() and timer.time([None, _tuned(timer.user.scop.program).lowered], rounds=3) is None
        assert "outside the region, and 3 runs of 2 programs would add" in timer.skipped
    finally:
        timer.close()
