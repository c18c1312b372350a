"""Applying tuning records: an answer found once, written again without a search.

`apply(records, program)` takes, for each kernel of the program (a Python program, or each scop
of a C file), the best record for it at its sizes on this machine (`tune.match`), and then does
to the recorded sequence what is done to a search's answer before it is written:

1. it is replayed on the program as parsed now (`Schedule.from_json`) and isl checks every step
   again (`poly.legality.check_schedule`): a step isl now refuses is a `StaleRecord` naming it;
2. it goes through the checks of every written answer (`answer_checks`: `search.verify`, the
   output comparison at a small size with the user's compiler, and the model's speed guard);
   with no alternative to fall back on, a recorded answer that fails is an error, never the
   original or a search in its place.

The result is what `looper.optimize` returns (`Kernel`, `OptimizedFile`; `tune.versions.Versions`
for several sizes), so it is written exactly as an optimized answer is.  Without a size, the
program is applied at every set of sizes the file holds records for (one version each).
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..api import Kernel, OptimizedFile, _resized, c_defines, load_programs
from ..errors import LooperError, LooperUsageError
from .match import StaleRecord, best_record
from .records import Machine, Record, program_key, read_records, this_machine
from .versions import SizeSpec, Versions, with_defines


@dataclass
class AppliedKernel(Kernel):
    """A kernel whose answer came from a record (`record`), not from a search."""

    record: Record | None = None

    def summary_lines(self) -> list[str]:
        r = self.record
        lines = [f"{self.program.name} [{self.program.size_label}]: {self.sequence}"]
        if r is not None:
            when = f" on {r.date}" if r.date else ""
            lines.append(f"  applied the record at {r.origin or '(given)'}: found by the {r.evaluator} evaluator "
                         f"on {r.machine.describe()}{when}")
            if r.measured is not None:
                lines.append(f"  recorded speedup over the original: {r.measured:.2f}x measured"
                             + (f" (predicted {r.predicted:.2f}x)" if r.predicted is not None else ""))
            elif r.predicted is not None:
                lines.append(f"  recorded speedup over the original: {r.predicted:.2f}x predicted")
        if self.check is not None:
            lines += self.check.lines()
        return lines

    def to_json(self) -> dict:
        out = super().to_json()
        if self.record is not None:
            out["record"] = {"origin": self.record.origin, **self.record.to_json()}
        return out


def load_records(records: str | os.PathLike | Iterable[Record]) -> tuple[list[Record], str]:
    """The records and how messages name them (the file, or "the records given")."""
    if isinstance(records, (str, os.PathLike)):
        return read_records(records), str(records)
    return list(records), "the records given"


def apply(records, program: str | os.PathLike, size: str | None = None, *,
          sizes: Sequence[str | SizeSpec] | None = None,
          defines=None, includes: Iterable[str] = (), any_machine: bool = False, threads: int | None = None,
          omp_env=None, cc: str = "gcc", cflags: str | Iterable[str] | None = None, verify: bool = True,
          speed_guard: bool = True):
    """Write `program` with the recorded answers instead of searching (see the module docstring).

    `records`: a JSON Lines file or `Record`s.  `size`/`defines`/`includes` as for `optimize`;
    `sizes`: several datasets (or `SizeSpec`s), one version each; neither: every set the records hold for
    the program.  `any_machine`: records from other hardware apply too.  The checks take
    `threads`, `omp_env`, `cc`, `cflags`, `verify`, `speed_guard` as `optimize` does."""
    from ..runtime.ompenv import OmpEnv
    recs, source = load_records(records)
    if sizes is not None and size is not None:
        raise LooperUsageError("give --size or --sizes, not both")
    from ..runtime.verify import Toolchain
    from ..target import Target, compiler_id
    from .options import TuneOptions
    from .pipeline import verify_options
    env = omp_env if isinstance(omp_env, OmpEnv) else OmpEnv.parse(omp_env or "default")
    toolchain = Toolchain.parse(cc, cflags)
    target = Target.detect(threads, toolchain.cc, toolchain.cflags)
    if verify or speed_guard:
        compiler_id(toolchain.cc)  # a LooperError naming it when it is not installed
    checking = verify_options(TuneOptions(omp_env=env, verify=verify, speed_guard=speed_guard), target)
    machine = this_machine(threads, checking.toolchain.cc, checking.toolchain.cflags, env.describe())
    common = c_defines(defines)
    if sizes is not None:
        specs = [with_defines(s, common) for s in sizes]
    elif size is not None or common:
        specs = [SizeSpec(size.upper() if size else None, common)]
    else:
        specs = recorded_sizes(recs, program, includes, machine, any_machine)
    answers = [_apply_at(recs, source, program, spec, includes, machine, any_machine, checking, target)
               for spec in specs]
    return answers[0] if len(answers) == 1 else Versions(answers, specs)


def recorded_sizes(records: Sequence[Record], program, includes: Iterable[str], machine: Machine,
                   any_machine: bool) -> list[SizeSpec]:
    """Every set of sizes the records hold for the program's kernels (parsed at its default
    sizes to find them), smallest first; the default alone when they hold none (whose error
    then says why).  Two ways of parsing that give the same sizes (LARGE, and a default that is
    LARGE) count once."""
    loaded = load_programs(program, None, None, includes)
    fingerprints = {program_key(p, sv).fingerprint for p, sv in _targets(loaded)}
    held: dict[SizeSpec, set] = {}
    for r in records:
        if r.program.fingerprint in fingerprints and (any_machine or r.machine.same_hardware(machine)):
            held.setdefault(SizeSpec(r.program.size, r.program.defines), set()).add(
                (r.program.fingerprint, r.program.sizes))
    distinct: dict[frozenset, SizeSpec] = {}
    for spec, keys in held.items():
        distinct.setdefault(frozenset(keys), spec)
    if not distinct:
        return [SizeSpec()]
    return [spec for keys, spec in sorted(distinct.items(), key=lambda kv: (_volume(kv[0]), kv[1].label))]


def _volume(keys: frozenset) -> int:
    """How large a set of sizes is, to order versions (the product of every kernel's sizes)."""
    return sum(math.prod(v for _, v in sizes) for _, sizes in keys)


def _targets(loaded) -> list[tuple[object, dict | None]]:
    """(program, its size variables) per kernel: a Python program's own sizes (None), a scop's."""
    scops = getattr(loaded, "scops", None)
    return [(loaded, None)] if scops is None else [(s.program, s.size_vars) for s in scops]


def _apply_at(records: Sequence[Record], source: str, program, spec: SizeSpec, includes: Iterable[str],
              machine: Machine, any_machine: bool, checking, target):
    """The program at one set of sizes with its best records applied (all matched before any
    replay or build: a missing record stops the run before anything is built)."""
    loaded = load_programs(program, spec.size, spec.defines, includes)
    targets = _targets(loaded)
    chosen = [best_record(records, program_key(p, sv, spec.size, spec.defines), machine, any_machine, source,
                          loaded.path) for p, sv in targets]
    resized = _resized(loaded, checking.verify)
    kernels = [applied_kernel(p, rec, checking, resized, k, target)
               for k, ((p, _), rec) in enumerate(zip(targets, chosen))]
    return kernels[0] if not hasattr(loaded, "scops") else OptimizedFile(loaded, kernels)


def replayed(program, record: Record, deps):
    """The record's sequence on `program`, every step legal there (isl), or a `StaleRecord`."""
    from ..poly.legality import check_schedule
    from ..transforms.schedule import Schedule
    try:
        schedule = Schedule.from_json(program, list(record.sequence))
        if record.rewritten and not schedule.steps:
            schedule = Schedule.rewrite(program)
        why = check_schedule(deps, schedule)
    except (ValueError, KeyError, IndexError, TypeError) as e:
        why = f"it does not replay ({e})"
    if why is not None:
        raise StaleRecord(f"the record for {program.name} at {record.program.size_text} no longer applies: "
                          f"{why} (isl refuses it on the program as it is now)", *_place(record))
    return schedule


def applied_kernel(program, record: Record, checking, resized, index: int, target) -> AppliedKernel:
    """One kernel with `record`'s answer, replayed and checked (see the module docstring)."""
    from .options import Evaluator
    from .pipeline import Answer
    result, check = checked_record(program, record, checking, resized, index)
    return AppliedKernel(Answer(program, result, Evaluator.parse(record.evaluator), target, check=check),
                         record=record)


def checked_record(program, record: Record, checking, resized, index: int = 0):
    """`record`'s answer on `program`: replayed, checked by isl, then through the checks of every
    written answer (`checking`: `search.verify.VerifyOptions`; `resized`, `index`: the program at
    the verification size).  (search result, `AnswerCheck`), or an error saying why not."""
    from ..poly.deps import compute_dependences
    from ..runtime.status import Status
    from ..search.scoring import Score
    deps = compute_dependences(program)
    schedule = replayed(program, record, deps)
    measured = record.measured is not None
    score = Score(record.speedup if record.speedup is not None else 1.0, Status.OK if measured else Status.PREDICTED,
                  "record", predicted=record.predicted)
    result, check = answer_checks(program, schedule, score, record.evaluator, deps, resized, index, checking)
    if schedule.written and not result.best.written:
        why = check.rejected[-1].why if check.rejected else "it did not pass the checks"
        raise LooperError(f"the recorded answer for {program.name} at {record.program.size_text} is not "
                          f"written: {why}", *_place(record))
    return result, check


def answer_checks(program, schedule, score, evaluator: str, deps, resized, index: int, options):
    """The checks every answer goes through before it is written (`search.verify.check_answer`),
    on one answer with nothing to fall back on: (the answer or the original, the report)."""
    from ..search.scoring import Explored, Score, SearchResult
    from ..search.policy import SearchPolicy
    from ..search.verify import check_answer
    from ..transforms.schedule import Schedule
    root = Explored(Schedule(program), "original", "root", Score(1.0, "ok", "original", predicted=1.0))
    result = SearchResult(schedule, score, [root], 0.0, 0.0, [])
    return check_answer(program, result, evaluator, SearchPolicy(), deps, resized, index,
                        dataclasses.replace(options, max_alternatives=0, rewrite=False))


def _place(record: Record) -> tuple[str | None, int | None]:
    """(file, line) of a record read from a file, for `LooperError`."""
    file, _, line = record.origin.rpartition(":")
    return (file, int(line)) if file and line.isdigit() else (record.origin or None, None)
