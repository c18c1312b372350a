"""How far the analytic cost terms' seconds are from measured ones: the calibration that
`search.restraint.estimated_seconds` applies to the terms' estimate of an original program.

    python scripts/terms_calibration.py data/synth-v*

For every program of the data parts, the measured median time of its original (the `original`
row) against the terms' estimate on the machine the point recorded (`datagen.schema.target_of`;
the reference target for parts that recorded none).  The terms rank schedules; their absolute
seconds are pessimistic (they assume scalar rates where gcc vectorizes, and whole-box
footprints), so a decision that needs an absolute time scales them by the median ratio printed
here.  PolyBench is not among the programs: it is the test.
"""
from __future__ import annotations

import glob
import json
import statistics
import sys
from pathlib import Path

import pyarrow.parquet as pq

from looper.costmodel.terms import estimate
from looper.datagen.schema import target_of
from looper.lang.parse import parse_source
from looper.transforms.schedule import Schedule


def ratios(part: Path) -> list[float]:
    """measured / estimated seconds of each program's original in one data part."""
    out, seen = [], set()
    for f in sorted(glob.glob(str(part / "points-*.parquet"))):
        table = pq.read_table(f)
        keep = [c for c in ("program", "source", "size", "description", "status", "times", "machine", "threads")
                if c in table.column_names]
        for r in table.select(keep).to_pylist():
            if r["description"] != "original" or r["status"] != "ok" or r["program"] in seen:
                continue
            seen.add(r["program"])
            times = json.loads(r["times"]) if isinstance(r["times"], str) else r["times"]
            program = parse_source(r["source"], r["size"])
            target = target_of(r.get("machine"), int(r["threads"]))
            out.append(statistics.median(times) / estimate(Schedule(program).lowered, target).seconds)
    return out


def main(parts: list[str]) -> None:
    every = []
    for part in parts:
        rs = sorted(ratios(Path(part)))
        if rs:
            every += rs
            print(f"{Path(part).name:28s} {len(rs):5d} programs  measured/estimated median {statistics.median(rs):.3f}"
                  f"  10% {rs[len(rs) // 10]:.3f}  90% {rs[9 * len(rs) // 10]:.3f}")
    every.sort()
    print(f"{'all':28s} {len(every):5d} programs  measured/estimated median {statistics.median(every):.3f}"
          f"  10% {every[len(every) // 10]:.3f}  90% {every[9 * len(every) // 10]:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
