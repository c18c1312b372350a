"""`looper bench polybench`: peers' adapters, WRONG outputs, regression exit codes, --resume."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from looper.tune import Evaluator, TuneOptions
from looper.bench import check, peers, suite, timing
from looper.bench import polybench as pb
from looper.bench.results import KernelResult, SystemResult
from looper.cli import main
from looper.lang.parse import parse_file
from looper.runtime.compile import EXACT_FLAGS
from looper.ir.schedule import Lowered
from looper.transforms.schedule import Schedule

from conftest import kernel_path

PLUTO_STDOUT = """\
[pluto] Number of statements: 2
[pluto] Total number of loops: 6
[pluto] Affine transformations [<iter coeff's> <param> <const>]

T(S1): (t, 2t+i, 2t+i+j)
loop types (loop, loop, loop)

T(S2): (t, 2t+i+1, 2t+i+j+1)
loop types (loop, loop, loop)

[Pluto] After tiling:
[pluto] using statement-wise -fs/-ls options: S1(3,5), S2(3,5),
"""

PLUTO_C = """#include <omp.h>
#define ceild(n,d)  (((n)<0) ? -((-(n))/(d)) : ((n)+(d)-1)/(d))
#define floord(n,d) (((n)<0) ? -((-(n)+(d)-1)/(d)) : (n)/(d))
static void kernel_0(void) {
  int t1, t2, t3;
  lbp=max(ceild(t1,2),ceild(32*t1-N+3,32));
#pragma omp parallel for private(lbv,ubv,t3,t4)
  for (t2=lbp;t2<=ubp;t2++) { }
}
"""


def test_pluto_command_line():
    cmd = peers.pluto_command("/opt/pluto/polycc", "in.c", "out.c")
    assert cmd == ["/opt/pluto/polycc", "in.c", "--tile", "--parallel", "-o", "out.c"]


def test_pluto_output_parsing():
    info = peers.parse_pluto_output(PLUTO_STDOUT, PLUTO_C)
    assert info["transformations"] == {"S1": "(t, 2t+i, 2t+i+j)", "S2": "(t, 2t+i+1, 2t+i+j+1)"}
    assert info["parallel_loops"] == 1 and info["tiled"] and info["has_kernel"]


def test_missing_polycc_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no polycc anywhere: not on PATH, not at the default place
    monkeypatch.setenv("HOME", str(tmp_path))
    res = CliRunner().invoke(main, ["bench", "polybench", "--kernels", "gemm", "--compare", "pluto"])
    assert res.exit_code == 2
    assert "polycc" in res.output and "github.com/bondhugula/pluto" in res.output
    assert "build-pluto.sh" in res.output and str(peers.default_polycc()) in res.output
    res = CliRunner().invoke(main, ["bench", "polybench", "--kernels", "gemm", "--compare", "pluto",
                                    "--polycc", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "not an executable" in res.output


def test_unknown_kernel_and_peer_are_usage_errors():
    assert "no PolyBench kernel 'gemmm'" in CliRunner().invoke(main, ["bench", "polybench", "--kernels", "gemmm"]).output
    res = CliRunner().invoke(main, ["bench", "polybench", "--kernels", "gemm", "--compare", "tvm"])
    assert res.exit_code == 2 and "unknown peer 'tvm'" in res.output


def test_wrong_output_is_reported_and_never_timed():
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    L = Schedule(p).lowered
    swapped = Lowered(p, {s: (r[0], r[3], r[2], r[1], r[4]) for s, r in L.rows.items()})  # illegal
    builds = {"gcc": peers.build_gcc(p, (), EXACT_FLAGS),
              "looper": peers._compile("looper", pb.peers.program_c(p, [swapped]), peers.OPT_FLAGS + EXACT_FLAGS,
                                       "gcc", ())}
    out = check.check_outputs(builds)
    assert out["gcc"].status == "checked"
    assert out["looper"].status == "WRONG" and out["looper"].median is None and not out["looper"].times


def test_bench_times_only_what_checked(monkeypatch):
    """run_kernel: a WRONG system is never handed to the timing stage."""
    timed = []
    real = timing.time_systems
    monkeypatch.setattr(timing, "time_systems", lambda builds, cfg, log, envs=None: timed.extend(builds) or real(builds, cfg, log, envs))
    monkeypatch.setattr(check, "check_outputs", lambda builds, log, threads: {
        s: SystemResult(s, "WRONG" if s == "looper" else "checked") for s in builds})
    cfg = pb.BenchConfig(["jacobi-1d"], ["MINI"], [], TuneOptions(evaluator=Evaluator.MEASURE), repeat=1, threads=2)
    [r] = pb.run_kernel("jacobi-1d", "MINI", cfg)
    assert timed == ["gcc"] and r.systems["looper"].status == "WRONG" and r.systems["gcc"].status == "ok"
    assert r.input == "scop" and r.flops and r.bytes and r.systems["gcc"].gflops is None  # no limits: no rates


def test_polly_gramschmidt_is_not_a_false_wrong():
    """gramschmidt at MINI is ill-conditioned: gcc -O3's and clang -O3's FMA contraction alone make
    R differ by >5.  The check builds every system with -ffp-contract=off, so equal means equal."""
    if peers.find_clang() is None:
        pytest.skip("no clang with Polly here")
    p = parse_file(kernel_path("gramschmidt"), "MINI")
    builds = {"gcc": peers.build_gcc(p, (), EXACT_FLAGS), "polly": peers.build_polly(p, (), extra=EXACT_FLAGS)}
    assert check.check_outputs(builds)["polly"].status == "checked"


def test_isl_peer_parallel_loops_are_exact():
    """isl drops degenerate tile loops: a parallel mark on 3mm's second band used to land on a
    loop that carries a dependence (WRONG).  Loops are now annotated by a dependence check."""
    p = parse_file(kernel_path("3mm"), "MINI")
    code = pb.peers.program_c(p, [peers.isl_kernel(p)])
    assert "omp parallel for" in code
    builds = {"gcc": peers.build_gcc(p, (), EXACT_FLAGS), "isl": peers.build_isl(p, (), extra=EXACT_FLAGS)}
    assert check.check_outputs(builds)["isl"].status == "checked"


def _result(speedup: float | None, status: str = "ok", mode: str = "scop") -> KernelResult:
    gcc = SystemResult("gcc", "ok", 1.0, 1.0, 1.0, [1.0])
    lo = SystemResult("looper", status, 1.0 / speedup if speedup else None)
    return KernelResult("gemm", "LARGE", "x", "model", 1.0, {"gcc": gcc, "looper": lo}, mode)


def test_regressions():
    base = suite.baseline_json([_result(2.0)])
    assert suite.regressions([_result(1.9)], base, 0.10) == []
    assert suite.regressions([_result(1.7)], base, 0.10)[0].startswith("gemm/LARGE: speedup over gcc 1.70x")
    assert "WRONG" in suite.regressions([_result(None, "WRONG")], base, 0.10)[0]
    # the native mode has baselines of its own: a scop baseline never judges a native result
    native = suite.baseline_json([_result(2.0, mode="native")])
    assert list(native["kernels"]) == ["gemm/LARGE/native"]
    assert suite.regressions([_result(1.0, mode="native")], base, 0.10) == []
    assert suite.regressions([_result(1.0, mode="native")], native, 0.10)


def test_exit_status_rules():
    """--check-only fails on wrong outputs and crashes of any system and on looper or a
    baseline not checked; a peer that could not build does not fail it."""
    said = []
    ok = KernelResult("gemm", "MINI", "x", "model", 0.0, {
        "gcc": SystemResult("gcc", "checked"), "looper": SystemResult("looper", "checked"),
        "pluto": SystemResult("pluto", "failed", detail="pluto failed: Error extracting polyhedra")}, "native")
    assert suite.exit_status([ok], True, None, 0.1, said.append) == 0 and said == []
    ok.systems["polly"] = SystemResult("polly", "WRONG", detail="3 values differ")
    assert suite.exit_status([ok], True, None, 0.1, said.append) == 1
    assert said == ["check failed: gemm (native): polly WRONG 3 values differ"]
    ok.systems["original"] = SystemResult("original", "crash")
    assert len(suite.check_failures([ok])) == 2
    base = suite.baseline_json([_result(2.0)])
    assert suite.exit_status([_result(1.0)], False, base, 0.1, said.append) == 1
    assert said[-1].startswith("REGRESSION gemm/LARGE")
    assert suite.exit_status([_result(1.0)], False, None, 0.1, said.append) == 0


def test_resume_rules(tmp_path):
    """--resume needs --json; a result is kept only for its own input mode and when it has every
    peer asked for; the file is rewritten entry by entry."""
    with pytest.raises(Exception, match="--resume needs --json"):
        suite.ResultsFile.open(None, True)
    cfg = pb.BenchConfig(["gemm"], ["LARGE"], ["polly"], inputs=["scop", "native"])
    store = suite.ResultsFile.open(str(tmp_path / "r.json"), True)
    assert store.previous == []
    scop = _result(2.0)
    scop.systems["polly"] = SystemResult("polly", "ok", 1.0)
    store.add(scop, cfg)
    store.add(_result(3.0, mode="native"), cfg)  # no polly: run again
    store.add(scop, cfg)  # replaces, does not duplicate
    again = suite.ResultsFile.open(str(tmp_path / "r.json"), True)
    assert [r.key for r in again.previous] == [("gemm", "LARGE", "native"), ("gemm", "LARGE", "scop")]
    assert list(suite.reusable(again.previous, cfg)) == [("gemm", "LARGE", "scop")]
    assert again.previous[1].speedup("looper") == pytest.approx(2.0)
    # a resumed run of another kernel keeps gemm's entries at its end too
    other = _result(4.0)
    other.kernel = "syrk"
    again.add(other, cfg)
    again.write([other], cfg)
    kept = suite.ResultsFile.open(str(tmp_path / "r.json"), True).previous
    assert sorted(r.key for r in kept) == [("gemm", "LARGE", "native"), ("gemm", "LARGE", "scop"),
                                          ("syrk", "LARGE", "scop")]
    # without --resume, the run's own results replace the file
    fresh = suite.ResultsFile.open(str(tmp_path / "r.json"), False)
    fresh.add(other, cfg)
    fresh.write([other], cfg)
    assert [r.key for r in suite.ResultsFile.open(str(tmp_path / "r.json"), True).previous] == \
        [("syrk", "LARGE", "scop")]


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench")
    out = d / "r.json"
    args = ["bench", "polybench", "--kernels", "jacobi-1d", "--sizes", "MINI", "--evaluator", "measure",
            "--repeat", "2", "--json", str(out), "--csv", str(d / "r.csv"), "--plot", str(d / "r.png"),
            "--roofline", str(d / "roof.png"), "--save-baseline", str(d / "base.json"), "-q"]
    res = CliRunner().invoke(main, args)
    return d, res


def test_bench_writes_table_json_csv_plot(bench_run):
    d, res = bench_run
    assert res.exit_code == 0, res.output
    assert "jacobi-1d" in res.output and "geomean" in res.output
    assert "input: scop" in res.output and "GFLOP/s" in res.output
    data = json.loads((d / "r.json").read_text())
    result = data["results"][0]
    gcc = result["systems"]["gcc"]
    assert gcc["status"] == "ok" and result["input"] == "scop"
    # jacobi-1d at MINI: TSTEPS=20, N=30, two statements of 3 flops each over 28 points a step
    assert result["flops"] == 20 * 2 * 28 * 3 and result["precision"] == "double"
    assert gcc["gflops"] == pytest.approx(result["flops"] / gcc["mean"] / 1e9)
    assert 0 < gcc["fraction_of_peak"] and data["meta"]["limits"]["peak_double_gflops"] > 0
    assert "jacobi-1d,MINI,scop,looper" in (d / "r.csv").read_text()
    header = (d / "r.csv").read_text().splitlines()[0].split(",")
    assert header[5] == "mean_s" and header[11:13] == ["gflops", "fraction_of_peak"]
    assert (d / "r.png").stat().st_size > 1000 and (d / "roof.png").stat().st_size > 1000


def test_baseline_exit_codes(bench_run, tmp_path):
    d, _ = bench_run
    base = json.loads((d / "base.json").read_text())
    key = "jacobi-1d/MINI"
    assert key in base["kernels"]
    results = json.loads((d / "r.json").read_text())["results"]
    record = base["kernels"][key]["record"]  # the answer as a tuning record: a later run replays it
    assert record["sequence"] == results[0]["sequence_json"] and record["program"]["size"] == "MINI"
    assert record["measured"] == pytest.approx(results[0]["systems"]["gcc"]["mean"]
                                               / results[0]["systems"]["looper"]["mean"])
    high = tmp_path / "high.json"
    high.write_text(json.dumps({"kernels": {key: {"speedup": 1000.0, "status": "ok"}}}))
    low = tmp_path / "low.json"
    low.write_text(json.dumps({"kernels": {key: {"speedup": 0.001, "status": "ok"}}}))
    common = ["bench", "polybench", "--kernels", "jacobi-1d", "--sizes", "MINI", "--evaluator", "measure",
              "--repeat", "1", "-q", "--json", str(d / "r.json"), "--resume"]
    res = CliRunner().invoke(main, common + ["--baseline", str(high)])
    assert res.exit_code == 1 and "REGRESSION jacobi-1d/MINI" in res.output
    assert CliRunner().invoke(main, common + ["--baseline", str(low)]).exit_code == 0


def test_resume_keeps_finished_kernels(bench_run):
    d, _ = bench_run
    before = json.loads((d / "r.json").read_text())["results"][0]
    res = CliRunner().invoke(main, ["bench", "polybench", "--kernels", "jacobi-1d,trisolv", "--sizes", "MINI",
                                    "--evaluator", "measure", "--repeat", "1", "-q", "--json", str(d / "r.json"),
                                    "--resume"])
    assert res.exit_code == 0, res.output
    after = json.loads((d / "r.json").read_text())["results"]
    assert [r["kernel"] for r in after] == ["jacobi-1d", "trisolv"]
    assert after[0] == before  # not measured again


# one kernel of each kind: a dense product, a stencil in time, a factorization, a dynamic
# program, a filter of many statements, a triangular product; all 30 run with -m slow (6 minutes)
CHECKED_BY_DEFAULT = ["gemm", "jacobi-2d", "lu", "nussinov", "deriche", "trmm"]


@pytest.mark.parametrize("kernels", [pytest.param(CHECKED_BY_DEFAULT, id="six"),
                                     pytest.param(None, id="all", marks=pytest.mark.slow)])
def test_check_only_against_all_available_peers(tmp_path, kernels):
    """`bench --check-only`: the kernels at MINI through looper, gcc, graphite, isl (and polly when
    clang has it); outputs compared with gcc's, nothing timed."""
    compare = "graphite,isl" + (",polly" if peers.find_clang() else "")
    chosen = ["--kernels", ",".join(kernels)] if kernels else []
    res = CliRunner().invoke(main, ["bench", "polybench", "--check-only", "--compare", compare, *chosen,
                                    "--evaluator", "model", "-q", "--json", str(tmp_path / "c.json")])
    data = json.loads((tmp_path / "c.json").read_text())
    names = [r["kernel"] for r in data["results"]]
    assert (names == kernels) if kernels else (len(names) == 30)
    statuses = {(r["kernel"], s): x["status"] for r in data["results"] for s, x in r["systems"].items()}
    # looper's own answer must be right on every kernel; a peer's WRONG output (seen here:
    # graphite on ludcmp, NaN where gcc computes numbers) is reported and makes the check exit 1,
    # it does not fail this test
    assert all(statuses[(r["kernel"], "looper")] == "checked" for r in data["results"]), statuses
    assert all(statuses[(r["kernel"], "gcc")] in ("checked", "ok") for r in data["results"]), statuses
    peers_wrong = any(v in ("WRONG", "crash", "timeout") for v in statuses.values())
    assert res.exit_code == (1 if peers_wrong else 0), res.output


def test_systems_are_timed_interleaved(monkeypatch):
    """Every round runs each system once, in alternating order, each run a fresh process calling
    the kernel once (looper's harness cold: the team created inside the timed call); a system's
    time is the mean of its rounds; enough rounds to see a slow mode (8 for gcc under a second);
    a timeout drops the system from later rounds."""
    from looper.runtime.compile import Binary
    from looper.runtime.run import RunResult
    calls = []
    speed = {"gcc": 0.5, "looper": 0.0005, "polly": 100.0}

    def fake_run(path, variant=0, repeats=1, timeout=None, threads=None, cold=False, **kw):
        system = Path(path).name
        calls.append((system, repeats, cold))
        if speed[system] * repeats > timeout:
            return RunResult(-9, timed_out=True)
        k = sum(1 for s, *_ in calls if s == system)
        return RunResult(0, [speed[system] * (1 + 0.1 * k)] * repeats)

    import looper.runtime.run as run
    monkeypatch.setattr(run, "run_binary", fake_run)
    builds = {s: peers.Build(s, Binary(Path(s), s, ())) for s in ("gcc", "looper", "polly")}
    builds["pluto"] = peers.Build("pluto", None, "WRONG")
    builds["graphite"] = peers.Build("graphite", Binary(Path("graphite"), "g", ()), harness="polybench")
    speed["graphite"] = 0.01
    cfg = pb.BenchConfig(["x"], ["MINI"], [], repeat=3, threads=2, min_timeout=1.0)
    out = timing.time_systems(builds, cfg)
    order = [s for s, *_ in calls if s != "graphite"]
    assert order[:7] == ["gcc", "looper", "polly", "looper", "gcc", "gcc", "looper"]
    assert out["polly"].status == "timeout" and out["pluto"].status == "WRONG"
    gcc = [0.5 * (1 + 0.1 * k) for k in range(1, 9)]
    assert out["gcc"].times == pytest.approx(gcc) and out["gcc"].mean == pytest.approx(sum(gcc) / 8)
    assert all(n == 1 for _, n, _ in calls)  # one call per process
    assert {cold for s, _, cold in calls if s == "looper"} == {True}
    assert {cold for s, _, cold in calls if s == "graphite"} == {False}  # PolyBench's harness: cold by itself
    assert len(out["looper"].times) == len(out["graphite"].times) == 8


def test_check_runs_are_limited_by_gccs_time():
    """A peer's check run gets a multiple of gcc's, never less than the floor nor more than the
    bench's fixed limit (Pluto's ludcmp ran the whole 600 s at SMALL)."""
    from looper.bench.check import FLOOR, SLOWER, check_limit
    assert check_limit(0.01, 600.0) == FLOOR
    assert check_limit(2.0, 600.0) == SLOWER * 2.0
    assert check_limit(100.0, 600.0) == 600.0


def test_a_crash_inside_looper_on_one_kernel_costs_that_kernel_not_the_run(monkeypatch, tmp_path):
    """A bug on one kernel (its search, a build, the timing) is recorded as that kernel's failed
    result naming the error; the other kernels still run, and the run's exit status fails."""
    def run_kernel(name, size, cfg, log, inputs):
        if name == "atax":
            raise IndexError("list index out of range")
        return [_result(2.0, mode=m) for m in inputs]

    monkeypatch.setattr(suite, "run_kernel", run_kernel)
    cfg = pb.BenchConfig(["atax", "gemm"], ["MINI"], [], check_only=True, inputs=["scop"])
    said = []
    results = suite.run_suite(cfg, log=said.append)
    assert [r.kernel for r in results] == ["atax", "gemm"]
    crashed = results[0].systems["looper"]
    assert crashed.status == "failed" and "IndexError: list index out of range" in crashed.detail
    assert any("please report it" in s for s in said)
    assert suite.internal_errors(results) == [f"atax [MINI, scop]: {crashed.detail}"]
    reasons = []
    assert suite.exit_status(results[1:], False, None, 0.1, reasons.append) == 0
    assert suite.exit_status(results, False, None, 0.1, reasons.append) == 1
    assert reasons == [f"FAILED atax [MINI, scop]: {crashed.detail}"]
    # the table, the JSON and the CSV take the failed kernel as they are
    from rich.console import Console
    from looper.bench.report import table
    from looper.bench.results import from_json, to_json, write_csv
    console = Console(width=400, record=True)
    console.print(table(results, ["gcc", "looper"], False))
    assert "IndexError" in console.export_text()
    assert from_json(json.loads(json.dumps(to_json(results, {}))))[0].systems["looper"].detail == crashed.detail
    write_csv(results, tmp_path / "r.csv")
    # a resumed run tries the crashed kernel again (it kept no result for it)
    assert suite.reusable(results, cfg).keys() == {("gemm", "LARGE", "scop")}

    def user_error(name, size, cfg, log, inputs):
        from looper.errors import LooperUsageError
        raise LooperUsageError("--polycc: not found")

    monkeypatch.setattr(suite, "run_kernel", user_error)
    with pytest.raises(Exception, match="not found"):
        suite.run_suite(cfg)


def test_variants_are_more_looper_systems_each_with_its_own_memo(tmp_path, monkeypatch):
    """`--variant NAME:KEY=VALUE,...`: another looper configuration (a model, the model alone, a
    budget) searched and timed in the same rounds as `looper-NAME`; each looper system but the
    default searches with its own memo, so none is answered by another's measurements.  A bad
    variant is a usage error."""
    from looper.tune.options import HybridOptions
    model = tmp_path / "m.pt"
    model.write_bytes(b"")
    base = TuneOptions(db=str(tmp_path / "memo.sqlite"))
    v = suite.parse_variant(f"half:per_round=4,model={model}", base)
    name, half = v.name, v.options
    assert name == "looper-half" and half.hybrid == HybridOptions(per_round=4) and half.model == str(model)
    v = suite.parse_variant("alone:evaluator=model", base)
    name2, alone = v.name, v.options
    assert alone.evaluator is Evaluator.MODEL and alone.hybrid == base.hybrid
    cfg = pb.BenchConfig(["gemm"], ["MINI"], [], base, ceiling=base.with_(evaluator=Evaluator.MEASURE),
                         variants={name: half, name2: alone})
    searches = cfg.searches()
    assert list(searches) == ["looper", pb.CEILING, "looper-half", "looper-alone"]
    memos = [o.db for o in searches.values()]
    assert memos[0] == str(tmp_path / "memo.sqlite") and len(set(memos)) == 4
    assert memos[2] == str(tmp_path / "memo-looper-half.sqlite")
    assert cfg.systems("native")[:2] == ["gcc", "original"] and "looper-alone" in cfg.systems("scop")
    for bad in ("half", "half:beam=3", "half:per_round=x", f"half:model={tmp_path / 'none.pt'}",
                f"old:records={tmp_path / 'none.jsonl'}", f"old:records={model},per_round=4"):
        with pytest.raises(suite.LooperUsageError):
            suite.parse_variant(bad, base)
    res = CliRunner().invoke(main, ["bench", "polybench", "--kernels", "gemm", "--variant", "x:beam=2"])
    assert res.exit_code == 2 and "--variant" in res.output


def test_one_build_is_timed_once_for_every_system_it_is(monkeypatch):
    """looper's answer that is the original is PolyBench's file byte for byte, built with gcc's
    flags: the same binary as gcc's.  It is timed once and both systems get those runs (timed
    twice, one program differs from itself only by noise); another environment is timed apart."""
    from looper.runtime.compile import Binary
    from looper.runtime.ompenv import TUNED_ENV
    from looper.runtime.run import RunResult
    calls = []

    def fake_run(path, variant=0, repeats=1, timeout=None, threads=None, cold=False, omp_env=None, **kw):
        calls.append((Path(path).name, omp_env))
        return RunResult(0, [0.01 * len(calls)])

    import looper.runtime.run as run
    monkeypatch.setattr(run, "run_binary", fake_run)
    same = Binary(Path("prog"), "k1", ())
    builds = {"gcc": peers.Build("gcc", same, harness="polybench", detail="gcc on x.c"),
              "looper": peers.Build("looper", same, harness="polybench", detail="looper in place"),
              "polly": peers.Build("polly", Binary(Path("polly"), "k2", ()), harness="polybench"),
              "gcc@tuned": peers.Build("gcc", same, harness="polybench")}
    cfg = pb.BenchConfig(["x"], ["MINI"], [], repeat=8, threads=2, min_timeout=1.0)
    out = timing.time_systems(builds, cfg, envs={"gcc@tuned": TUNED_ENV})
    assert [name for name, _ in calls].count("prog") == 16 and len(calls) == 24  # gcc, gcc@tuned, polly
    assert out["looper"].times == out["gcc"].times and len(out["gcc"].times) == 8
    assert out["looper"].detail == "looper in place; the same build as gcc's, timed once"
    assert out["gcc@tuned"].times != out["gcc"].times
