"""OpenMP environments: parsed from options, applied to runs, keyed into the memo, baked in."""
from __future__ import annotations

import subprocess

import pytest

from looper.codegen.harness import program_c
from looper.errors import LooperUsageError
from looper.lang.parse import parse_file
from looper.runtime.compile import compile_c
from looper.runtime.ompenv import DEFAULT_ENV, TUNED_ENV, OmpEnv
from looper.search.evaluators import ExecutionEvaluator
from looper.transforms import Parallelize
from looper.transforms.schedule import Schedule

from conftest import kernel_path


def test_parse_and_describe():
    assert OmpEnv.parse("default") is DEFAULT_ENV and OmpEnv.parse("tuned") is TUNED_ENV
    custom = OmpEnv.parse("OMP_WAIT_POLICY=active GOMP_SPINCOUNT=100000")
    assert custom.name == "custom" and custom.apply({})["GOMP_SPINCOUNT"] == "100000"
    assert TUNED_ENV.command("./gemm").startswith("OMP_PROC_BIND=true ") and "default" in DEFAULT_ENV.describe()
    for bad in ("HOME=/", "OMP_X", "=1"):
        with pytest.raises(LooperUsageError):
            OmpEnv.parse(bad)


def test_measurements_in_other_environments_are_other_memo_entries():
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    s = Schedule(p).then(Parallelize(((("S0", "S1"), 3),)))
    keys = set()
    for env in (DEFAULT_ENV, TUNED_ENV, OmpEnv.parse("OMP_WAIT_POLICY=active")):
        ev = ExecutionEvaluator(p, memoize=False, omp_env=env)
        keys.add(ev.memo_key(s))
        ev.close()
    assert len(keys) == 3


def test_a_baked_program_sets_its_environment_unless_the_user_does(tmp_path):
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    src = program_c(p, [Schedule(p).lowered], bake_env="OMP_WAIT_POLICY=active OMP_DISPLAY_ENV=true")
    exe = compile_c(src, defines=("POLYBENCH_TIME",)).path
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run([str(exe)], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "OMP_WAIT_POLICY = 'ACTIVE'" in out.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, env={**env, "OMP_WAIT_POLICY": "passive"})
    assert "OMP_WAIT_POLICY = 'PASSIVE'" in out.stderr  # the user's own setting wins


def test_bench_times_every_system_in_each_environment_and_flags_dependence():
    from looper.bench.results import KernelResult, SystemResult
    ok = lambda s, t: SystemResult(s, "ok", t, t, t, [t])  # noqa: E731
    r = KernelResult("k", "MINI", "", "model", 0.0,
                     {"gcc": ok("gcc", 1.0), "looper": ok("looper", 0.5),
                      "gcc@tuned": ok("gcc@tuned", 1.0), "looper@tuned": ok("looper@tuned", 2.0)})
    assert r.environment_flags() == ["looper faster than gcc in default, slower in tuned"]
    r.systems["looper@tuned"] = ok("looper@tuned", 0.9)
    assert r.environment_flags() == []
