"""`looper apply` and `looper.apply`: a recorded answer written again without a search, exactly as
`looper optimize` wrote it, checked again by isl and verified; and every way a record can fail
to apply (none for the program, an edited program, a step isl refuses, a failed verification,
another machine) is an exit status 2 that names the reason, with nothing written."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import looper
from looper.cli import main
from looper.errors import LooperError
from looper.lang.parse import parse_file
from looper.transforms import Parallelize
from looper.transforms.schedule import Schedule
from looper.tune.apply import AppliedKernel
from looper.tune.match import StaleRecord
from looper.tune.records import Machine, Record, append_records, program_key, read_records, this_machine

from conftest import kernel_path
from helpers import differential

GEMM = kernel_path("gemm")
I_LOOP = Parallelize(((("S0", "S1"), 1),))  # gemm's i loop: no dependence crosses it
K_LOOP = Parallelize(((("S1",), 3),))  # gemm's k loop: C[i, j] is summed along it


def _invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _record(program, steps, size="SMALL", machine: Machine | None = None, measured=2.0) -> Record:
    s = Schedule(program, tuple(steps))
    return Record(program_key(program, None, size), machine or this_machine(), "measure", tuple(s.to_json()),
                  s.describe(), None, measured, 1.0, "2025-01-01T00:00:00+00:00", "0.1.0")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """gemm at SMALL optimized once with the model (no speed guard: nothing is timed), its answer
    recorded, and the function `looper optimize` wrote for it."""
    tmp = tmp_path_factory.mktemp("recorded")
    res = _invoke("optimize", GEMM, "-s", "SMALL", "-q", "--no-speed-guard", "--emit", "function",
                  "-o", tmp / "opt.c", "--record", tmp / "r.jsonl")
    assert res.exit_code == 0, res.output
    return tmp


def test_optimize_records_its_answer(recorded):
    (r,) = read_records(recorded / "r.jsonl")
    program = parse_file(GEMM, "SMALL")
    assert r.program == program_key(program, None, "SMALL") and r.program.sizes == (("NI", 60), ("NJ", 70), ("NK", 80))
    assert r.evaluator == "model" and r.predicted is not None and r.measured is None
    assert r.machine.same_hardware(this_machine()) and r.machine.cflags == ("-O3", "-march=native", "-fopenmp")
    assert r.looper_version == looper.__version__ and r.date and r.search_seconds is not None
    assert r.sequence and r.describe == Schedule.from_json(program, list(r.sequence)).describe()


def test_apply_writes_what_optimize_wrote(recorded, tmp_path):
    res = _invoke("apply", recorded / "r.jsonl", GEMM, "-s", "SMALL", "--emit", "function", "-o", tmp_path / "opt.c",
                  "--json", tmp_path / "ap.json", "--no-speed-guard")  # a model's record: nothing is timed
    assert res.exit_code == 0, res.output
    assert "applied the record at" in res.output and "verified at SMALL" in res.output
    assert (tmp_path / "opt.c").read_text() == (recorded / "opt.c").read_text()
    assert (tmp_path / "opt.h").read_text() == (recorded / "opt.h").read_text()
    report = json.loads((tmp_path / "ap.json").read_text())
    assert report["record"]["origin"] == f"{recorded / 'r.jsonl'}:1" and report["verification"]["verified"]


def test_without_a_size_apply_takes_the_recorded_one(recorded, tmp_path):
    k = looper.apply(recorded / "r.jsonl", GEMM, speed_guard=False)
    assert isinstance(k, AppliedKernel) and k.program.sizes == {"NI": 60, "NJ": 70, "NK": 80}


def test_the_applied_answer_computes_the_original(recorded, tmp_path):
    k = looper.apply(recorded / "r.jsonl", GEMM, "SMALL", threads=2, speed_guard=False)
    assert k.schedule.steps and k.check.size == "SMALL" and not k.check.rejected
    assert differential(k.program, [k.schedule], tmp_path) == []


def test_a_record_for_the_python_program_as_a_string(tmp_path):
    program = parse_file(GEMM, "MINI")
    append_records(tmp_path / "r.jsonl", [_record(program, [I_LOOP], "MINI")])
    k = looper.apply(tmp_path / "r.jsonl", GEMM.read_text(), "MINI")
    assert k.sequence == "parallelize(i)" and k.check.size == "MINI"


# -- failures: exit 2, nothing written -------------------------------------------------------------------

def test_an_edited_statement_makes_the_record_stale(tmp_path):
    program = parse_file(GEMM, "MINI")
    append_records(tmp_path / "r.jsonl", [_record(program, [I_LOOP], "MINI")])
    edited = tmp_path / "gemm.py"
    edited.write_text(GEMM.read_text().replace("C[i, j] *= beta", "C[i, j] *= beta * beta"))
    out = tmp_path / "out.c"
    res = _invoke("apply", tmp_path / "r.jsonl", edited, "-s", "MINI", "--emit", "function", "-o", out)
    assert res.exit_code == 2
    assert "made for another version of its kernel" in res.output
    assert "recorded `C[i, j] *= beta`, now `C[i, j] *= beta * beta`" in res.output
    assert "Traceback" not in res.output and not out.exists() and not (tmp_path / "out.h").exists()


def test_a_step_isl_now_refuses_is_named(tmp_path):
    program = parse_file(GEMM, "MINI")
    append_records(tmp_path / "r.jsonl", [_record(program, [I_LOOP, K_LOOP], "MINI")])
    out = tmp_path / "out.c"
    res = _invoke("apply", tmp_path / "r.jsonl", GEMM, "-s", "MINI", "--emit", "function", "-o", out)
    assert res.exit_code == 2 and not out.exists()
    assert f"{tmp_path / 'r.jsonl'}:1: error: the record for gemm at MINI" in res.output
    assert "no longer applies: parallelize(k)" in res.output and "isl" in res.output


def test_a_step_that_does_not_replay_is_stale(tmp_path):
    program = parse_file(GEMM, "MINI")
    rec = _record(program, [I_LOOP], "MINI")
    broken = Record(rec.program, rec.machine, rec.evaluator, ({"kind": "parallelize", "loops": [[["S7"], 9]]},))
    with pytest.raises(StaleRecord, match="no longer applies"):
        looper.apply([broken], GEMM, "MINI")


def test_a_record_that_fails_verification_is_an_error_not_the_original(tmp_path, monkeypatch):
    import looper.search.verify as verify
    monkeypatch.setattr(verify._Session, "_verify", lambda self, schedule: "wrong at MINI: injected")
    program = parse_file(GEMM, "MINI")
    append_records(tmp_path / "r.jsonl", [_record(program, [I_LOOP], "MINI")])
    out = tmp_path / "out.c"
    res = _invoke("apply", tmp_path / "r.jsonl", GEMM, "-s", "MINI", "--emit", "function", "-o", out)
    assert res.exit_code == 2 and not out.exists()
    assert "the recorded answer for gemm at MINI" in res.output and "injected" in res.output


def test_no_record_for_the_program_or_its_size(tmp_path):
    program = parse_file(GEMM, "MINI")
    append_records(tmp_path / "r.jsonl", [_record(program, [I_LOOP], "MINI")])
    res = _invoke("apply", tmp_path / "r.jsonl", GEMM, "-s", "SMALL", "--emit", "function", "-o", tmp_path / "o.c")
    assert res.exit_code == 2 and "no record for gemm at SMALL" in res.output and "it holds gemm at MINI" in res.output
    res = _invoke("apply", tmp_path / "r.jsonl", kernel_path("atax"), "-s", "MINI", "--emit", "function",
                  "-o", tmp_path / "o.c")
    assert res.exit_code == 2 and "no record for atax" in res.output and "it holds gemm" in res.output
    assert not (tmp_path / "o.c").exists()


def test_records_from_another_machine_need_any_machine(tmp_path):
    program = parse_file(GEMM, "MINI")
    other = Machine("Some Other CPU", ("L1d 32 KiB",), 64, "gcc 99", ("-O3",), "default")
    append_records(tmp_path / "r.jsonl", [_record(program, [I_LOOP], "MINI", machine=other)])
    out = tmp_path / "o.c"
    res = _invoke("apply", tmp_path / "r.jsonl", GEMM, "-s", "MINI", "--emit", "function", "-o", out)
    assert res.exit_code == 2 and "Some Other CPU" in res.output and "--any-machine" in res.output
    assert not out.exists()
    res = _invoke("apply", tmp_path / "r.jsonl", GEMM, "-s", "MINI", "--emit", "function", "-o", out, "--any-machine")
    assert res.exit_code == 0, res.output
    assert out.exists()


def test_a_records_file_of_a_newer_format_is_refused(tmp_path):
    program = parse_file(GEMM, "MINI")
    d = _record(program, [I_LOOP], "MINI").to_json()
    (tmp_path / "r.jsonl").write_text(json.dumps({**d, "record_format": 99}) + "\n")
    res = _invoke("apply", tmp_path / "r.jsonl", GEMM, "-s", "MINI")
    assert res.exit_code == 2 and "r.jsonl:1: error: record format 99 is newer" in res.output


def test_the_best_record_is_applied(tmp_path):
    program = parse_file(GEMM, "MINI")
    slow = _record(program, [], "MINI", measured=1.0)  # the original was the answer once
    fast = _record(program, [I_LOOP], "MINI", measured=3.0)
    append_records(tmp_path / "r.jsonl", [slow, fast])
    k = looper.apply(tmp_path / "r.jsonl", GEMM, "MINI")
    assert k.record == fast and k.record.origin.endswith("r.jsonl:2")


def test_size_and_sizes_together_are_refused(tmp_path):
    with pytest.raises(LooperError, match="not both"):
        looper.apply([], GEMM, "MINI", sizes=["MINI", "SMALL"])


def test_without_a_size_every_recorded_size_counts_once():
    from looper.tune.apply import recorded_sizes
    mini, small = parse_file(GEMM, "MINI"), parse_file(GEMM, "SMALL")
    other = Machine("Some Other CPU", ("L1d 32 KiB",), 64, "gcc 99", ("-O3",), "default")
    as_default = _record(mini, [], "MINI")
    as_default = Record(program_key(mini, None, None), as_default.machine, "measure", ())  # parsed without --size
    recs = [_record(small, [], "SMALL"), _record(mini, [], "MINI"), as_default,
            _record(parse_file(GEMM, "MEDIUM"), [], "MEDIUM", machine=other)]
    assert [s.size for s in recorded_sizes(recs, GEMM, (), this_machine(), False)] == ["MINI", "SMALL"]
    assert [s.size for s in recorded_sizes(recs, GEMM, (), this_machine(), True)] == ["MINI", "SMALL", "MEDIUM"]
    assert [s.size for s in recorded_sizes([], GEMM, (), this_machine(), False)] == [None]
