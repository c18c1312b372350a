"""The bench's native input mode (peers on PolyBench's own C and harness) and the roofline plot."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from looper.bench import native, peers
from looper.bench import polybench as pb
from looper.bench.results import KernelResult, SystemResult
from looper.bench.roofline import plot_roofline, points
from looper.cli import main
from looper.lang.parse import parse_file
from looper.poly.flops import kernel_work
from looper.runtime.compile import EXACT_FLAGS
from looper.runtime.peaks import Limits
from looper.transforms.schedule import Schedule

from conftest import SHARED, kernel_path

POLYBENCH_C = SHARED / "polybench-c"
needs_polybench = pytest.mark.skipif(not (POLYBENCH_C / "utilities" / "polybench.c").exists(),
                                     reason=f"{POLYBENCH_C} not found: PolyBench/C's sources are not available here")


def _polycc() -> str | None:
    try:
        return peers.find_polycc()
    except peers.PeerUnavailable:
        return None


def _cfg(compare: list[str], **kw) -> pb.BenchConfig:
    return pb.BenchConfig(["gemm"], ["MINI"], compare, inputs=["native"], polybench_c=str(POLYBENCH_C),
                          polycc=_polycc(), threads=2, **kw)


@needs_polybench
@pytest.mark.parametrize("peer", ["gcc", "graphite", "pluto", "polly"])
def test_native_peer_matches_gcc_on_polybench_c(peer):
    """A peer built from PolyBench's own gemm.c with PolyBench's harness at MINI dumps what gcc's
    build of the same file dumps."""
    if peer == "pluto" and _polycc() is None:
        pytest.skip("no polycc (build it with ../shared/peers/build-pluto.sh)")
    if peer == "polly" and peers.find_clang() is None:
        pytest.skip("no clang with Polly here")
    kernel = native.NativeKernel(native.PolyBenchC.find(POLYBENCH_C), "gemm", "MINI")
    dump = ("POLYBENCH_DUMP_ARRAYS",)
    builds = {s: native.build_native(s, kernel, dump, _cfg([]), EXACT_FLAGS) for s in dict.fromkeys(["gcc", peer])}
    out = native.check_dumps(builds)
    assert all(b.harness == "polybench" for b in builds.values())
    assert out[peer].status == "checked", out[peer].detail
    if peer == "pluto":
        assert builds["pluto"].info.get("parallel_loops", 0) > 0


@needs_polybench
def test_native_builds_link_openmp_only_where_the_kernel_starts_a_team():
    """PolyBench's harness built with -fopenmp flushes the caches in a parallel loop whose idle
    thread then spins beside a sequential kernel: a sequential answer (only `omp simd` loops) is
    built with -fopenmp-simd, a parallel one with -fopenmp, and Polly's build with -fopenmp only
    when its object calls the OpenMP runtime.  Each build still dumps what gcc's does."""
    tree = native.PolyBenchC.find(POLYBENCH_C)
    kernel = native.NativeKernel(tree, "jacobi-1d", "MINI")
    text = kernel.c_file.read_text()
    simd = text.replace("  for (t = 0; t < _PB_TSTEPS; t++)\n    {\n      for (i = 1; i < _PB_N - 1; i++)",
                        "  for (t = 0; t < _PB_TSTEPS; t++)\n    {\n#pragma omp simd\n      for (i = 1; i < _PB_N - 1; i++)")
    assert simd != text
    program = parse_file(kernel_path("jacobi-1d"), "MINI")
    dump = ("POLYBENCH_DUMP_ARRAYS",)
    answers = {"looper": pb.Answer("jacobi-1d", program, Schedule(program), 0.0, "simd", simd)}
    builds = {"gcc": native.build_native("gcc", kernel, dump, _cfg([]), EXACT_FLAGS),
              "looper": pb.build_native("looper", answers, _cfg([]), dump, EXACT_FLAGS)}
    flags = builds["looper"].binary.flags
    assert "-fopenmp-simd" in flags and "-fopenmp" not in flags
    assert native.check_dumps(builds)["looper"].status == "checked"
    if peers.find_clang() is not None:
        polly = peers.POLLY_FLAGS
        gemm = native.NativeKernel(tree, "gemm", "MINI")
        timed = ("POLYBENCH_TIME",)  # (Polly runs gemm sequentially when its timer calls are gone)
        assert gemm.forks(gemm.c_file.read_text(), polly, peers.find_clang(), timed)
        # the check's build is the timed code: Polly's parallel gemm is what gets checked
        assert gemm.forks(gemm.c_file.read_text(), polly + EXACT_FLAGS, peers.find_clang(), pb.CHECKED_DEFINES)
        assert not kernel.forks(text, polly, peers.find_clang(), timed)  # its time loop carries everything
        build = native.build_native("polly", kernel, timed, _cfg([]))
        assert "-fopenmp" not in build.binary.flags and "sequentially" in build.detail


@needs_polybench
def test_native_mode_checks_looper_and_original_against_polybench():
    """looper's harness (its original and its answer) against gcc on PolyBench's C, and a peer
    that fails (Pluto's front end cannot parse adi's cast) says why while the others go on."""
    compare = ["isl"] + (["pluto"] if _polycc() else [])
    for name in ("gemm", "adi"):
        program = parse_file(kernel_path(name), "MINI")
        source = native.PolyBenchC.find(POLYBENCH_C).kernel(name).read_text()  # looper's file: as it was
        answer = pb.Answer(name, program, Schedule(program), 0.0, "original", source)
        r = pb.run_mode({"looper": answer}, kernel_work(program), "native", _cfg(compare, check_only=True))
        assert r.input == "native" and list(r.systems) == ["gcc", "original", "looper"] + compare
        for s in ("gcc", "original", "looper"):
            assert r.systems[s].status == "checked", (name, s, r.systems[s].detail)
        assert r.systems["isl"].status == "unavailable" and "native" in r.systems["isl"].detail
        if "pluto" in compare:
            if name == "adi":
                assert r.systems["pluto"].status == "failed"
                assert "Error extracting polyhedra" in r.systems["pluto"].detail
            else:
                assert r.systems["pluto"].status == "checked"


