"""The bench and tuning records: `--records` and a baseline's records replay answers instead of
searching, `--record` keeps the answers a run produced, and every results file carries the
sequence as JSON.  Run with --check-only: outputs are compared, nothing is timed."""
from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from looper.tune import Evaluator, TuneOptions
from looper.bench import polybench as pb
from looper.bench import suite
from looper.bench.results import KernelResult, SystemResult, from_json, to_json
from looper.cli import main
from looper.lang.parse import parse_file
from looper.transforms import Parallelize
from looper.transforms.schedule import Schedule
from looper.tune.records import Machine, Record, append_records, program_key, read_records, this_machine

from conftest import kernel_path

I_LOOP = Parallelize(((("S0", "S1"), 1),))  # gemm's i loop


def _gemm_record(size="MINI", machine: Machine | None = None) -> Record:
    program = parse_file(kernel_path("gemm"), size)
    s = Schedule(program, (I_LOOP,))
    return Record(program_key(program, None, size), machine or this_machine(), "measure", tuple(s.to_json()),
                  s.describe(), None, 2.5, 30.0, "2025-01-01T00:00:00+00:00", "0.1.0")


@pytest.fixture
def no_search(monkeypatch):
    """A replaying run must not search: any search fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("the bench searched")
    monkeypatch.setattr(pb, "choose_schedule", refuse)


def _bench(*args):
    return CliRunner().invoke(main, ["bench", "polybench", "--check-only", "-q", *[str(a) for a in args]])


def test_results_keep_the_sequence_as_json():
    r = KernelResult("gemm", "MINI", "parallelize(i)", "measure", 1.0, {"looper": SystemResult("looper", "checked")},
                     sequence_json=[I_LOOP.to_json()], record="r.jsonl:3")
    (back,) = from_json(json.loads(json.dumps(to_json([r], {}))))
    assert back.sequence_json == [I_LOOP.to_json()] and back.record == "r.jsonl:3"
    old = to_json([r], {})
    del old["results"][0]["sequence_json"], old["results"][0]["record"]
    assert from_json(old)[0].sequence_json is None  # a file from before


def test_records_are_replayed_instead_of_searching(tmp_path, no_search):
    append_records(tmp_path / "r.jsonl", [_gemm_record()])
    res = _bench("--kernels", "gemm", "--sizes", "MINI", "--records", tmp_path / "r.jsonl",
                 "--json", tmp_path / "out.json", "--record", tmp_path / "again.jsonl")
    assert res.exit_code == 0, res.output
    (r,) = json.loads((tmp_path / "out.json").read_text())["results"]
    assert r["sequence"] == "parallelize(i)" and r["sequence_json"] == [I_LOOP.to_json()]
    assert r["record"] == f"{tmp_path / 'r.jsonl'}:1" and r["evaluator"] == "measure"
    assert r["systems"]["looper"]["status"] == "checked"
    (again,) = read_records(tmp_path / "again.jsonl")  # what this run did with it: checked, not timed
    assert again.sequence == (I_LOOP.to_json(),) and again.measured is None
    assert again.extra["bench"] == {"input": "scop", "system": "looper", "replayed": r["record"]}


def test_a_variant_replays_another_records_file_beside_the_default(tmp_path, no_search):
    """`--variant old:records=F`: another commit's answers, replayed and checked as the column
    looper-old in the same run as the default's (here replayed too: nothing searches)."""
    program = parse_file(kernel_path("gemm"), "MINI")
    plain = Record(program_key(program, None, "MINI"), this_machine(), "hybrid", (), "", None, 1.0, 5.0,
                   "2025-01-01T00:00:00+00:00", "0.1.0")
    append_records(tmp_path / "now.jsonl", [_gemm_record()])
    append_records(tmp_path / "old.jsonl", [plain])
    res = _bench("--kernels", "gemm", "--sizes", "MINI", "--records", tmp_path / "now.jsonl",
                 "--variant", f"old:records={tmp_path / 'old.jsonl'}", "--json", tmp_path / "out.json")
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "out.json").read_text())
    (r,) = out["results"]
    assert r["systems"]["looper"]["sequence"] == "parallelize(i)"
    assert r["systems"]["looper-old"]["status"] == "checked" and r["systems"]["looper-old"]["sequence"] == "original"
    assert out["meta"]["variants"]["looper-old"] == {"records": str(tmp_path / "old.jsonl")}
    atax = parse_file(kernel_path("atax"), "MINI")  # the default's file has it, the variant's not
    append_records(tmp_path / "now.jsonl", [dataclasses.replace(plain, program=program_key(atax, None, "MINI"))])
    res = _bench("--kernels", "gemm,atax", "--sizes", "MINI", "--records", tmp_path / "now.jsonl",
                 "--variant", f"old:records={tmp_path / 'old.jsonl'}")
    assert res.exit_code == 2 and "atax [MINI]" in res.output and "old.jsonl" in res.output


def test_a_kernel_without_a_record_stops_the_run_before_it_starts(tmp_path, no_search):
    append_records(tmp_path / "r.jsonl", [_gemm_record()])
    res = _bench("--kernels", "gemm,atax", "--sizes", "MINI", "--records", tmp_path / "r.jsonl",
                 "--json", tmp_path / "out.json")
    assert res.exit_code == 2 and "no record made on this machine" in res.output and "atax [MINI]" in res.output
    assert "gemm [MINI]" not in res.output and not (tmp_path / "out.json").exists()


