"""The original loops in looper's code (`Schedule.rewrite`): an answer of its own for C rewritten
in place, judged like any other, written and recorded only when it wins in the user's program.

Tests never rely on wall-clock times: where a judgement decides, its runs are fixed numbers."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import looper
from looper.codegen.inplace import answer_code
from looper.lang.c.cfile import parse_c_file
from looper.poly.legality import replay
from looper.runtime.judge import Judgement
from looper.runtime.speedguard import GuardResult
from looper.search.budget import Budgeted, confirm_finalists
from looper.search.scoring import Explored, Score, SearchResult
from looper.transforms.schedule import REWRITTEN, Schedule
from looper.tune.records import Record

from helpers import C_CFLAGS, build_and_run

# bicg's second nest on pointer parameters: `q[i]` is kept in memory by gcc (q may alias A or p)
MATVEC = r"""
#include <stdio.h>
#ifndef N
#define N 64
#endif
static double A[N][N], p[N], q[N];

void k(int n, double A[N][N], double p[N], double q[N]) {
  int i, j;
#pragma scop
  for (i = 0; i < n; i++) {
    q[i] = 0.0;
    for (j = 0; j < n; j++)
      q[i] = q[i] + A[i][j] * p[j];
  }
#pragma endscop
}

int main(void) {
  for (int i = 0; i < N; i++) {
    p[i] = (i % 7) / 7.0;
    for (int j = 0; j < N; j++)
      A[i][j] = (i * 7 + j) % 13 / 13.0;
  }
  k(N, A, p, q);
  for (int i = 0; i < N; i++)
    printf("%.17g\n", q[i]);
  return 0;
}
"""


def _c_file(tmp_path: Path) -> Path:
    src = tmp_path / "k.c"
    src.write_text(MATVEC)
    return src


def _output(tmp_path: Path, text: str, name: str) -> str:
    """What a C program prints (`helpers.build_and_run`: exact arithmetic)."""
    src = tmp_path / f"{name}.c"
    src.write_text(text)
    return build_and_run(src, [""])


def test_a_rewrite_is_the_original_loops_written_with_looper_s_locals(tmp_path):
    """The original loops, printed as any answer is (`codegen.scalars`: `q[i]` in a local), where
    the original as a baseline is printed without; the same values either way."""
    from looper.runtime.builder import ProgramBuilder
    program = parse_c_file_program()
    original, rewrite = Schedule(program), Schedule.rewrite(program)
    assert not original.written and answer_code(original) is None
    assert rewrite.written and rewrite.rewritten and not rewrite.steps
    assert rewrite.lowered.rows == original.lowered.rows and rewrite.identity != original.identity
    assert rewrite.describe() == REWRITTEN and original.describe() == "original"
    kept = re.compile(r"double (?:looper_)?c\d+_\d+ = q\[(?:looper_)?c1\];")
    assert kept.search(ProgramBuilder.code(rewrite.lowered))
    assert not kept.search(ProgramBuilder.code(original.lowered))
    moved, why = replay(rewrite, program)
    assert why is None and moved.rewritten  # at another size it stays written
    from looper.codegen.inplace import inplace_source
    cfile = parse_c_file(_c_file(tmp_path))
    text = inplace_source(cfile, [Schedule.rewrite(cfile.scops[0].program).lowered], ["looper: rewritten"])
    assert kept.search(text) and _output(tmp_path, text, "rewritten") == _output(tmp_path, MATVEC, "original")


def parse_c_file_program(tmp_path: Path | None = None):
    import tempfile
    d = Path(tempfile.mkdtemp()) if tmp_path is None else tmp_path
    return parse_c_file(_c_file(d)).scops[0].program


def test_a_record_keeps_the_rewrite():
    from looper.tune.records import Machine, ProgramKey
    key = ProgramKey("k", "abc", (("n", 64),))
    rec = Record(key, Machine("cpu"), "model", (), REWRITTEN, 1.0, 2.5, rewritten=True)
    back = Record.from_json(rec.to_json())
    assert back.rewritten and back == rec
    plain = Record(key, Machine("cpu"), "model", (), "original", 1.0)
    assert "rewritten" not in plain.to_json() and not Record.from_json(plain.to_json()).rewritten


def _original_answer(monkeypatch):
    """The search answers the original (as the model does for bicg MEDIUM: nothing predicted above 1)."""
    import looper.tune.pipeline as tuning

    def fake_beam(program, deps, evaluator, policy, progress=None):
        root = Explored(Schedule(program), "original", "root", Score(1.0, "ok", "original", predicted=1.0))
        return SearchResult(root.schedule, root.score, [root], 0.0, 0.0, [])

    monkeypatch.setattr(tuning, "beam_search", fake_beam)


def _guard_finds(monkeypatch, rewrite_speedup: float, timed: list, answer_speedup: float = 0.5):
    """The speed guard's runs, fixed: the rewrite `rewrite_speedup` times as fast as the original,
    any other answer `answer_speedup` times."""
    import looper.runtime.speedguard as sg

    def fake_time(self, lowered, rewritten=False):
        timed.append(rewritten)
        speedup = rewrite_speedup if rewritten else answer_speedup
        original = tuple(1e-3 * (1 + 0.01 * (k % 3)) for k in range(24))
        return GuardResult(True, Judgement(original, tuple(t / speedup for t in original),
                                           where="in your program (k.c)"))

    monkeypatch.setattr(sg.SpeedGuard, "time", fake_time)
    monkeypatch.setattr(sg.SpeedGuard, "in_program", property(lambda self: True))


def _model_answer_judged(monkeypatch, tmp_path: Path, rewrite_speedup: float):
    """`looper.optimize` of the C file with the model answering the original and the guard's runs
    fixed (`_guard_finds`): (the optimized file, its kernel, what the guard timed)."""
    _original_answer(monkeypatch)
    timed: list = []
    _guard_finds(monkeypatch, rewrite_speedup, timed)
    f = looper.optimize(_c_file(tmp_path), evaluator="model", cflags=" ".join(C_CFLAGS))
    (k,) = f.kernels
    return f, k, timed


def test_the_rewrite_is_written_when_it_wins_in_the_users_program(monkeypatch, tmp_path):
    """The model answers the original; timed in the user's program, looper's code of the same
    loops wins: it is written, verified, recorded, and computes what the user's code computes."""
    f, k, timed = _model_answer_judged(monkeypatch, tmp_path, 2.0)
    assert timed == [True] and k.schedule.rewritten and k.sequence == REWRITTEN
    assert k.check.rewritten and k.check.size is not None and k.check.size != "original"
    assert "speed guard: 2.00x the original" in k.describe()
    assert f.source != MATVEC and "looper_disjoint" in f.source
    assert _output(tmp_path, f.source, "rewritten") == _output(tmp_path, MATVEC, "original")
    from looper.tune.recording import kernel_record
    from looper.tune.records import this_machine
    from looper.tune.versions import SizeSpec
    rec = kernel_record(k, f.cfile.scops[0].size_vars, SizeSpec(), this_machine())
    assert rec.rewritten and rec.sequence == () and Record.from_json(rec.to_json()).rewritten


