"""Search-driven data collection: every candidate the beam search measures becomes a data point.

As in LOOPer, the samples are the search's own candidates on random synthetic programs, not random
sequences.  The dataset keeps raw facts (program source, sizes, the transformation sequence as
JSON, every measured time, the original's times, legality, machine, compiler, flags, threads,
load), never features, so features can change without measuring again.

Storage is append-only Parquet parts (`points-NNNNN.parquet`, each written to a temporary name and
renamed, so a part is either whole or absent).  Each measurement is also committed to the
dataset's SQLite memo as soon as it is taken: after `kill -9`, a restart skips programs already in
a part and replays the interrupted program's search from the memo, so nothing is lost and nothing
is measured twice.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..codegen.harness import HARNESS_VERSION
from ..lang.parse import parse_source
from ..poly.deps import compute_dependences
from ..target.isa import compiler_id
from ..target.caches import cache_levels
from ..target.host import cpu_id, load_average
from ..target.limits import load_limits
from ..runtime.measurements import MeasurementStore
from ..search.beam import beam_search
from ..search.policy import policy_for
from ..search.evaluators import ExecutionEvaluator
from ..runtime.ompenv import OmpEnv
from ..runtime.run import AS_RUN, WARM
from .schema import SCHEMA
from .synth import synth_program

PROTOCOLS = {p.name: p for p in (AS_RUN, WARM)}


@dataclass(frozen=True)
class CollectConfig:
    """Everything a worker needs to collect one program (picklable, for process pools and Dask)."""

    out_dir: str
    beam: int = 2
    max_affine: int = 2
    max_fusion: int = 2
    max_per_parent: int = 5
    explore: int = 0  # SearchPolicy.explore: exploration lanes beside the beam
    explore_model: str | None = None  # weights whose favourites the lanes follow (else a random walk)
    # ... or the default search's ranking (`search.budget.Ranking`: the shipped model for the loop
    # structure, the analytic cost terms for what it never saw): data where the default errs
    explore_ranking: bool = False
    repeats: int = 3
    threads: int = 2
    target_low: float = 3e6
    target_high: float = 3e7
    scalars: bool = False  # synth_program's mix with kernel-local scalars
    patterns: tuple[str, ...] | None = None  # only these synth_program patterns (None: all)
    scaled_products: bool = False  # synth_program's products scaled by a coefficient (alpha * A * B)
    omp_env: str = "default"  # runtime.ompenv: what timings add to the environment (parts so far: tuned)
    # runtime.run.Protocol: "as-run" (fresh processes, means) or "warm" (one process, medians: how
    # every committed part was timed, so a part meant to train beside them is timed warm too)
    protocol: str = "as-run"
    # the grown search space (register tiles, packs, time tiles, vector loops, ...): what a model
    # must see to rank it; the committed parts and the shipped model cover the first one only
    grown: bool = False
    lock_path: str = os.path.join(tempfile.gettempdir(), "looper-timing.lock")
    memo_name: str = "memo.sqlite"


@contextlib.contextmanager
def machine_lock(path: str):
    """Timing runs one at a time on a machine, whichever process (or Dask worker) asks."""
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def collect_program(seed: int, cfg: CollectConfig) -> list[dict]:
    """Search one synthetic program with the measuring evaluator; one row per explored candidate."""
    source = synth_program(seed, target=(cfg.target_low, cfg.target_high), scalars=cfg.scalars,
                           patterns=cfg.patterns, scaled_products=cfg.scaled_products)
    name = f"synth{seed}"
    program = parse_source(source, f"{name}.py", "DEFAULT")
    deps = compute_dependences(program)
    memo_dir = Path(cfg.out_dir)
    memo_dir.mkdir(parents=True, exist_ok=True)
    store = MeasurementStore(memo_dir / cfg.memo_name)
    ev = ExecutionEvaluator(program, repeats=cfg.repeats, threads=cfg.threads, store=store,
                            omp_env=OmpEnv.parse(cfg.omp_env), protocol=PROTOCOLS[cfg.protocol],
                            timing_lock=lambda: machine_lock(cfg.lock_path))
    guide = _guide(program, cfg)
    try:
        result = beam_search(program, deps, ev, policy_for(
            "measure", beam=cfg.beam, max_affine=cfg.max_affine, max_fusion=cfg.max_fusion,
            max_per_parent=cfg.max_per_parent, explore=cfg.explore, explore_guide=guide, seed=seed,
            grown=cfg.grown, stratified=cfg.grown))
    finally:
        ev.close()
        store.close()
    common = dict(program=name, seed=seed, source=source, size=program.size_label,
                  sizes=json.dumps(program.sizes), baseline_times=list(ev.baseline_times),
                  cpu=cpu_id(), machine=machine_facts(cfg.threads), compiler=compiler_id(), flags=" ".join(ev.build_flags),
                  threads=cfg.threads, harness=HARNESS_VERSION, environment=ev.environment)
    rows = []
    for e in result.explored:
        sc = e.score
        times = list(sc.times) if sc else []
        spread = (max(times) - min(times)) / statistics.median(times) if len(times) > 1 else 0.0
        rows.append(dict(
            common, sequence=json.dumps(e.schedule.to_json()), description=e.description, level=e.level,
            legal=e.rejected is None, reason=e.rejected or (sc.detail if sc else ""),
            status="illegal" if e.rejected else (sc.status.value if sc else "unscored"), times=times,
            speedup=sc.speedup if sc and sc.speedup is not None else float("nan"), spread=spread,
            loadavg=load_average(), created=time.time()))
    return rows


def _guide(program, cfg: CollectConfig):
    """What the exploration lanes follow: a cost model's favourites, the default search's ranking,
    or nothing (a random walk)."""
    if not cfg.explore or not (cfg.explore_model or cfg.explore_ranking):
        return None
    from ..costmodel.inference import load_inference_model
    from ..search.budget import Ranking
    from ..search.evaluators import ModelEvaluator
    from ..target import Target
    target = Target.detect(cfg.threads)
    # one process: the pool's other workers may be timing candidates on the other cores
    model = ModelEvaluator(program, *load_inference_model(cfg.explore_model), target=target, jobs=1)
    return Ranking(program, target, model) if cfg.explore_ranking else model


def machine_facts(threads: int) -> str:
    """The machine a point was timed on, precisely (JSON): machines sold under one name differ
    2x in peak.  Its caches, and the limits `looper machine` measured for `threads` threads on it
    (`looper datagen` measures them first when none are kept; null where a worker has none)."""
    limits = load_limits(threads, compiler_id("gcc"))
    return json.dumps({"cpu": cpu_id(), "caches": [c.describe() for c in cache_levels()],
                       "limits": limits.to_json() if limits is not None else None}, sort_keys=True)


class DatasetWriter:
    """Append-only Parquet parts in a directory; knows which programs are already done."""

    def __init__(self, out_dir: str | Path, programs_per_part: int = 5):
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.per_part = programs_per_part
        self.pending: list[dict] = []
        self.pending_programs = 0
        self._remove_stale_parts()

    def _remove_stale_parts(self) -> None:
        """Temporary parts of writers killed before their rename (kill -9 in `flush`): their
        programs are not done and will be collected again, so the files are only litter."""
        for tmp in self.dir.glob(".points-*.tmp"):
            pid = tmp.name.split(".")[-2]
            if pid.isdigit() and not _alive(int(pid)):
                tmp.unlink(missing_ok=True)

    def parts(self) -> list[Path]:
        return sorted(self.dir.glob("points-*.parquet"))

    def done_seeds(self) -> set[int]:
        done: set[int] = set()
        for p in self.parts():
            done.update(pq.read_table(p, columns=["seed"]).column("seed").to_pylist())
        return done

    def n_points(self) -> int:
        return sum(pq.ParquetFile(p).metadata.num_rows for p in self.parts())

    def add(self, rows: list[dict]) -> None:
        self.pending.extend(rows)
        self.pending_programs += 1
        if self.pending_programs >= self.per_part:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        existing = self.parts()
        n = int(existing[-1].stem.split("-")[1]) + 1 if existing else 0
        path = self.dir / f"points-{n:05d}.parquet"
        tmp = self.dir / f".points-{n:05d}.{os.getpid()}.tmp"
        pq.write_table(pa.Table.from_pylist(self.pending, schema=SCHEMA), tmp, compression="zstd")
        os.replace(tmp, path)
        self.pending = []
        self.pending_programs = 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def config_json(cfg: CollectConfig) -> str:
    return json.dumps(asdict(cfg), indent=1)
