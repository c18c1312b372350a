"""`looper machine`: the FMA microkernel, the triad, numpy's DGEMM, the caches, the limits' cache.

Never a speed threshold: the numbers only have to be sane (positive, finite, consistent)."""
from __future__ import annotations

import json
import math
import shutil

import pytest
from click.testing import CliRunner

from looper.cli import main
from looper.runtime import peaks
from looper.target import Limits, compiler_id, load_limits, save_limits
from looper.target.caches import CacheLevel, cache_levels, last_level_bytes, parse_size
from looper.runtime.microbench import fma_binary, hot_loop


def test_machine_quick_prints_sane_numbers(tmp_path):
    out = tmp_path / "m.json"
    res = CliRunner().invoke(main, ["machine", "--threads", "1", "--quick", "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "FMA peak double" in res.output and "DGEMM" in res.output and "peak / DGEMM" in res.output
    data = json.loads(out.read_text())
    [one] = data["limits"]
    for key in ("peak_double", "peak_single", "bandwidth", "dgemm"):
        assert one[key] > 0 and math.isfinite(one[key]), key
    assert one["threads"] == 1 and one["lanes_double"] >= 2
    assert one["fork_seconds"] > 0 and one["region_seconds"] > 0
    assert load_limits(1, compiler_id()) is None  # --quick numbers are rough: never cached for `looper bench`


def test_fma_hot_loop_is_vector_fmas():
    """The microkernel's loop compiles to FMAs on the widest vector registers the target has
    (zmm with AVX-512, ymm with AVX2), with nothing but loop control around them."""
    if shutil.which("objdump") is None:
        pytest.skip("objdump is not installed")
    code = hot_loop(fma_binary("double"))
    fmas = [i for i in code if i.startswith("vfmadd")]
    assert len(fmas) >= 12, code
    assert all("%zmm" in i or "%ymm" in i for i in fmas)
    # every accumulator (the destination, last in AT&T syntax) stays in a register: none is
    # spilled.  A multiplier may come from memory (gcc 12 tuning for Sapphire Rapids reads x from
    # the stack: one L1 load per FMA, within the two loads a cycle)
    assert all(i.split(",")[-1].strip().startswith("%") for i in fmas)


def test_limits_cache_round_trip(monkeypatch):
    """bench reads the cached limits for its thread count; without them it measures once
    (peak and bandwidth, no DGEMM) and caches what it measured."""
    assert load_limits(3, compiler_id()) is None
    fake = Limits(3, 100.0, 200.0, 50.0, 8, 90.0, "SkylakeX", 5e-5, 2e-6)
    save_limits(fake, compiler_id())
    assert load_limits(3, compiler_id()) == fake and peaks.limits_for_bench(3) == fake
    assert fake.peak("single") == 200.0 and fake.peak(None) == 100.0
    assert fake.peak_over_dgemm == pytest.approx(100 / 90)
    calls = []
    monkeypatch.setattr(peaks, "measure_limits", lambda t, dgemm=True: calls.append((t, dgemm)) or
                        Limits(t, 1.0, 2.0, 3.0))
    assert peaks.limits_for_bench(4).bandwidth == 3.0 and calls == [(4, False)]
    assert peaks.limits_for_bench(4).bandwidth == 3.0 and len(calls) == 1


def test_caches_from_sysfs(tmp_path):
    for k, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"),
                                              (3, "Unified", "32768K")]):
        d = tmp_path / f"index{k}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(kind)
        (d / "size").write_text(size)
        (d / "shared_cpu_list").write_text("0-1" if level == 3 else "0")
    levels = cache_levels(tmp_path)
    assert [c.describe() for c in levels] == ["L1d 48 KiB", "L1i 32 KiB", "L2 1 MiB", "L3 32 MiB, shared by CPUs 0-1"]
    assert last_level_bytes(levels) == 32 << 20 and parse_size("2M") == 2 << 20
    assert peaks.triad_elements(levels) == 16 << 20  # 4 x 32 MiB of doubles per array
    assert peaks.triad_elements([CacheLevel(2, "Unified", 1 << 20)]) == 4 << 20
    assert cache_levels(tmp_path / "absent") == []
    assert all(c.size > 0 for c in cache_levels())  # this machine's, whatever they are


def test_the_fma_peak_is_the_best_of_its_runs(monkeypatch):
    """One run whose core was taken away halves a peak; the best of the runs is the peak."""
    from looper.runtime import microbench
    outputs = iter(["2e9 0.0346 2 8", "2e9 0.0173 2 8", "2e9 0.0200 2 8"])  # flops, best s, threads, lanes
    monkeypatch.setattr(microbench, "fma_binary", lambda precision: "fma")
    monkeypatch.setattr(microbench, "_run", lambda cmd, threads, timeout: next(outputs))
    peak = microbench.fma_peak("double", 2, runs=3)
    assert peak.gflops == pytest.approx(2e9 / 0.0173 / 1e9) and peak.lanes == 8
