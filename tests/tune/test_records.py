"""Tuning records: the JSON Lines format (round trip, unknown fields, versions, interrupted
appends), what a record is keyed on (the normalized kernel and its sizes), and which record
answers a program (kernel, sizes, machine, the best of several, and why none does)."""
from __future__ import annotations

import json
import os

import pytest

from looper.api import load_programs
from looper.errors import LooperError
from looper.lang.parse import parse_source
from looper.tune import records as R
from looper.tune.match import NoRecord, OtherMachine, StaleRecord, best_record
from looper.tune.records import Machine, ProgramKey, Record, append_records, program_key, read_records

from conftest import kernel_path

HERE = Machine("Test CPU 9000", ("L1d 48 KiB", "L2 2 MiB"), 2, "gcc 12", ("-O3",), "default")
THERE = Machine("Other CPU 1", ("L1d 32 KiB",), 8, "gcc 13", ("-O2",), "default")
GEMM = kernel_path("gemm").read_text()


def _record(key: ProgramKey, machine: Machine = HERE, measured=2.0, predicted=None, date="2025-01-01T00:00:00+00:00",
            sequence=({"kind": "parallelize", "loops": [[["S0", "S1"], 1]]},)) -> Record:
    return Record(key, machine, "measure", tuple(sequence), "parallelize(i)", predicted, measured, 12.5, date, "0.1.0")


def _key(source: str = GEMM, size: str = "MINI") -> ProgramKey:
    return program_key(parse_source(source, "gemm.py", size), None, size)


# -- the format -----------------------------------------------------------------------------------------

def test_round_trip_through_a_file(tmp_path):
    path = tmp_path / "r.jsonl"
    a, b = _record(_key()), _record(_key(size="SMALL"), THERE, measured=None, predicted=1.7)
    append_records(path, [a])
    append_records(path, [b])
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(x)["record_format"] == R.RECORD_FORMAT for x in lines)
    got = read_records(path)
    assert got == [a, b]
    assert got[0].origin == f"{path}:1" and got[1].origin == f"{path}:2"
    assert got[1].program.sizes == (("NI", 60), ("NJ", 70), ("NK", 80)) and got[1].program.size == "SMALL"
    assert got[0].sequence == a.sequence and got[1].machine == THERE


def test_unknown_fields_are_kept_and_written_back(tmp_path):
    d = _record(_key()).to_json()
    d["tuned_by"] = "ci"
    d["program"]["origin_commit"] = "abc123"
    d["machine"]["microcode"] = "0x2b"
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(d) + "\n\n")  # blank lines are skipped
    (r,) = read_records(path)
    assert r == _record(_key())
    again = r.to_json()
    assert again["tuned_by"] == "ci" and again["program"]["origin_commit"] == "abc123"
    assert again["machine"]["microcode"] == "0x2b"


def test_a_newer_format_is_an_error_naming_file_and_line(tmp_path):
    d = _record(_key()).to_json()
    path = tmp_path / "r.jsonl"
    path.write_text(_record(_key()).line() + json.dumps({**d, "record_format": R.RECORD_FORMAT + 1}) + "\n")
    with pytest.raises(LooperError) as e:
        read_records(path)
    assert str(e.value).startswith(f"{path}:2: error: record format {R.RECORD_FORMAT + 1} is newer")
    assert e.value.exit_status == 2


@pytest.mark.parametrize("line, says", [
    ("{not json", "not a JSON record"),
    ('{"kernel": "gemm"}', "not a looper tuning record"),
    ('{"record_format": "one"}', "is not a format number"),
    ('{"record_format": 1, "sequence": [], "program": {}}', "has no 'program.name'"),
    ('{"record_format": 1, "sequence": [], "program": {"name": "g", "fingerprint": "f", "sizes": {}}}', "has no 'machine'"),
    ('{"record_format": 1, "sequence": {}}', "not a list of transformations"),
])
def test_malformed_lines_are_errors_at_their_line(tmp_path, line, says):
    path = tmp_path / "r.jsonl"
    path.write_text(_record(_key()).line() + line + "\n")
    with pytest.raises(LooperError) as e:
        read_records(path)
    assert f"{path}:2: error:" in str(e.value) and says in str(e.value)


