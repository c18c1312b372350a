"""Where collection tasks run: a local process pool (default) or an existing Dask cluster.

Either way one task is one program, and results stream back to the single writer in this
process.  Timing stays exclusive per machine through a file lock (`collect.machine_lock`), so
several workers on one machine may compile at once but never time at once.
"""
from __future__ import annotations

import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from ..interrupts import raise_pending
from .collect import CollectConfig, DatasetWriter, collect_program


@dataclass
class CollectStats:
    programs: int = 0
    points: int = 0
    measured: int = 0
    wrong: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def points_per_second(self) -> float:
        return self.measured / self.seconds if self.seconds else 0.0


def _safe_collect(seed: int, cfg: CollectConfig):
    try:
        return seed, collect_program(seed, cfg), None
    except Exception:  # noqa: BLE001 - one bad program must not stop a long collection
        return seed, [], traceback.format_exc(limit=8)


def run_collection(seeds: Iterable[int], cfg: CollectConfig, workers: int = 1,
                   scheduler: str | None = None,
                   on_program: Callable[[CollectStats, int], None] | None = None) -> CollectStats:
    writer = DatasetWriter(cfg.out_dir)
    done = writer.done_seeds()
    todo = [s for s in seeds if s not in done]
    stats = CollectStats()
    start = time.perf_counter()

    def take(seed: int, rows: list[dict], err: str | None) -> None:
        if err:
            stats.errors.append(f"seed {seed}: {err.strip().splitlines()[-1]}")
            with open(Path(cfg.out_dir) / "errors.log", "a") as f:
                f.write(f"--- seed {seed}\n{err}\n")
            return
        writer.add(rows)
        stats.programs += 1
        stats.points += len(rows)
        stats.measured += sum(1 for r in rows if r["legal"] and r["status"] != "unscored")
        stats.wrong += [f"{r['program']}: {r['description']}" for r in rows if r["status"] == "wrong"]
        stats.seconds = time.perf_counter() - start
        if on_program:
            on_program(stats, len(todo))
        raise_pending()  # the program's rows are whole: keep them, then stop (looper.interrupts)

    try:
        if scheduler:
            from distributed import Client, as_completed as dask_completed
            with Client(scheduler) as client:
                futures = [client.submit(_safe_collect, s, cfg, pure=False) for s in todo]
                for fut in dask_completed(futures):
                    take(*fut.result())
        elif workers <= 1:
            for s in todo:
                take(*_safe_collect(s, cfg))
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(_safe_collect, s, cfg) for s in todo]
                for fut in as_completed(futures):
                    take(*fut.result())
    finally:
        writer.flush()
        stats.seconds = time.perf_counter() - start
    return stats
