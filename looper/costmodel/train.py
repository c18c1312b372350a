"""Training the cost model on collected data: examples, split by program, loss, metrics.

Targets are measured speedups over the original (baseline median / candidate median).  Noisy
points (no two repeats within a few percent: `noise`) and failed candidates are dropped.  The split is by
program, so no program is on both sides.

The network scores a schedule; the predicted speedup of a candidate is its score relative to the
score of its program's untransformed schedule (every program's examples include it, labelled
1.0), exactly as the search uses the model.  A per-program offset, which a network cannot know
for a program it has never seen, then cancels instead of counting as error.  The loss is a
regression term on those relative predictions (log error or MAPE) plus a pairwise ranking term
within each program (the search only needs the order); metrics are MAPE, per-program Spearman
correlation and nDCG, all of the relative predictions.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import random
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from ..datagen.schema import target_of, timing_of
from ..lang.parse import parse_source
from ..transforms.schedule import Schedule
from .features import ProgramFeatures, ProgramInfo, featurize
from .model import Batch, CostModel, Ensemble, collate
from ..target.host import cores


@dataclass
class Example:
    program: str
    features: ProgramFeatures
    speedup: float
    original: bool = False  # the untransformed schedule: the anchor of its program's predictions
    part: str = ""  # the dataset directory it came from (synth-v2, synth-v2-large, ...)


@dataclass
class Dataset:
    examples: list[Example]
    points: int
    programs: int
    digest: str
    meta: dict = field(default_factory=dict)


def parquet_files(paths: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out += sorted(p.glob("points-*.parquet")) if p.is_dir() else [p]
    return out


def search_space(files: list[Path]) -> dict:
    """The deepest search the data's candidates came from (its datagen config.json files): the
    model-guided search stays inside it, since the model never saw longer affine sequences; and
    `grown` when some of the data searched the grown space (register tiles, packs, time tiles,
    vector loops, ...: `looper datagen --grown`), which a model-guided search then searches too."""
    space: dict = {}
    for cfg in {f.parent / "config.json" for f in files}:
        if cfg.exists():
            c = json.loads(cfg.read_text())
            for k in ("max_affine", "max_fusion"):
                if k in c:
                    space[k] = max(space.get(k, 0), int(c[k]))
            if c.get("grown"):
                space["grown"] = True
    return space


def noise(times: list[float]) -> float:
    """How far apart the two closest repeats are, relative to the median.  The median of three
    survives one disturbed run, which (max - min) / median does not: on this machine 40% of the
    points had a spread above 20%, but 76% had two repeats within 5% of each other."""
    if len(times) < 2:
        return 0.0
    ts = sorted(times)
    return min(b - a for a, b in zip(ts, ts[1:])) / statistics.median(ts)


def usable(r: dict, max_noise: float = 0.05) -> bool:
    """Whether a datagen row is a training label: legal, measured, and not noisy.  A "slow"
    point's only time is its first run; before harness 2 that run paid the page faults of
    never-written output arrays (2-3.5x slower than later runs), so those labels are dropped;
    "ok" points never count their first run and stay."""
    return (r["legal"] and r["status"] in ("ok", "slow") and r["speedup"] == r["speedup"]
            and r["speedup"] > 0 and (r["status"] == "slow" or noise(r["times"]) <= max_noise)
            and not (r["status"] == "slow" and (r.get("harness") or 1) < 2))


def load_examples(paths: Iterable[str | Path], max_noise: float = 0.05,
                  progress: Callable[[int, int], None] | None = None, environment: str | None = None) -> Dataset:
    """The usable points of the parts under `paths`, featurized.  Points timed under different
    OpenMP environments or protocols are not one model's labels: a mix is refused unless
    `environment` (`timing_of`'s form, e.g. "default; as-run") picks one."""
    files = parquet_files(paths)
    if not files:
        raise FileNotFoundError("no points-*.parquet files in the given paths")
    digest = hashlib.sha256()
    tables = []
    for f in files:
        t = pq.read_table(f)
        tables.append(t.append_column("part", pa.array([f.parent.name] * t.num_rows, pa.string())))
        digest.update(f.read_bytes())
    rows = pa.concat_tables(tables, promote_options="default").to_pylist()
    keep = [r for r in rows if usable(r, max_noise)]
    timings = sorted({timing_of(r.get("environment")) for r in keep})
    if environment is not None:
        keep = [r for r in keep if timing_of(r.get("environment")) == environment]
        if not keep:
            raise ValueError(f"no usable points timed under '{environment}' (the data has: {'; '.join(timings) or 'none'})")
    elif len(timings) > 1:
        raise ValueError("points timed under several environments: " + " | ".join(timings)
                         + "; choose one (--environment)")
    programs: dict[tuple[str, str], tuple] = {}
    examples: list[Example] = []
    for k, r in enumerate(keep):
        key = (r["program"], r["sizes"])
        if key not in programs:
            program = parse_source(r["source"], f"{r['program']}.py", r["size"])
            # the cost terms of its candidates on the machine they were timed on
            programs[key] = (program, ProgramInfo(program, target_of(r.get("machine"), int(r["threads"] or 2))))
            # the anchor: speedup 1 by definition (the measured original's noise is in the others')
            examples.append(Example(r["program"], featurize(Schedule(program), programs[key][1]), 1.0, True,
                                    r["part"]))
        program, info = programs[key]
        steps = json.loads(r["sequence"])
        if not steps:
            continue
        sched = Schedule.from_json(program, steps)
        examples.append(Example(r["program"], featurize(sched, info), float(r["speedup"]), part=r["part"]))
        if progress and k % 500 == 0:
            progress(k, len(keep))
    meta = {
        "cpu": sorted({r["cpu"] for r in rows}), "compiler": sorted({r["compiler"] for r in rows}),
        "flags": sorted({r["flags"] for r in rows}), "threads": sorted({r["threads"] for r in rows}),
        "rows": len(rows), "kept": len(keep), "search_space": search_space(files),
        "environment": timing_of(keep[0].get("environment")) if keep else None,
    }
    return Dataset(examples, len(keep), len({e.program for e in examples}), digest.hexdigest()[:16], meta)


def split_by_program(examples: list[Example], val: float = 0.1, test: float = 0.1
                     ) -> tuple[list[Example], list[Example], list[Example]]:
    """Deterministic split on a hash of the program name: a program lands on one side only."""
    tr, va, te = [], [], []
    for e in examples:
        {"train": tr, "validation": va, "test": te}[side_of(e.program, val, test)].append(e)
    return tr, va, te


def side_of(program: str, val: float = 0.1, test: float = 0.1) -> str:
    """Which side of split_by_program a program is on: "train", "validation" or "test"."""
    b = int(hashlib.sha256(program.encode()).hexdigest()[:8], 16) / 2**32
    return "test" if b < test else "validation" if b < test + val else "train"


# -- metrics ------------------------------------------------------------------------------------------

def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x))
    # average ranks of ties
    vals = x[order]
    start = 0
    for k in range(1, len(x) + 1):
        if k == len(x) or vals[k] != vals[start]:
            ranks[order[start:k]] = (start + k - 1) / 2
            start = k
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2:
        return float("nan")
    ra, rb = _ranks(np.asarray(a, float)), _ranks(np.asarray(b, float))
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def ndcg(pred: np.ndarray, true: np.ndarray, k: int | None = None) -> float:
    """nDCG of the order `pred` gives, with the true speedups as relevance."""
    k = k or len(true)
    disc = 1 / np.log2(np.arange(2, k + 2))
    dcg = float((np.asarray(true)[np.argsort(-np.asarray(pred), kind="mergesort")][:k] * disc).sum())
    idcg = float((np.sort(true)[::-1][:k] * disc).sum())
    return dcg / idcg if idcg > 0 else float("nan")