def test_the_rewrite_is_not_written_when_it_does_not_win(monkeypatch, tmp_path):
    f, k, timed = _model_answer_judged(monkeypatch, tmp_path, 0.9)
    assert timed == [True] and not k.schedule.written and k.sequence == "original"
    assert [r.sequence for r in k.check.rejected] == [REWRITTEN]
    assert "its mean is not below the original's" in k.check.rejected[0].why
    assert f.source == MATVEC


def test_python_programs_are_never_offered_the_rewrite(monkeypatch):
    """looper's harness runs looper's code of the original: there is nothing to tell apart."""
    _original_answer(monkeypatch)
    import looper.runtime.speedguard as sg
    timed: list = []
    monkeypatch.setattr(sg.SpeedGuard, "time", lambda self, lowered, rewritten=False: timed.append(rewritten))
    k = looper.optimize("polybench:bicg", size="MINI", evaluator="model")
    assert timed == [] and k.sequence == "original" and not k.check.rejected


class _InProgram:
    """An evaluator timing in the user's program, with fixed runs: the original at 1 ms, each
    schedule at the time `speeds` gives it (keyed by its description)."""

    judged_in = "in your program (k.c)"
    failed = ()

    def __init__(self, program, speeds: dict[str, float], in_program: bool = True, added: float = 30.0):
        self.program, self.speeds, self.in_program, self.timed = program, speeds, in_program, []
        self.added = added  # seconds one more schedule adds to the confirmation

    def added_seconds(self) -> float:
        return self.added

    def times_in_program(self, program) -> bool:
        return self.in_program and program is self.program

    def time_together(self, program, schedules, rounds=None):
        self.timed.append([s.describe() for s in schedules])
        original = [1e-3 * (1 + 0.01 * (k % 3)) for k in range(24)]
        out = []
        for s in schedules:
            t = [x * self.speeds[s.describe()] for x in original]
            out.append((sum(original) / sum(t), t))
        return original, out