def test_records_of_another_machine_need_any_machine(tmp_path, no_search):
    other = Machine("Some Other CPU", ("L1d 32 KiB",), 64, "gcc 99", ("-O3",), "default")
    append_records(tmp_path / "r.jsonl", [_gemm_record(machine=other)])
    args = ["--kernels", "gemm", "--sizes", "MINI", "--records", tmp_path / "r.jsonl"]
    assert _bench(*args).exit_code == 2
    assert _bench(*args, "--any-machine").exit_code == 0


def test_a_baseline_with_records_is_replayed(tmp_path, no_search):
    cfg = pb.BenchConfig(["gemm"], ["MINI"], [], TuneOptions(evaluator=Evaluator("measure")), threads=2, check_only=True)
    s = _gemm_record()
    result = KernelResult("gemm", "MINI", s.describe, "measure", 3.0,
                          {"gcc": SystemResult("gcc", "checked"), "looper": SystemResult("looper", "checked")},
                          sequence_json=list(s.sequence))
    base = suite.baseline_json([result], cfg)
    entry = base["kernels"]["gemm/MINI"]
    assert entry["record"]["sequence"] == list(s.sequence) and entry["record"]["record_format"] == 1
    (tmp_path / "base.json").write_text(json.dumps(base))
    res = _bench("--kernels", "gemm", "--sizes", "MINI", "--baseline", tmp_path / "base.json",
                 "--json", tmp_path / "out.json")
    assert res.exit_code == 0, res.output
    (r,) = json.loads((tmp_path / "out.json").read_text())["results"]
    assert r["record"] == f"{tmp_path / 'base.json'} (gemm/MINI)" and r["sequence"] == "parallelize(i)"


def test_a_stale_baseline_record_is_an_error_not_a_search(tmp_path, no_search):
    cfg = pb.BenchConfig(["gemm"], ["MINI"], [], TuneOptions(evaluator=Evaluator("measure")), threads=2, check_only=True)
    bad = [{"kind": "parallelize", "loops": [[["S1"], 3]]}]  # gemm's k loop: isl refuses it
    result = KernelResult("gemm", "MINI", "parallelize(k)", "measure", 3.0, {}, sequence_json=bad)
    (tmp_path / "base.json").write_text(json.dumps(suite.baseline_json([result], cfg)))
    res = _bench("--kernels", "gemm", "--sizes", "MINI", "--baseline", tmp_path / "base.json")
    assert res.exit_code == 2 and "no longer applies: parallelize(k)" in res.output


def test_one_record_per_kernel_and_size_the_run_produced(tmp_path):
    from looper.bench.records import Recorder
    cfg = pb.BenchConfig(["gemm", "atax"], ["MINI"], [], TuneOptions(evaluator=Evaluator("model")), threads=2, check_only=True,
                         inputs=["scop", "native"])
    seq = [I_LOOP.to_json()]

    def result(kernel, mode, sequence_json=seq):
        return KernelResult(kernel, "MINI", "parallelize(i)", "model", 1.0, {}, mode, sequence_json=sequence_json)

    keep = Recorder(tmp_path / "r.jsonl", {("atax", "MINI", "scop")}, cfg)
    for r in (result("gemm", "scop"), result("gemm", "native"), result("atax", "scop"), result("atax", "native")):
        keep.add(r)
    keep.add(result("gemm", "scop", None))  # a run that failed has no answer to keep
    (r,) = read_records(tmp_path / "r.jsonl")
    assert r.program.name == "gemm" and r.sequence == tuple(seq) and r.evaluator == "model"
    assert Recorder(None, (), cfg).add(result("gemm", "scop")) is None


def test_an_answer_of_the_original_loops_rewritten_is_recorded_as_one():
    """The results keep whether a looper system's answer is the original loops in looper's code
    (`Schedule.rewrite`); its record says so, and replays as it (`looper apply` writes it).  A
    file from before the results kept it says so by the text alone; an empty sequence under
    another text is the original, not the rewrite."""
    from looper.bench.records import result_record
    from looper.transforms.schedule import REWRITTEN
    cfg = pb.BenchConfig(["gemm"], ["MINI"], [], TuneOptions(evaluator=Evaluator("model")), threads=2, check_only=True)

    def result(text, rewritten):
        x = SystemResult("looper", "ok", 1.0, mean=1.0, sequence=text, sequence_json=[], rewritten=rewritten)
        gcc = SystemResult("gcc", "ok", 2.0, mean=2.0)
        return KernelResult("gemm", "MINI", text, "model", 1.0, {"looper": x, "gcc": gcc}, sequence_json=[])

    flagged = result("the original loops, as looper prints them", True)
    (back,) = from_json(json.loads(json.dumps(to_json([flagged], {}))))
    assert back.systems["looper"].rewritten
    assert result_record(back, cfg).rewritten
    assert not result_record(result("original", False), cfg).rewritten
    old = to_json([result(REWRITTEN, True)], {})
    del old["results"][0]["systems"]["looper"]["rewritten"]
    (before,) = from_json(old)
    assert not before.systems["looper"].rewritten and result_record(before, cfg).rewritten
