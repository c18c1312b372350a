"""`looper datagen --from-memo`: the measuring searches' memo as training points, each labelled
with how it was timed; PolyBench, C input and edited programs left out; a mix of environments
refused by the loader unless one is chosen."""
from __future__ import annotations

import json
import shutil
import statistics

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from looper.cli import main
from looper.costmodel.train import load_examples
from looper.datagen.from_memo import memo_points, write_memo_points
from looper.lang.parse import parse_file
from looper.runtime.measurements import Measurement, MeasurementStore, Provenance
from looper.runtime.status import Status
from looper.transforms import Interchange, Parallelize
from looper.transforms.schedule import Schedule

from conftest import ROOT, kernel_path

PROGRAM = '''
SIZES = {"SMALL": dict(N=40, M=48)}
def kernel(N: int, M: int, A: f64[N, M], B: f64[N, M]):
    for i in range(N):
        for j in range(M):
            B[i, j] = A[i, j] * 2.0 + B[i, j]
OUTPUTS = ["B"]
'''
AS_RUN = "default; as-run; harness4"


def _put(store, program, schedule, times, environment=AS_RUN, status=Status.OK, detail=""):
    key = f"{program.fingerprint}-{schedule.describe()}-{environment}"
    store.put(key, Measurement(status, times, 0.0, detail, 0.1), program=program.name, size=program.size_label,
              schedule=schedule.describe(), compiler="gcc", flags="-O3", cpu="cpu-1", threads=2,
              provenance=Provenance(json.dumps(schedule.to_json()), program.fingerprint, program.path,
                                    json.dumps(program.sizes, sort_keys=True), environment))


@pytest.fixture
def memo(tmp_path):
    """A memo as a measuring search leaves it: an original and two candidates of a program of the
    user's, timed as run; a PolyBench kernel's; a row without provenance."""
    src = tmp_path / "scale.py"
    src.write_text(PROGRAM)
    p = parse_file(src, "SMALL")
    store = MeasurementStore(tmp_path / "memo.sqlite")
    _put(store, p, Schedule(p), [1.0, 1.1, 0.9, 1.0], detail="baseline")
    swap = Schedule(p).then(Interchange(("S0",), 1, 3))
    par = Schedule(p).then(Parallelize(((("S0",), 1),)))
    _put(store, p, swap, [2.0, 2.02, 2.04])
    _put(store, p, par, [0.5, 0.505, 0.51])
    gemm = parse_file(kernel_path("gemm"), "MINI")
    _put(store, gemm, Schedule(gemm), [1.0, 1.0], detail="baseline")
    _put(store, gemm, Schedule(gemm).then(Parallelize(((("S0", "S1"), 1),))), [0.5, 0.5])
    store.db.execute("INSERT INTO measurements (key, program, size, schedule, status, times, cutoff, detail, "
                     "compiler, flags, cpu, threads, loadavg, created) VALUES "
                     "('old', 'x', 'MINI', 'interchange(i,j)', 'ok', '[1.0]', 0, '', 'gcc', '', 'cpu', 2, 0, 0)")
    store.db.commit()
    store.close()
    return tmp_path, src, swap, par


def test_points_are_speedups_over_the_original_timed_the_same_way(memo):
    tmp_path, src, swap, par = memo
    found = memo_points(tmp_path / "memo.sqlite")
    assert found.programs == 1 and len(found.rows) == 2
    by_sequence = {r["sequence"]: r for r in found.rows}
    base = statistics.fmean([1.0, 1.1, 0.9, 1.0])  # as run: means
    assert by_sequence[json.dumps(par.to_json())]["speedup"] == pytest.approx(base / statistics.fmean([0.5, 0.505, 0.51]))
    assert by_sequence[json.dumps(swap.to_json())]["speedup"] == pytest.approx(base / 2.02)
    row = found.rows[0]
    assert row["environment"] == AS_RUN and row["source"] == PROGRAM and row["size"] == "SMALL"
    assert row["cpu"] == "cpu-1" and row["baseline_times"] == [1.0, 1.1, 0.9, 1.0]
    assert found.skipped == {"PolyBench (the test set)": 2, "written before the memo kept provenance": 1}


def test_an_edited_program_is_left_out(memo):
    tmp_path, src, _, _ = memo
    src.write_text(PROGRAM.replace("* 2.0", "* 3.0"))
    found = memo_points(tmp_path / "memo.sqlite")
    assert not found.rows and found.skipped["the program's file changed since it was timed"] == 3


def test_the_points_train_and_running_again_adds_nothing(memo):
    tmp_path, _, _, _ = memo
    out = tmp_path / "data"
    res = CliRunner().invoke(main, ["datagen", str(out), "--from-memo", str(tmp_path / "memo.sqlite")])
    assert res.exit_code == 0, res.output
    assert "2 points of 1 programs; 2 new" in res.output and "PolyBench (the test set)" in res.output
    written, _ = write_memo_points(out, tmp_path / "memo.sqlite")
    assert written == 0 and sum(pq.ParquetFile(p).metadata.num_rows for p in out.glob("points-*.parquet")) == 2
    ds = load_examples([out])
    assert ds.programs == 1 and len(ds.examples) == 3  # the original's anchor and the two candidates
    assert ds.meta["environment"] == "default; as-run"


def test_the_loader_refuses_a_mix_of_environments_unless_one_is_chosen(memo):
    tmp_path, _, _, _ = memo
    out = tmp_path / "data"
    write_memo_points(out, tmp_path / "memo.sqlite")
    shutil.copy(ROOT / "tests" / "data" / "tiny-points.parquet", out / "points-00099.parquet")  # warm, tuned
    with pytest.raises(ValueError, match="several environments"):
        load_examples([out])
    assert load_examples([out], environment="default; as-run").programs == 1
    legacy = load_examples([out], environment="OMP_PROC_BIND=true OMP_PLACES=cores OMP_WAIT_POLICY=active; warm")
    assert legacy.programs > 1
    res = CliRunner().invoke(main, ["train", str(out), "-o", str(tmp_path / "m.pt")])
    assert res.exit_code == 2 and "several environments" in res.output


def test_a_renamed_copy_of_a_test_set_kernel_is_left_out(tmp_path):
    """Caught by its kernel text, not its name: `mine.py` holding jacobi-1d's kernel and sizes of
    its own is still the test set."""
    text = kernel_path("jacobi-1d").read_text()
    src = tmp_path / "mine.py"
    src.write_text(text)
    p = parse_file(src, "MINI")
    store = MeasurementStore(tmp_path / "memo.sqlite")
    _put(store, p, Schedule(p), [1.0, 1.0], detail="baseline")
    _put(store, p, Schedule(p).then(Parallelize(((("S0",), 3),))), [0.5, 0.5])
    store.close()
    found = memo_points(tmp_path / "memo.sqlite")
    assert not found.rows and found.skipped == {"PolyBench (the test set)": 2}