def test_the_hybrid_confirms_the_rewrite_with_its_finalists():
    """The rounds ran in looper's harness, where the rewrite is the original; the confirmation
    times it in the user's program with the finalists, and the fastest the judgement passes wins."""
    from looper.search.budget import Candidate
    from looper.transforms import Interchange
    program = parse_c_file_program()
    tuned = Schedule(program).then(Interchange(("S0",), 1, 3))
    finalist = Candidate(tuned, 1.2, "", "plain", 1.2, measured=Score(1.2, "ok", "", [1.0]))
    evaluator = _InProgram(program, {tuned.describe(): 0.7, REWRITTEN: 0.4})
    best, score = confirm_finalists(program, [finalist], evaluator, 0.0, Budgeted([]))
    assert evaluator.timed == [[tuned.describe(), REWRITTEN]]
    assert best.rewritten and score.speedup == pytest.approx(2.5)
    slower = _InProgram(program, {tuned.describe(): 0.7, REWRITTEN: 0.9})
    best, _ = confirm_finalists(program, [finalist], slower, 0.0, Budgeted([]))
    assert best is tuned
    harness = _InProgram(program, {tuned.describe(): 0.7}, in_program=False)
    best, _ = confirm_finalists(program, [finalist], harness, 0.0, Budgeted([]))
    assert harness.timed == [[tuned.describe()]] and best is tuned
    # a finalist measured 1.5x looper's code of the original loops in the rounds keeps its lead
    from dataclasses import replace
    from looper.search.confirm import REWRITE_BELOW, REWRITE_SECONDS
    fast = replace(finalist, measured=Score(REWRITE_BELOW, "ok", "", [1.0]))
    skipped = _InProgram(program, {tuned.describe(): 0.7, REWRITTEN: 0.4})
    best, _ = confirm_finalists(program, [fast], skipped, 0.0, Budgeted([]))
    assert skipped.timed == [[tuned.describe()]] and best is tuned
    # unless its runs are cheap: then it is timed whatever the finalists ran, and wins when faster
    cheap = _InProgram(program, {tuned.describe(): 0.7, REWRITTEN: 0.4}, added=REWRITE_SECONDS)
    best, _ = confirm_finalists(program, [fast], cheap, 0.0, Budgeted([]))
    assert cheap.timed == [[tuned.describe(), REWRITTEN]] and best.rewritten


def test_apply_writes_a_recorded_rewrite_and_never_falls_back_to_one(monkeypatch, tmp_path):
    """`looper apply` writes the recorded answer or nothing: a recorded rewrite is written (and
    judged again), a recorded answer the guard finds slower is an error, not the rewrite."""
    from click.testing import CliRunner
    from looper.cli import main
    from looper.transforms import Unroll
    from looper.tune.records import append_records, program_key, this_machine
    src = _c_file(tmp_path)
    scop = parse_c_file(src).scops[0]
    key = program_key(scop.program, scop.size_vars, None)

    def record(schedule, name):
        rec = Record(key, this_machine(), "model", tuple(schedule.to_json()), schedule.describe(), 1.0, None, 1.0,
                     "2025-01-01T00:00:00+00:00", "0.1.0", rewritten=schedule.rewritten)
        append_records(tmp_path / name, [rec])
        return tmp_path / name

    timed: list = []
    _guard_finds(monkeypatch, 2.0, timed)
    out = tmp_path / "out.c"
    res = CliRunner().invoke(main, ["apply", str(record(Schedule.rewrite(scop.program), "r.jsonl")), str(src),
                                    "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert timed == [True] and _output(tmp_path, out.read_text(), "applied") == _output(tmp_path, MATVEC, "original")
    assert "looper_disjoint" in out.read_text()
    timed.clear()
    swapped = Schedule(scop.program).then(Unroll(((("S1",), 3),), 4))
    res = CliRunner().invoke(main, ["apply", str(record(swapped, "s.jsonl")), str(src), "-o", str(tmp_path / "s.c")])
    assert res.exit_code == 2 and timed == [False] and not (tmp_path / "s.c").exists(), res.output
    assert "is not written" in res.output
