"""Data collection: rows are complete, a kill -9 loses nothing and re-measures nothing, Dask runs."""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from looper.datagen.cluster import run_collection
from looper.datagen.collect import CollectConfig, DatasetWriter


def _cfg(out, lock) -> CollectConfig:
    return CollectConfig(out_dir=str(out), beam=1, max_affine=1, max_fusion=1, max_per_parent=2, repeats=2,
                         target_low=2e4, target_high=6e4, lock_path=str(lock))


def _table(out) -> pa.Table:
    return pa.concat_tables([pq.read_table(p) for p in sorted(out.glob("points-*.parquet"))])


def _memo(out) -> dict[str, float]:
    """The memo's keys and timestamps; empty while the collector has created the file but not yet
    its table (the test polls it from outside, so it can look in between)."""
    db = sqlite3.connect(out / "memo.sqlite")
    try:
        return dict(db.execute("SELECT key, created FROM measurements").fetchall())
    except sqlite3.OperationalError as err:
        if "no such table" not in str(err):
            raise
        return {}
    finally:
        db.close()


def test_rows_hold_the_raw_facts(tmp_path):
    stats = run_collection(range(2), _cfg(tmp_path / "ds", tmp_path / "lock"))
    assert stats.programs == 2 and not stats.errors and not stats.wrong
    t = _table(tmp_path / "ds")
    rows = t.to_pylist()
    assert {r["seed"] for r in rows} == {0, 1}
    measured = [r for r in rows if r["legal"] and r["status"] == "ok"]
    assert measured
    for r in measured:
        assert len(r["times"]) == 2 and len(r["baseline_times"]) == 2
        assert r["speedup"] > 0 and r["threads"] == 2 and r["cpu"] and r["compiler"].startswith("gcc")
        assert isinstance(json.loads(r["sequence"]), list) and "def kernel" in r["source"]
        assert r["environment"].startswith("default; as-run; harness")  # how it was timed
        machine = json.loads(r["machine"])  # which machine, precisely: not only its name
        assert machine["cpu"] == r["cpu"] and "family" in r["cpu"] and machine["caches"]
    assert any(not r["legal"] for r in rows) or len(rows) > 3
    # the first space only unless asked: none of what the shipped model never saw
    grown = {"register", "pack", "timetile", "vectorize", "region", "islschedule", "expand", "blocks", "sinktile"}
    assert not {t["kind"] for r in rows for t in json.loads(r["sequence"])} & grown


def test_grown_collection_measures_the_grown_kinds(tmp_path):
    """`--grown` on products, as scripts/datagen-grown.sh collects: register tiles and packs are
    proposed, measured and checked; a lane follows the default search's ranking; the points are
    timed as the committed parts were (tuned, warm), so one model trains on both."""
    import dataclasses
    from looper.datagen.schema import LEGACY_ENVIRONMENT, timing_of
    cfg = dataclasses.replace(_cfg(tmp_path / "ds", tmp_path / "lock"), grown=True, patterns=("matmul",),
                              target_low=1e5, target_high=2e5, omp_env="tuned", protocol="warm",
                              explore=1, explore_ranking=True)
    stats = run_collection(range(1), cfg)
    assert stats.programs == 1 and not stats.errors and not stats.wrong
    rows = _table(tmp_path / "ds").to_pylist()
    measured = {t["kind"] for r in rows if r["legal"] and r["status"] in ("ok", "slow")
                for t in json.loads(r["sequence"])}
    assert measured & {"register", "pack", "vectorize", "region", "sinktile", "blocks"}, measured
    assert {timing_of(r["environment"]) for r in rows} == {LEGACY_ENVIRONMENT}


def test_resume_after_kill_loses_nothing_and_measures_nothing_twice(tmp_path):
    out, lock = tmp_path / "ds", tmp_path / "lock"
    cfg = _cfg(out, lock)
    script = ("import sys; from looper.datagen.cluster import run_collection; "
              "from looper.datagen.collect import CollectConfig; "
              f"run_collection(range(4), CollectConfig(**{cfg.__dict__!r}))")
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if (out / "memo.sqlite").exists() and len(_memo(out)) >= 15:
            break
        time.sleep(0.2)
    assert proc.poll() is None, "collection finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _memo(out)
    assert before
    stats = run_collection(range(4), cfg)
    after = _memo(out)
    # every measurement taken before the kill is reused as it was: same key, same timestamp
    assert all(after[k] == v for k, v in before.items())
    rows = _table(out).to_pylist()
    assert {r["seed"] for r in rows} == {0, 1, 2, 3}
    keys = [(r["seed"], r["sequence"]) for r in rows]
    assert len(keys) == len(set(keys))
    # and a third run has nothing left to do
    assert run_collection(range(4), cfg).programs == 0
    assert DatasetWriter(out).done_seeds() == {0, 1, 2, 3}
    assert stats.programs == 4


def test_dask_local_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        stats = run_collection(range(10, 12), _cfg(tmp_path / "ds", tmp_path / "lock"),
                               scheduler=cluster.scheduler_address)
    assert stats.programs == 2 and not stats.errors
    assert {r["seed"] for r in _table(tmp_path / "ds").to_pylist()} == {10, 11}


def test_guided_exploration_measures_more_of_the_same_programs(tmp_path):
    """`--explore 1 --explore-model` end to end: the shipped model guides one lane, so the program
    gets rows the plain search never reached.  The guided run starts from the plain run's memo, so
    every schedule both meet gets the same measured times: without the lane the two runs would
    explore exactly the same sequences (measured noise alone cannot tell them apart).  Without
    --explore the model option is a usage error."""
    import dataclasses
    import shutil
    from click.testing import CliRunner
    from looper.cli import main
    from looper.costmodel.store import weights_dir, DEFAULT_MODEL
    shipped = str(weights_dir() / DEFAULT_MODEL)
    plain = _cfg(tmp_path / "ds", tmp_path / "lock")
    run_collection([3], plain)
    guided = dataclasses.replace(plain, out_dir=str(tmp_path / "ds2"), explore=1,
                                 explore_model=shipped)
    (tmp_path / "ds2").mkdir()
    shutil.copy(tmp_path / "ds" / plain.memo_name, tmp_path / "ds2" / plain.memo_name)
    stats = run_collection([3], guided)
    assert stats.programs == 1 and not stats.errors and not stats.wrong
    a = {r["sequence"] for r in _table(tmp_path / "ds").to_pylist()}
    rows = _table(tmp_path / "ds2").to_pylist()
    b = {r["sequence"] for r in rows}
    measured = [r for r in rows if r["legal"] and r["status"] in ("ok", "slow")]
    assert b - a and len(measured) > len(a) // 2
    res = CliRunner().invoke(main, ["datagen", str(tmp_path / "ds3"), "-n", "1", "--explore-model", shipped])
    assert res.exit_code == 2 and "--explore" in res.output
    res = CliRunner().invoke(main, ["datagen", str(tmp_path / "ds4"), "-n", "1", "--explore-ranking"])
    assert res.exit_code == 2 and "--explore-ranking" in res.output and not (tmp_path / "ds4").exists()