@needs_polybench
def test_native_check_finds_wrong_output(tmp_path):
    """A build whose dump differs from gcc's is WRONG (never timed)."""
    kernel = native.NativeKernel(native.PolyBenchC.find(POLYBENCH_C), "jacobi-1d", "MINI")
    dump = ("POLYBENCH_DUMP_ARRAYS",)
    good = native.build_native("gcc", kernel, dump, _cfg([]), EXACT_FLAGS)
    broken_c = kernel.c_file.read_text().replace("0.33333 * (A[i-1] + A[i] + A[i + 1])",
                                                 "0.33333 * (A[i-1] + A[i] + A[i])")
    assert broken_c != kernel.c_file.read_text()
    bad = kernel.compile("pluto", broken_c, ("-O2",) + EXACT_FLAGS, "gcc", dump)
    out = native.check_dumps({"gcc": good, "pluto": bad})
    assert out["pluto"].status == "WRONG" and "differ" in out["pluto"].detail


def test_missing_polybench_sources_are_a_usage_error(tmp_path):
    res = CliRunner().invoke(main, ["bench", "polybench", "--kernels", "gemm", "--input", "native",
                                    "--polybench-c", str(tmp_path)])
    assert res.exit_code == 2 and "polybench.c" in res.output and "--polybench-c" in res.output


@needs_polybench
def test_bench_both_modes_check_only(tmp_path):
    """`--input both --check-only`: one table per mode, each saying which mode ran."""
    out = tmp_path / "c.json"
    res = CliRunner().invoke(main, ["bench", "polybench", "--kernels", "jacobi-1d", "--input", "both", "--check-only",
                                    "--evaluator", "measure", "--polybench-c", str(POLYBENCH_C), "-q",
                                    "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "input: scop" in res.output and "input: native" in res.output
    data = json.loads(out.read_text())
    assert [(r["kernel"], r["input"]) for r in data["results"]] == [("jacobi-1d", "scop"), ("jacobi-1d", "native")]
    assert data["results"][1]["systems"]["original"]["status"] == "checked"


def _fake(kernel: str, flops: int, nbytes: int, times: dict[str, float], mode: str = "scop") -> KernelResult:
    systems = {s: SystemResult(s, "ok", t, t, t, [t]) for s, t in times.items()}
    r = KernelResult(kernel, "LARGE", "x", "model", 0.0, systems, mode, flops, nbytes, "double")
    r.rate(100.0)
    return r


def test_roofline_png_is_written(tmp_path):
    results = [_fake("gemm", 4 * 10**9, 4 * 10**7, {"gcc": 1.0, "looper": 0.1, "pluto": 0.2}),
               _fake("atax", 1.6 * 10**7, 3.2 * 10**7, {"gcc": 0.01, "looper": 0.005}),
               _fake("gemm", 4 * 10**9, 4 * 10**7, {"gcc": 1.2, "original": 1.0, "looper": 0.1}, "native")]
    assert results[0].systems["looper"].gflops == pytest.approx(40.0)
    assert results[0].systems["looper"].fraction_of_peak == pytest.approx(0.4)
    assert len(points(results)) == 8
    path = tmp_path / "roof.png"
    plot_roofline(results, Limits(2, 100.0, 200.0, 20.0), path)
    assert path.stat().st_size > 10_000


@needs_polybench
def test_native_records_replay_in_place(tmp_path, monkeypatch):
    """`--input native --records`: the C scop's record is applied in place (as `looper apply`
    writes it), checked, and the kernel is not searched; a kernel without a record stops the run
    before anything is built."""
    import looper.api
    tree = native.PolyBenchC.find(POLYBENCH_C)
    records = tmp_path / "r.jsonl"
    res = CliRunner().invoke(main, ["optimize", str(tree.kernel("gemm")), "-s", "MINI", "-I", str(tree.utilities),
                                    "-e", "model", "--no-speed-guard", "-q", "-o", str(tmp_path / "g.c"),
                                    "--record", str(records)])
    assert res.exit_code == 0, res.output
    (rec,) = [json.loads(line) for line in records.read_text().splitlines()]
    rec.update(evaluator="measure", measured=2.0)  # as a measuring search records it: no model guard at MINI
    records.write_text(json.dumps(rec) + "\n")

    def refuse(*args, **kwargs):
        raise AssertionError("the bench searched")
    monkeypatch.setattr(looper.api, "optimize", refuse)
    out = tmp_path / "out.json"
    args = ["bench", "polybench", "--input", "native", "--polybench-c", str(POLYBENCH_C), "--sizes", "MINI",
            "--check-only", "-q", "--records", str(records), "--json", str(out)]
    res = CliRunner().invoke(main, [*args, "--kernels", "gemm"])
    assert res.exit_code == 0, res.output
    (r,) = json.loads(out.read_text())["results"]
    assert r["input"] == "native" and r["systems"]["looper"]["status"] == "checked"
    assert r["sequence_json"] == rec["sequence"]
    res = CliRunner().invoke(main, [*args, "--kernels", "gemm,atax"])
    assert res.exit_code != 0 and "atax [MINI]" in res.output