def test_an_interrupted_append_leaves_whole_lines(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    append_records(path, [_record(_key())])
    before = path.read_bytes()
    real_write = os.write

    def half_then_interrupt(fd, data):
        real_write(fd, data[: len(data) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(R.os, "write", half_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        append_records(path, [_record(_key(size="SMALL"))])
    monkeypatch.undo()
    assert path.read_bytes() == before
    append_records(path, [_record(_key(size="SMALL"))])
    assert [r.program.size for r in read_records(path)] == ["MINI", "SMALL"]


def test_an_append_after_a_line_without_newline_starts_a_new_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_record(_key()).line().rstrip("\n"))  # edited by hand, no final newline
    append_records(path, [_record(_key(size="SMALL"))])
    assert len(read_records(path)) == 2


# -- what a record is keyed on --------------------------------------------------------------------------

def test_the_fingerprint_ignores_layout_comments_and_sizes_but_not_statements():
    base = _key()
    reformatted = GEMM.replace("for k in range(NK):", "for k in range( NK ):  # the product\n") \
        .replace('def kernel(NI: int', 'def kernel(\n        NI: int') \
        .replace("alpha * A[i, k] * B[k, j]", "(alpha * A[i, k]) * B[k, j]")
    assert reformatted != GEMM
    assert _key(reformatted).fingerprint == base.fingerprint
    init_changed = GEMM.replace("alpha = 1.5", "alpha = 2.5")
    assert _key(init_changed).fingerprint == base.fingerprint  # init is not the kernel
    other_size = _key(size="MEDIUM")
    assert other_size.fingerprint == base.fingerprint and other_size.sizes != base.sizes
    edited = GEMM.replace("C[i, j] *= beta", "C[i, j] *= 2.0 * beta")
    assert _key(edited).fingerprint != base.fingerprint
    retyped = GEMM.replace("A: f64[NI, NK]", "A: f32[NI, NK]")
    assert _key(retyped).fingerprint != base.fingerprint


C_KERNEL = """
#define N 64
void k(double A[N][N], double B[N][N], int n) {
  int i, j;
#pragma scop
  for (i = 1; i < n; i++)
    for (j = 0; j < n; j++)
      A[i][j] = A[i-1][j] + B[i][j];   /* a recurrence down the rows */
#pragma endscop
}
"""


def _c_key(text: str, tmp_path, name: str = "k.c"):
    path = tmp_path / name
    path.write_text(text)
    scop = load_programs(str(path)).scops[0]
    return program_key(scop.program, scop.size_vars)


def test_a_c_kernel_is_keyed_on_its_statements_and_size_variables(tmp_path):
    base = _c_key(C_KERNEL, tmp_path)
    assert base.sizes == (("n", 64),)
    spaced = C_KERNEL.replace("  for (j = 0;", "\n      // columns\n      for (j=0;").replace("/* a recurrence down the rows */", "")
    assert _c_key(spaced, tmp_path, "k2.c").fingerprint == base.fingerprint
    edited = C_KERNEL.replace("A[i-1][j] + B[i][j]", "A[i-1][j] - B[i][j]")
    assert _c_key(edited, tmp_path, "k3.c").fingerprint != base.fingerprint
    retyped = C_KERNEL.replace("double B[N][N]", "float B[N][N]")
    assert _c_key(retyped, tmp_path, "k4.c").fingerprint != base.fingerprint


# -- matching -------------------------------------------------------------------------------------------

def test_the_best_record_for_the_program_at_its_sizes_on_this_machine():
    mini, small = _key(), _key(size="SMALL")
    recs = [_record(mini, measured=2.0), _record(mini, measured=3.0), _record(mini, measured=None, predicted=9.0),
            _record(mini, THERE, measured=7.0), _record(small, measured=5.0)]
    assert best_record(recs, mini, HERE) is recs[1]  # measured beats predicted, higher beats lower
    assert best_record(recs, mini, HERE, any_machine=True) is recs[3]
    assert best_record(recs, small, HERE) is recs[4]
    newer = _record(mini, measured=3.0, date="2025-06-01T00:00:00+00:00")
    assert best_record(recs + [newer], mini, HERE) is newer  # a tie goes to the newer
    only_predicted = [_record(mini, measured=None, predicted=1.5), _record(mini, measured=None, predicted=2.5)]
    assert best_record(only_predicted, mini, HERE) is only_predicted[1]


def test_records_from_other_hardware_need_any_machine():
    mini = _key()
    with pytest.raises(OtherMachine) as e:
        best_record([_record(mini, THERE)], mini, HERE, source="r.jsonl", path="gemm.py")
    assert "Other CPU 1" in str(e.value) and "--any-machine" in str(e.value)
    assert str(e.value).startswith("gemm.py: error:")
    same_cpu_other_settings = Machine(HERE.cpu, HERE.caches, 64, "clang 17", ("-O1",), "tuned")
    assert best_record([_record(mini, same_cpu_other_settings)], mini, HERE) is not None


def test_no_record_names_what_the_file_holds():
    mini, small = _key(), _key(size="SMALL")
    with pytest.raises(NoRecord) as e:
        best_record([_record(small)], mini, HERE, source="r.jsonl")
    assert "no record for gemm at MINI (NI=20, NJ=25, NK=30)" in str(e.value)
    assert "it holds gemm at SMALL (NI=60, NJ=70, NK=80)" in str(e.value)
    other = program_key(parse_source(kernel_path("atax").read_text(), "atax.py", "MINI"), None, "MINI")
    with pytest.raises(NoRecord) as e:
        best_record([_record(other)], mini, HERE, source="r.jsonl")
    assert "no record for gemm" in str(e.value) and "it holds atax" in str(e.value)
    with pytest.raises(NoRecord, match="it holds no records"):
        best_record([], mini, HERE, source="r.jsonl")


def test_a_record_of_an_edited_program_is_stale_and_says_what_changed():
    recorded = _key()
    edited = _key(GEMM.replace("C[i, j] *= beta", "C[i, j] *= 2.0 * beta"))
    with pytest.raises(StaleRecord) as e:
        best_record([_record(recorded)], edited, HERE, source="r.jsonl")
    assert "another version of its kernel" in str(e.value)
    assert "recorded `C[i, j] *= beta`, now `C[i, j] *= 2.0 * beta`" in str(e.value)
    assert e.value.exit_status == 2


def test_this_machine_reads_the_cpu_and_caches():
    m = R.this_machine(3, "gcc", ("-O2",), "default")
    assert m.cpu and m.threads == 3 and m.cflags == ("-O2",) and m.compiler
    assert m.same_hardware(R.this_machine())