def relative_predictions(model: CostModel, examples: list[Example]) -> np.ndarray:
    """Predicted speedups: each example's prediction over its program's original's (the anchor).
    A program without an anchor among `examples` keeps the raw predictions."""
    pred = model.predict([e.features for e in examples], threads=None)
    anchor = {e.program: pred[k] for k, e in enumerate(examples) if e.original}
    return np.array([p / anchor.get(e.program, 1.0) for p, e in zip(pred, examples)])


def candidate_predictions(model: CostModel, examples: list[Example]) -> tuple[np.ndarray, list[Example]]:
    """Relative predictions of the candidates and the candidates themselves: the anchors are
    predicted (they are the denominators) but left out, their speedup being 1 by construction."""
    if not examples:
        return np.zeros(0), []
    rel = relative_predictions(model, examples)
    keep = [k for k, e in enumerate(examples) if not e.original]
    return rel[keep], [examples[k] for k in keep]


def evaluate(model: CostModel, examples: list[Example]) -> dict:
    """Metrics over the candidates (anchors excluded: their speedup is 1 by construction)."""
    pred, examples = candidate_predictions(model, examples)
    if not examples:
        return {}
    true = np.array([e.speedup for e in examples])
    scores = program_scores(pred, true, [e.program for e in examples])
    sp = [s for s, _ in scores.values() if s == s]
    nd = [n for _, n in scores.values()]
    const = float(np.exp(np.median(np.log(true))))
    ape = np.abs(pred - true) / true
    log_err = np.abs(np.log(pred) - np.log(true))
    return {
        "log_error": float(np.mean(log_err)),  # the regression term of the default loss
        "log_error_constant": float(np.mean(np.abs(np.log(const) - np.log(true)))),
        "mape": float(np.mean(ape)),
        "median_ape": float(np.median(ape)),  # MAPE is dominated by the few 100x-slower candidates
        "mape_constant": float(np.mean(np.abs(const - true) / true)),
        "spearman": float(np.mean(sp)) if sp else float("nan"),
        "ndcg": float(np.mean(nd)) if nd else float("nan"),
        "points": len(examples), "programs": len({e.program for e in examples}),
    }


