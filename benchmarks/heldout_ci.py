"""How sure is a held-out Spearman: bootstrap confidence intervals over the test programs.

    python benchmarks/heldout_ci.py models/looper-v6.pt NEW.pt
    python benchmarks/heldout_ci.py models/looper-v2.pt A.pt+B.pt   # '+' pools two ensembles
    (looper-v1..v6: made by the commands in scripts/train.sh's header, v6 also in git at 6873984; only v8 ships)
    python benchmarks/heldout_ci.py --split validation A.pt B.pt A.pt+B.pt   # choosing among them

`looper train` reports the mean of per-program Spearmans over about 200 held-out programs, whose
spread is wide (some rank perfectly, some worse than chance).  This resamples the programs with
replacement and reports each model's mean with its 95% interval, and the paired difference of every
model against the first on the same resamples: a difference whose interval holds 0 is not one the
test set can tell apart.  Same split, noise filter and metric as `looper train`; the data are by
default the parts the first model was tested on (its metadata), checked against its point count
(the dataset hash depends on the order the parts were named in).  `--split validation` scores the
validation programs instead: that is the side to choose a model (or a pool) on, the test side the
one to report it on.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from looper.costmodel.model import Ensemble
from looper.costmodel.store import load_model
from looper.costmodel.train import candidate_predictions, load_examples, program_scores, split_by_program


def load(spec: str):
    """A model file, or several joined by '+' pooled into one ensemble (the mean of their logs)."""
    models = [load_model(p)[0] for p in spec.split("+")]
    return models[0] if len(models) == 1 else Ensemble([m for e in models for m in e.members])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--data", nargs="+", help="data directories (default: the first model's, data/PART)")
    ap.add_argument("--split", choices=("validation", "test"), default="test")
    ap.add_argument("--resamples", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    meta = load_model(args.models[0].split("+")[0])[1]
    data = args.data or [f"data/{part}" for part in meta["metrics"]["test_by_part"]]
    ds = load_examples(data)
    if not args.data and (ds.points, ds.programs) != (meta["points"], meta["programs"]):
        sys.exit(f"{' '.join(data)}: not the data {args.models[0]} was trained on ({ds.points} points "
                 f"of {ds.programs} programs, the model's {meta['points']} of {meta['programs']}); "
                 "name them with --data")
    _, validation, test = split_by_program(ds.examples)
    held_out = validation if args.split == "validation" else test
    per_model = []
    for spec in args.models:
        pred, cands = candidate_predictions(load(spec), held_out)
        scores = program_scores(pred, np.array([e.speedup for e in cands]), [e.program for e in cands])
        per_model.append({p: s for p, (s, _) in scores.items() if s == s})
    common = sorted(set.intersection(*(set(m) for m in per_model)))
    x = np.array([[m[p] for p in common] for m in per_model])  # models x programs
    rng = np.random.default_rng(args.seed)
    draws = rng.integers(0, len(common), size=(args.resamples, len(common)))
    means = x[:, draws].mean(axis=2)  # models x resamples
    side = "held-out" if args.split == "test" else "validation"
    print(f"{len(common)} {side} programs, {args.resamples} resamples")
    print(f"{'model':44} {'Spearman':>8} {'95% interval':>16} {'- first':>8} {'95% interval':>18}")
    for k, spec in enumerate(args.models):
        lo, hi = np.percentile(means[k], [2.5, 97.5])
        line = f"{spec:44} {x[k].mean():8.4f} [{lo:.3f}, {hi:.3f}]"
        if k:
            d = means[k] - means[0]
            dlo, dhi = np.percentile(d, [2.5, 97.5])
            line += f" {x[k].mean() - x[0].mean():+8.4f} [{dlo:+.3f}, {dhi:+.3f}]"
        print(line, flush=True)


if __name__ == "__main__":
    main()
