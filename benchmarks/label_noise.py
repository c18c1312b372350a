"""How well the measurements rank themselves: a ceiling for the cost model's held-out Spearman.

    python benchmarks/label_noise.py data/synth-v2 data/synth-v2-small ...

Every measured point has several timed repeats.  Per held-out program (the same hash split and
the same noise filter as `looper train`), rank the candidates once by their first repeat and once
by their second and report the mean Spearman between the two orders, per data directory.  Both
repeats run in the same process, minutes apart at most, so this is an upper bound on how well any
model can rank against one measurement: a model far below it has more to learn, one close to it is
ranking noise.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from looper.costmodel.train import side_of, spearman, usable


def repeat_spearman(directory: Path, max_noise: float = 0.05) -> tuple[int, float]:
    """(programs, mean Spearman of repeat 1 against repeat 2) over the held-out programs."""
    columns = ["program", "legal", "status", "times", "speedup", "sequence", "harness"]
    rows = [r for f in sorted(directory.glob("points-*.parquet")) for r in pq.read_table(f, columns=columns).to_pylist()]
    times: dict[str, list[list[float]]] = {}
    for r in rows:  # "ok" points with two repeats or more: "slow" ones have one
        if usable(r, max_noise) and r["status"] == "ok" and r["sequence"] != "[]" and len(r["times"]) >= 2:
            times.setdefault(r["program"], []).append(r["times"])
    scores = [spearman(-np.array([t[0] for t in ts]), -np.array([t[1] for t in ts]))
              for p, ts in times.items() if side_of(p) == "test" and len(ts) >= 3]
    scores = [s for s in scores if s == s]
    return len(scores), float(np.mean(scores)) if scores else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="+", type=Path)
    ap.add_argument("--max-noise", type=float, default=0.05)
    args = ap.parse_args()
    print(f"{'part':28} {'programs':>8} {'repeat Spearman':>15}")
    for d in args.data:
        n, s = repeat_spearman(d, args.max_noise)
        print(f"{d.name:28} {n:8d} {s:15.3f}", flush=True)


if __name__ == "__main__":
    main()
