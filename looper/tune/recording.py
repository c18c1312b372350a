"""The records of a run's answers (`looper optimize --record`): one per kernel and set of sizes."""
from __future__ import annotations

from .records import Machine, Record, looper_version, now, program_key
from .versions import SizeSpec, Versions


def answer_records(answer, spec: SizeSpec, machine: Machine) -> list[Record]:
    """A record per kernel of `answer` (a `Kernel`, an `OptimizedFile` or `Versions`); `spec`:
    how the program was parsed (the `Versions` know their own)."""
    if isinstance(answer, Versions):
        return [r for a, s in zip(answer.answers, answer.specs) for r in answer_records(a, s, machine)]
    if hasattr(answer, "cfile"):
        return [kernel_record(k, scop.size_vars, spec, machine) for k, scop in zip(answer.kernels, answer.cfile.scops)]
    return [kernel_record(answer, None, spec, machine)]


def kernel_record(kernel, size_vars: dict | None, spec: SizeSpec, machine: Machine) -> Record:
    """The record of one kernel's written answer (`api.Kernel`): after verification, so it is the
    sequence the user got (the original when every candidate failed)."""
    return Record(program_key(kernel.program, size_vars, spec.size, spec.defines), machine, kernel.evaluator,
                  tuple(kernel.schedule.to_json()), kernel.sequence, kernel.predicted, kernel.measured,
                  round(kernel.result.seconds, 3), now(), looper_version(), rewritten=kernel.schedule.rewritten)
