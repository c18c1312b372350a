"""The measurement memo keeps what a later reader needs: the sequence, the program, the timing."""
from __future__ import annotations

import json
import sqlite3

from looper.lang.parse import parse_file
from looper.runtime.measurements import Measurement, MeasurementStore, Provenance
from looper.runtime.status import Status
from looper.search.evaluators import ExecutionEvaluator
from looper.transforms import Parallelize
from looper.transforms.schedule import Schedule

from conftest import kernel_path


def test_a_measurement_keeps_its_sequence_program_and_environment(tmp_path):
    p = parse_file(kernel_path("gemm"), "MINI")
    store = MeasurementStore(tmp_path / "m.sqlite")
    ev = ExecutionEvaluator(p, repeats=1, threads=1, store=store)
    s = Schedule(p).then(Parallelize((((("S0", "S1")), 1),)))
    try:
        [score] = ev.evaluate(p, [s])
    finally:
        ev.close()
    key = ev.memo_key(s)
    prov = store.provenance(key)
    assert score.status in ("ok", "slow") and prov is not None
    assert Schedule.from_json(p, json.loads(prov.sequence)).describe() == s.describe()
    assert prov.fingerprint == p.fingerprint and prov.source == p.path
    assert json.loads(prov.sizes) == p.sizes and "as-run" in prov.environment


def test_an_older_memo_gains_the_columns_and_keeps_its_rows(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(str(path))
    db.execute("CREATE TABLE measurements (key TEXT PRIMARY KEY, program TEXT NOT NULL, size TEXT NOT NULL, "
               "schedule TEXT NOT NULL, status TEXT NOT NULL, times TEXT NOT NULL, cutoff REAL NOT NULL, "
               "detail TEXT NOT NULL, compiler TEXT NOT NULL, flags TEXT NOT NULL, cpu TEXT NOT NULL, "
               "threads INTEGER NOT NULL, loadavg REAL NOT NULL, created REAL NOT NULL)")
    db.execute("INSERT INTO measurements VALUES ('k','p','MINI','original','ok','[1.0]',0,'','gcc','-O3','cpu',2,0,0)")
    db.commit()
    db.close()
    store = MeasurementStore(path)
    assert store.get("k").times == [1.0] and store.provenance("k") == Provenance()
    store.put("k2", Measurement(Status.OK, [2.0]), program="p", size="MINI", schedule="x", compiler="gcc",
              flags="", cpu="c", threads=1, provenance=Provenance("[]", "f", "p.py", "{}", "default; as-run"))
    assert store.provenance("k2").fingerprint == "f" and len(store) == 2
