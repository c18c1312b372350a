"""How well the default search's ranking orders held-out programs' measured candidates.

    python benchmarks/ranking_heldout.py data/synth-v7-grown-* --model NEW.pt
    python benchmarks/ranking_heldout.py data/synth-v7-grown-* --model NEW.pt --model models/looper-v6.pt

For every held-out program (the test side of `looper train`'s split by program, the same noise
filter) each ranker orders the measured candidates, and the per-program Spearman and nDCG against
their measured speedups are averaged, as `looper train` reports them.  The rankers are the
product's own code (`search.budget.Ranking`, `search.evaluators.ModelEvaluator`), on the machine
each point was timed on (its `machine` column):

- `terms`: the analytic cost terms alone (the ranking without a model);
- `MODEL`: the model alone (what `--evaluator model` searches by);
- `ranking MODEL`: the default search's ranking with that model: the geometric mean of the model
  and the terms for whole schedules when the model was trained on the grown space, else for the
  loop structure with the terms' gain of the refinements (looper-v6).

The programs of PolyBench never enter a dataset (`looper datagen` makes synthetic ones).
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from looper.costmodel.store import load_model
from looper.costmodel.train import ndcg, parquet_files, side_of, spearman, usable
from looper.datagen.schema import target_of
from looper.lang.parse import parse_source
from looper.search.budget import Ranking
from looper.search.evaluators import ModelEvaluator
from looper.transforms.schedule import Schedule


def held_out_rows(paths: list[str], split: str, max_noise: float) -> dict[tuple, list[dict]]:
    """The usable rows of the held-out programs, by (program, sizes)."""
    tables = []
    for f in parquet_files(paths):
        t = pq.read_table(f)
        tables.append(t.append_column("part", pa.array([f.parent.name] * t.num_rows, pa.string())))
    rows = pa.concat_tables(tables, promote_options="default").to_pylist()
    out: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if usable(r, max_noise) and side_of(r["program"]) == split and json.loads(r["sequence"]):
            out[(r["program"], r["sizes"])].append(r)
    return {k: v for k, v in out.items() if len(v) >= 3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="+")
    ap.add_argument("--model", action="append", default=[], help="a cost model (repeat for several)")
    ap.add_argument("--split", choices=("validation", "test"), default="test")
    ap.add_argument("--max-noise", type=float, default=0.05)
    ap.add_argument("--json", default=None, help="write the per-program scores here")
    args = ap.parse_args()
    models = [(path, *load_model(path)) for path in args.model]
    programs = held_out_rows(args.data, args.split, args.max_noise)
    scores: dict[str, list[tuple[float, float]]] = defaultdict(list)
    per_program = []
    for (name, _sizes), rows in sorted(programs.items()):
        r0 = rows[0]
        program = parse_source(r0["source"], f"{name}.py", r0["size"])
        target = target_of(r0.get("machine"), int(r0["threads"] or 2))
        schedules = [Schedule.from_json(program, json.loads(r["sequence"])) for r in rows]
        true = np.array([r["speedup"] for r in rows])
        rankers = {"terms": Ranking(program, target, None)}
        for path, net, meta in models:
            m = ModelEvaluator(program, net, meta, target)
            rankers[path] = m
            rankers[f"ranking {path}"] = Ranking(program, target, m)
        entry = {"program": name, "part": r0["part"], "candidates": len(rows)}
        for label, ranker in rankers.items():
            pred = np.array([sc.speedup for sc in ranker.evaluate(program, schedules)])
            s, n = spearman(pred, true), ndcg(pred, true)
            if s == s:
                scores[label].append((s, n))
            entry[label] = {"spearman": s, "ndcg": n}
        per_program.append(entry)
    print(f"{len(programs)} {args.split} programs of {', '.join(args.data)}")
    print(f"{'ranker':60} {'Spearman':>9} {'nDCG':>7} {'programs':>9}")
    for label, v in scores.items():
        a = np.array(v)
        print(f"{label:60} {a[:, 0].mean():9.3f} {a[:, 1].mean():7.3f} {len(a):9d}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(per_program, f, indent=1)


if __name__ == "__main__":
    main()