def program_scores(pred: np.ndarray, true: np.ndarray, programs: list[str]) -> dict[str, tuple[float, float]]:
    """(Spearman, nDCG) of each program with three candidates or more: the search ranks one
    program's candidates at a time, so ranking is scored per program and then averaged (Spearman
    is NaN where either side has no spread)."""
    by_prog: dict[str, list[int]] = {}
    for k, p in enumerate(programs):
        by_prog.setdefault(p, []).append(k)
    return {p: (spearman(pred[idx], true[idx]), ndcg(pred[idx], true[idx]))
            for p, idx in by_prog.items() if len(idx) >= 3}


def evaluate_by_part(model: CostModel, examples: list[Example]) -> dict[str, dict]:
    """evaluate() on each dataset directory's examples: the parts differ in program size, and a
    model can rank one well and another badly."""
    parts = sorted({e.part for e in examples})
    return {part: evaluate(model, [e for e in examples if e.part == part]) for part in parts}


def validation_loss(model: CostModel, examples: list[Example], cfg: "TrainConfig") -> tuple[float, float]:
    """The training loss on `examples`: the model's, and that of the best constant predictor
    (the median speedup: no ranking at all, so its ranking term is log 2 per pair)."""
    keep = [k for k, e in enumerate(examples) if not e.original]
    rel = relative_predictions(model, examples)[keep]
    examples = [examples[k] for k in keep]
    names = {n: k for k, n in enumerate(dict.fromkeys(e.program for e in examples))}
    groups = torch.tensor([names[e.program] for e in examples])
    y = torch.tensor([e.speedup for e in examples], dtype=torch.float64)
    pred = torch.log(torch.from_numpy(rel).double())
    const = torch.full_like(y, float(torch.log(y).median()))
    return (float(loss_fn(pred, y, groups, cfg.rank_weight, cfg.loss)),
            float(loss_fn(const, y, groups, cfg.rank_weight, cfg.loss)))


# -- training -----------------------------------------------------------------------------------------

def _batches(examples: list[Example], batch_programs: int, rng: random.Random) -> list[list[Example]]:
    """Batches of whole programs, so the ranking term compares candidates of one program."""
    by_prog: dict[str, list[Example]] = {}
    for e in examples:
        by_prog.setdefault(e.program, []).append(e)
    names = list(by_prog)
    rng.shuffle(names)
    return [[e for n in names[k:k + batch_programs] for e in by_prog[n]]
            for k in range(0, len(names), batch_programs)]


@dataclass
class _Collated:
    """A training batch collated once and reused every epoch (collation costs more than the
    forward pass: 0.18 s against 0.11 s for four programs)."""

    batch: Batch
    groups: torch.Tensor  # [n]: program of each example, 0..G-1
    anchors: torch.Tensor  # [G]: the example holding each program's original (-1: none)
    speedup: torch.Tensor
    part: str = ""  # the data directory of its (first) program

    def relative(self, scores: torch.Tensor) -> torch.Tensor:
        """Log speedups predicted from the network's scores: minus the anchor's score."""
        base = torch.where(self.anchors >= 0, scores[self.anchors.clamp_min(0)], torch.zeros_like(scores[:1]))
        return scores - base[self.groups]


