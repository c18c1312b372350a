"""Measured effect of one fusion or distribution on the original program, from datagen data,
split by whether the statements it brings together (pulls apart) share data within two
iterations (looper.poly.reuse.shares_data).  The evidence behind the fusion level's filter.

    python scripts/fusion_reuse_stats.py data/synth-v2 data/synth-v2-small data/synth-v2-large
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

import pyarrow.parquet as pq

from looper.errors import LooperError
from looper.lang.parse import parse_source
from looper.poly.reuse import shares_data
from looper.transforms.schedule import Schedule

COLUMNS = ["program", "source", "size", "sequence", "level", "status", "speedup"]


def _shares(program, schedule: Schedule) -> bool:
    step = schedule.steps[0]
    if step.kind == "fuse":
        return shares_data(schedule.lowered, step.first, step.second, step.innermost_row)
    # a distribution: the groups it makes, told apart by their position before the split loop
    groups: dict[int, list[str]] = {}
    for st in step.statements:
        groups.setdefault(schedule.lowered.rows[st][step.row - 1].const, []).append(st)
    parts = [groups[k] for k in sorted(groups)]
    before = Schedule(program).lowered
    return any(shares_data(before, a, b, step.row) for a, b in zip(parts, parts[1:]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="+", help="datagen directories")
    args = ap.parse_args()
    programs: dict[tuple, object] = {}
    effects: dict[tuple[str, bool], list[float]] = {}
    for directory in args.data:
        for part in sorted(Path(directory).glob("points-*.parquet")):
            for r in pq.read_table(part, columns=COLUMNS).to_pylist():
                if r["level"] != "fusion" or r["status"] not in ("ok", "slow") or not r["speedup"]:
                    continue
                seq = json.loads(r["sequence"])
                if len(seq) != 1 or seq[0]["kind"] not in ("fuse", "distribute"):
                    continue  # one step on the original: its speedup is the step's own effect
                key = (directory, r["program"])
                if key not in programs:
                    try:
                        programs[key] = parse_source(r["source"], f"{r['program']}.py", r["size"])
                    except LooperError:
                        programs[key] = None
                if programs[key] is None:
                    continue
                s = Schedule.from_json(programs[key], seq)
                effects.setdefault((seq[0]["kind"], _shares(programs[key], s)), []).append(r["speedup"])
    for (kind, shares), xs in sorted(effects.items()):
        g = math.exp(sum(math.log(x) for x in xs) / len(xs))
        print(f"{kind:10} shares data: {shares!s:5}  n={len(xs):5}  geomean {g:.3f}  median "
              f"{statistics.median(xs):.3f}  >1.1x {sum(x > 1.1 for x in xs) / len(xs):4.0%}  "
              f"<0.9x {sum(x < 0.9 for x in xs) / len(xs):4.0%}")


if __name__ == "__main__":
    main()
