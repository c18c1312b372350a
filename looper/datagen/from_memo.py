"""Points from the measurement memo: the measuring searches already run, as training data.

A measuring search (`looper optimize -e measure`, the hybrid's rounds, `looper bench --ceiling`)
commits every candidate it times to the memo with its provenance (`runtime.measurements`): the
sequence as JSON, the program's fingerprint, file and sizes, and the OpenMP environment and
protocol it was timed under.  A point is a candidate's speedup over the original timed the same
way, so rows are grouped by everything a time depends on besides the schedule (program, CPU,
compiler, flags, threads, environment); a group that holds its original's row (the `baseline`)
gives one point per timed candidate, its speedup the original's summary over the candidate's
(`Protocol.summary`: the mean of fresh runs as run, the median warm).

Every point says how it was timed (`environment`), so a dataset never mixes environments unseen
(`costmodel.train.load_examples` refuses a mix).  Left out, each counted with its reason:

- PolyBench: it is the test set the model is judged on;
- C input: the training loader reads the Python subset (a C scop has a Python twin only after
  `looper compile`);
- a program whose file is gone, or parses to another fingerprint (edited since);
- a size given with -D (the row's sizes are not a label of the file's SIZES);
- rows written before the memo kept provenance, and groups without their original.
"""
from __future__ import annotations

import json
import sqlite3
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..codegen.harness import HARNESS_VERSION
from ..errors import LooperError
from ..kernels import is_polybench, is_polybench_program
from ..lang.parse import parse_source
from ..runtime.run import AS_RUN, WARM


@dataclass
class MemoPoints:
    """What a conversion found: the rows for the dataset and why the others were left out."""

    rows: list[dict] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)  # reason -> memo rows
    programs: int = 0


def memo_points(memo: str | Path) -> MemoPoints:
    """Every usable measurement of `memo` as a dataset row (`datagen.collect.SCHEMA`)."""
    path = Path(memo)
    if not path.exists():
        raise LooperError(f"no measurement memo at {path}")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)  # read only: a search may be writing
    columns = ("program", "size", "schedule", "status", "times", "detail", "compiler", "flags", "cpu",
               "threads", "loadavg", "created", "sequence", "fingerprint", "source", "sizes", "environment")
    try:
        have = {row[1] for row in db.execute("PRAGMA table_info(measurements)")}
        if "sequence" not in have:
            return MemoPoints(skipped=Counter({"written before the memo kept provenance": _count(db)}))
        raw = [dict(zip(columns, r)) for r in db.execute(f"SELECT {', '.join(columns)} FROM measurements")]
    finally:
        db.close()
    out = MemoPoints()
    groups: dict[tuple, list[dict]] = {}
    for r in raw:
        if not r["sequence"]:
            out.skipped["written before the memo kept provenance"] += 1
            continue
        key = (r["fingerprint"], r["cpu"], r["compiler"], r["flags"], r["threads"], r["environment"])
        groups.setdefault(key, []).append(r)
    sources: dict[str, str | None] = {}
    for rows in groups.values():
        first = rows[0]
        why = _unusable(first, sources)
        if why is not None:
            out.skipped[why] += len(rows)
            continue
        base = [r for r in rows if r["detail"] == "baseline" and json.loads(r["sequence"]) == []]
        if not base:
            out.skipped["no original timed the same way"] += len(rows)
            continue
        protocol = AS_RUN if "as-run" in first["environment"].split("; ") else WARM
        baseline_times = json.loads(base[-1]["times"])
        baseline = protocol.summary(baseline_times)
        name = f"memo-{Path(first['source']).stem}-{first['fingerprint'][:10]}"
        out.programs += 1
        for r in rows:
            steps = json.loads(r["sequence"])
            if not steps:
                continue
            times = json.loads(r["times"])
            ok = r["status"] in ("ok", "slow") and times
            speedup = baseline / protocol.summary(times) if ok else float("nan")
            spread = (max(times) - min(times)) / statistics.median(times) if len(times) > 1 else 0.0
            out.rows.append(dict(
                program=name, seed=-1, source=sources[first["source"]], size=first["size"],
                sizes=json.dumps(json.loads(first["sizes"])), sequence=json.dumps(steps),
                description=r["schedule"], level="", legal=True, reason=r["detail"] if not ok else "",
                status=r["status"], times=times, baseline_times=baseline_times, speedup=speedup, spread=spread,
                cpu=r["cpu"], compiler=r["compiler"], flags=r["flags"], threads=int(r["threads"]),
                loadavg=float(r["loadavg"]), created=float(r["created"]), harness=_harness(first["environment"]),
                environment=first["environment"]))
    return out


def _unusable(row: dict, sources: dict[str, str | None]) -> str | None:
    """Why a program's rows cannot become points (None: they can); reads its file once."""
    path = row["source"]
    if is_polybench(path):
        return "PolyBench (the test set)"
    if Path(path).suffix in (".c", ".h", ".cc", ".cpp"):
        return "C input (the training loader reads the Python subset)"
    if path not in sources:
        try:
            sources[path] = Path(path).read_text()
        except (OSError, UnicodeDecodeError):
            sources[path] = None
    text = sources[path]
    if text is None:
        return "the program's file is gone"
    try:
        program = parse_source(text, path, row["size"])
    except LooperError:
        return "sizes given with -D, or a file that no longer parses"
    if program.fingerprint != row["fingerprint"]:
        return "the program's file changed since it was timed"
    if is_polybench_program(program):
        return "PolyBench (the test set)"
    return None


def _harness(environment: str) -> int:
    for part in environment.split("; "):
        if part.startswith("harness") and part[7:].isdigit():
            return int(part[7:])
    return HARNESS_VERSION


def _count(db: sqlite3.Connection) -> int:
    return db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]


def write_memo_points(out_dir: str | Path, memo: str | Path) -> tuple[int, MemoPoints]:
    """Add the memo's points to the dataset in `out_dir` as new parts, leaving out those already
    there (the same program and sequence timed the same way): running it again adds only what the
    memo gained since.  Returns the points written and the conversion's account."""
    import pyarrow.parquet as pq

    from .collect import DatasetWriter
    found = memo_points(memo)
    writer = DatasetWriter(out_dir)
    have: set[tuple] = set()
    for part in writer.parts():
        t = pq.read_table(part, columns=[c for c in ("program", "sequence", "environment")
                                         if c in pq.ParquetFile(part).schema_arrow.names])
        cols = t.to_pydict()
        envs = cols.get("environment", [None] * t.num_rows)
        have.update(zip(cols["program"], cols["sequence"], envs))
    fresh = [r for r in found.rows if (r["program"], r["sequence"], r["environment"]) not in have]
    by_program: dict[str, list[dict]] = {}
    for r in fresh:
        by_program.setdefault(r["program"], []).append(r)
    for rows in by_program.values():
        writer.add(rows)
    writer.flush()
    return len(fresh), found