def _collated_batches(examples: list[Example], batch_programs: int, rng: random.Random) -> list[_Collated]:
    out = []
    for batch in _batches(examples, batch_programs, rng):
        names = {n: k for k, n in enumerate(dict.fromkeys(e.program for e in batch))}
        anchors = [-1] * len(names)
        for k, e in enumerate(batch):
            if e.original:
                anchors[names[e.program]] = k
        out.append(_Collated(collate([e.features for e in batch]),
                             torch.tensor([names[e.program] for e in batch]), torch.tensor(anchors),
                             torch.tensor([e.speedup for e in batch], dtype=torch.float32), batch[0].part))
    return out


def loss_fn(pred_log: torch.Tensor, speedup: torch.Tensor, groups: torch.Tensor,
            rank_weight: float, kind: str = "mape") -> torch.Tensor:
    """Regression term plus a pairwise ranking term within each program.

    kind "mape": mean |s' - s| / s on the speedups themselves (LOOPer's loss).  Its minimizer is
    biased low (overestimating a 0.2x candidate by 1x costs 500%, underestimating a 5x one at most
    100%); the search compensates by scoring candidates relative to the model's prediction for
    the original program.  Once predictions collapse towards 0 its gradient (proportional to s')
    vanishes: the first model, without the head's shortcut, did exactly that (MAPE 0.9999).
    kind "log": mean |log s' - log s|, the symmetric relative error.  On 300 programs both rank
    alike (validation Spearman 0.635 mape / 0.645 log, test 0.588 / 0.567) and mape had the lower
    MAPE (test 0.35 / 0.47); with the ranking term, on 455 programs, log ranked as well without
    mape's pull towards low predictions, so log is the default (TrainConfig, `looper train`).
    The ranking term is a logistic loss on every pair of one program's candidates whose speedups
    differ by more than 5% (the measurement noise)."""
    y = torch.log(speedup)
    if kind == "mape":
        base = (torch.exp(pred_log) - speedup).abs().div(speedup).mean()
    elif kind == "log":
        base = (pred_log - y).abs().mean()
    else:
        raise ValueError(f"unknown loss {kind!r}")
    if rank_weight <= 0:
        return base
    same = groups[:, None] == groups[None, :]
    diff = y[:, None] - y[None, :]
    mask = same & (diff > 0.05)  # pairs i faster than j by more than noise
    if not mask.any():
        return base
    margin = pred_log[:, None] - pred_log[None, :]
    rank = torch.nn.functional.softplus(-margin[mask]).mean()
    return base + rank_weight * rank


@dataclass
class TrainConfig:
    epochs: int = 40
    hidden: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-5
    batch_programs: int = 1
    rank_weight: float = 1.0
    loss: str = "log"  # "mape" | "log" (see loss_fn)
    dropout: float = 0.05
    seed: int = 0
    threads: int = 2
    init: str | None = None  # weights to start from (widened to this layout and network), else random
    # data directory -> times each of its programs is a step per epoch (default 1): a part of
    # few programs (the grown space's hundred beside 2,500) weighs that much more
    part_weights: dict[str, int] = field(default_factory=dict)


def _start(cfg: TrainConfig, train_set: list[Example], member: int) -> CostModel:
    """The network a member starts from: `cfg.init`'s member (the same one again when it has
    fewer), or a new one.  Inputs are standardized by the training set's statistics, except those
    an initial model already reads (its weights were fitted to its own standardization; widened
    inputs are read by zero weights, so theirs may change)."""
    comp = np.stack([c.vector for e in train_set for c in e.features.comps])
    loop = _loop_vectors(train_set)
    terms = np.stack([e.features.terms for e in train_set])
    model = CostModel(hidden=cfg.hidden, dropout=cfg.dropout)
    model.set_normalization(comp, loop, terms)
    if cfg.init is None:
        return model
    from .store import load_model
    init, meta = load_model(cfg.init)
    if init.hidden != cfg.hidden:
        raise ValueError(f"--init {cfg.init}: hidden width {init.hidden}, not {cfg.hidden}")
    source = init.members[member % len(init.members)]
    fresh = {k: v.clone() for k, v in model.state_dict().items() if k.endswith(("_mean", "_std"))}
    model.load_state_dict(source.state_dict())
    with torch.no_grad():
        for name in ("comp", "loop", "terms"):
            mean, std = getattr(model, f"{name}_mean"), getattr(model, f"{name}_std")
            unread = (mean == 0) & (std == 1)  # never standardized: inputs the initial model did not read
            mean[unread] = fresh[f"{name}_mean"][unread]
            std[unread] = fresh[f"{name}_std"][unread]
    for m in model.modules():  # the initial model's dropout, whatever it was trained with
        if isinstance(m, torch.nn.Dropout):
            m.p = cfg.dropout
    return model


