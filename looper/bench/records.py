"""The bench and tuning records: it replays recorded answers instead of searching, and records
the answers it times.

- `--records FILE` (and `--baseline F` when the baseline holds records): each kernel's best
  record for its size and this machine (`tune.match`) is replayed, checked by isl and verified
  as a searched answer is (`tune.apply`), then timed like one.  Every (kernel, size) must have
  one: the run stops before it starts when some lack it, and on a record that no longer
  applies, rather than search in its place.  A regression run then checks the code looper
  writes for a known answer, not the luck of a search.
- `--record FILE`: each kernel's answer is appended as a record, its measured speedup the one
  the bench timed over the original (gcc's build of looper's scop C in the scop mode, looper's
  `original` in the native mode); a baseline (`--save-baseline`) embeds the same records.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable

from ..lang.parse import parse_file
from ..runtime.compile import OPT_FLAGS
from ..tune.match import NoRecord, best_record, matching
from ..tune.records import (
    Machine, Record, append_records, looper_version, now, program_key, read_records, record_from, this_machine,
)
from ..transforms.schedule import REWRITTEN
from .polybench import Answer, BenchConfig, kernel_file
from .results import KernelResult


def kernel_key(name: str, size: str, mode: str, cfg: BenchConfig):
    """What a record of the kernel is keyed on in one input mode: looper's Python program in the
    scop mode, the scop of PolyBench's own C file in the native mode."""
    if mode == "native":
        from ..api import load_programs
        from .native import PolyBenchC
        tree = PolyBenchC.find(cfg.polybench_c)
        scop = load_programs(str(tree.kernel(name)), size, includes=[str(tree.utilities)]).scops[0]
        return program_key(scop.program, scop.size_vars, size)
    return program_key(parse_file(kernel_file(name), size), None, size)


def bench_machine(cfg: BenchConfig) -> Machine:
    """This machine as the bench runs looper's answers: gcc's flags, the run's threads and environment."""
    return this_machine(cfg.threads, "gcc", OPT_FLAGS, cfg.omp_envs[0].describe())


@dataclass(frozen=True)
class RecordedAnswers:
    """The records a bench run replays instead of searching (`BenchConfig.records`)."""

    records: tuple[Record, ...]
    source: str  # how messages name them (the file)
    any_machine: bool = False  # records made on other hardware apply too

    @classmethod
    def read(cls, path: str, any_machine: bool = False) -> RecordedAnswers:
        """The records of the file `path` (`--records`, `--variant NAME:records=`)."""
        return cls(tuple(read_records(path)), path, any_machine)

    def machine(self, cfg: BenchConfig) -> Machine | None:
        return None if self.any_machine else bench_machine(cfg)

    def check_coverage(self, cfg: BenchConfig) -> None:
        """Stop before anything runs when some (kernel, size) has no record (`NoRecord`, naming them)."""
        machine = self.machine(cfg)
        missing = [f"{k} [{s}]" for s in cfg.sizes for k in cfg.kernels for mode in cfg.inputs
                   if not matching(self.records, kernel_key(k, s, mode, cfg), machine)]
        if missing:
            where = "" if self.any_machine else " made on this machine (--any-machine takes any)"
            raise NoRecord(f"no record{where} in {self.source} for {', '.join(missing)}: time only the kernels "
                           "it has (--kernels), or record the others first (--record)")

    def native_source(self, c_file: str, size: str, includes: list[str], cfg: BenchConfig) -> tuple[str, object]:
        """PolyBench's C file with its scop's best record at `size` applied in place, as
        `looper apply RECORDS FILE.c` writes it: (the file's text, the applied kernel)."""
        from ..tune.apply import apply
        done = apply(self.records, c_file, size, includes=includes, any_machine=self.any_machine,
                     threads=cfg.threads, omp_env=cfg.omp_envs[0])
        [k] = done.kernels
        return done.source, k

    def answer(self, name: str, size: str, cfg: BenchConfig) -> Answer:
        """The kernel's best record at `size`, replayed and checked as `looper apply` does."""
        from ..lang.resize import smaller_python
        from ..search.verify import VerifyOptions
        from ..tune.apply import checked_record
        t0 = time.perf_counter()
        program = parse_file(kernel_file(name), size)
        record = best_record(self.records, program_key(program, None, size), bench_machine(cfg), self.any_machine,
                             self.source, str(kernel_file(name)))
        options = VerifyOptions(threads=cfg.threads, omp_env=cfg.omp_envs[0])
        result, _ = checked_record(program, record, options, smaller_python(program))
        return Answer(name, program, result.best, time.perf_counter() - t0, result.best.describe(), record=record)


def result_record(r: KernelResult, cfg: BenchConfig, system: str = "looper") -> Record | None:
    """The record of a looper system's answer as the bench found and timed it (None: it has none):
    of looper's Python program in the scop mode, of PolyBench's C file (its scop) in the native
    mode, with the speedup the bench measured over gcc's build of the same input."""
    x = r.systems.get(system)
    steps = x.sequence_json if x is not None and x.sequence_json is not None else \
        (r.sequence_json if system == "looper" else None)
    if steps is None:
        return None
    key = kernel_key(r.kernel, r.size, r.input, cfg)
    evaluator = (x.evaluator if x is not None and x.evaluator else r.evaluator)
    seconds = x.search_seconds if x is not None and x.search_seconds is not None else r.search_seconds
    bench = {"input": r.input, "system": system, **({"replayed": r.record} if r.record else {})}
    text = x.sequence if x and x.sequence else r.sequence
    # files from before results kept the flag say so by the text alone
    rewritten = (x is not None and x.rewritten) or (not steps and text == REWRITTEN)
    return Record(key, bench_machine(cfg), evaluator, tuple(steps), text, None, r.speedup(system, "gcc"),
                  round(seconds, 3), now(), looper_version(), {"bench": bench}, rewritten=rewritten)


def baseline_records(baseline: dict, path: str) -> list[Record]:
    """The records a baseline embeds (`suite.baseline_json`; none in an older baseline)."""
    entries = baseline.get("kernels", {})
    return [record_from(v["record"], path, key) for key, v in entries.items()
            if isinstance(v, dict) and v.get("record")]


def replayed(records_in: str | None, baseline: dict | None, baseline_path: str | None, any_machine: bool,
             log: Callable[[str], None] = lambda s: None) -> RecordedAnswers | None:
    """The records a run replays: `--records`, else the baseline's own; None: it searches."""
    if records_in:
        return RecordedAnswers.read(records_in, any_machine)
    if baseline is not None and baseline_path:
        found = baseline_records(baseline, baseline_path)
        if found:
            log(f"replaying the {len(found)} answers recorded in the baseline {baseline_path} (no search)")
            return RecordedAnswers(tuple(found), baseline_path, any_machine)
        log(f"the baseline {baseline_path} holds no records (an older one): searching; --save-baseline writes them")
    return None


class Recorder:
    """`--record FILE`: one record per (kernel, size) the run itself produced (not those a resumed
    run keeps from its file), from the first input mode's result."""

    def __init__(self, path: str | None, kept: Iterable[tuple[str, str, str]], cfg: BenchConfig):
        self.path, self.cfg = path, cfg
        self.kept = set(kept)  # the results a resumed run keeps (`suite.reusable`)

    def add(self, result: KernelResult) -> None:
        if not self.path or result.key in self.kept or result.input != self.cfg.inputs[0]:
            return
        recs = [result_record(result, self.cfg, s) for s in self.cfg.searches()]
        recs = [r for r in recs if r is not None]
        if recs:
            append_records(self.path, recs)