def train(train_set: list[Example], val_set: list[Example], cfg: TrainConfig,
          log: Callable[[str], None] = print, member: int = 0) -> tuple[CostModel, dict]:
    """One network (an ensemble's `member`) trained on `train_set`, the epoch that scored best on
    `val_set` kept."""
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    rng = random.Random(cfg.seed)
    model = _start(cfg, train_set, member)
    batches = _collated_batches(train_set, cfg.batch_programs, rng)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    # one step per program (not per four): the recursive model needs many small steps; with
    # 4-program batches and a cosine schedule it underfit (train Spearman 0.69 after 25 epochs,
    # 0.86 with one program per step and a one-cycle schedule on the same 364 programs)
    steps = [k for k, b in enumerate(batches) for _ in range(cfg.part_weights.get(b.part, 1))]
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=cfg.epochs * len(steps),
                                                pct_start=0.1)
    best_state, best_score, history = None, -1e9, []
    for epoch in range(cfg.epochs):
        model.train()
        t0 = time.perf_counter()
        losses = []
        for k in rng.sample(steps, len(steps)):
            b = batches[k]
            loss = loss_fn(b.relative(model(b.batch)), b.speedup, b.groups, cfg.rank_weight, cfg.loss)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
        m = evaluate(model, val_set)
        score = m.get("spearman", 0) + m.get("ndcg", 0) - 0.1 * m.get("mape", 0)
        history.append({"epoch": epoch, "loss": statistics.mean(losses), **m})
        log(f"epoch {epoch + 1:3d}/{cfg.epochs}: loss {statistics.mean(losses):.4f}  val MAPE "
            f"{m.get('mape', float('nan')):.3f} Spearman {m.get('spearman', float('nan')):.3f} "
            f"nDCG {m.get('ndcg', float('nan')):.3f}  ({time.perf_counter() - t0:.0f} s)")
        if score > best_score:
            best_score = score
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
    if best_state is not None:
        model.load_state_dict(best_state)
    return model, {"history": history}


_SHARED: tuple = ()  # the data forked ensemble workers train on (inherited, never pickled)


def _train_member(cfg: TrainConfig, member: int) -> tuple[dict, list]:
    train_set, val_set = _SHARED
    model, info = train(train_set, val_set, cfg, log=lambda s: print(f"member {member}: {s}", flush=True),
                        member=member)
    return model.state_dict(), info["history"]


def train_ensemble(train_set: list[Example], val_set: list[Example], cfg: TrainConfig, members: int = 1,
                   log: Callable[[str], None] = print) -> tuple[Ensemble, dict]:
    """`members` models from seeds cfg.seed, cfg.seed + 1, ...; with more than one, they train in
    parallel processes (one per core, cfg.threads torch threads each)."""
    if members == 1:
        model, info = train(train_set, val_set, cfg, log)
        return Ensemble([model]), {"history": [info["history"]]}
    global _SHARED
    _SHARED = (train_set, val_set)
    cfgs = [dataclasses.replace(cfg, seed=cfg.seed + k) for k in range(members)]
    workers = max(1, min(members, cores() // max(1, cfg.threads)))
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.starmap(_train_member, [(c, k) for k, c in enumerate(cfgs)])
    finally:
        _SHARED = ()
    models = []
    for state, _ in results:
        m = CostModel(hidden=cfg.hidden, dropout=cfg.dropout)
        m.load_state_dict(state)
        models.append(m)
    return Ensemble(models), {"history": [h for _, h in results]}


def _loop_vectors(examples: list[Example]) -> np.ndarray:
    out = [loop.vector for e in examples for loop in e.features.loops()]
    from .features import LOOP
    return np.stack(out) if out else np.zeros((1, LOOP.width), np.float32)


def git_revision() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=False).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


__all__ = ["Example", "Dataset", "load_examples", "split_by_program", "evaluate", "relative_predictions",
           "validation_loss", "train", "train_ensemble", "TrainConfig",
           "spearman", "ndcg", "git_revision"]
