"""Which record answers a program: the best one for its kernel, at its sizes, on this machine.

A record matches a program when its fingerprint is the program's (`records.fingerprint`), its
sizes are the program's, and it was made on the same hardware (CPU model and caches) unless any
machine will do.  Of the matching records the best is the one with the highest measured speedup;
records with only a prediction come after every measured one (`Record.rank`).

When none matches, the error says why, in this order: records for the kernel at these sizes
exist but from other hardware (`--any-machine` applies them); the kernel has records, at other
sizes (they are listed); records of a program of the same name exist for another kernel text
(the program was edited: the first line that differs is shown); else nothing in the file is for
this program (what it holds is listed).  Every one is a `LooperError` (exit status 2).
"""
from __future__ import annotations

import difflib
from typing import Sequence

from ..errors import LooperError
from .records import Machine, ProgramKey, Record


class NoRecord(LooperError):
    """No record in the file answers this program at these sizes."""


class StaleRecord(LooperError):
    """The program's records were made for another version of it, or no longer apply to it."""


class OtherMachine(LooperError):
    """The program's records were made on other hardware."""


def matching(records: Sequence[Record], key: ProgramKey, machine: Machine | None) -> list[Record]:
    """The records for `key`'s kernel at its sizes (on `machine`'s hardware unless None), best first."""
    found = [r for r in records if r.program.fingerprint == key.fingerprint and r.program.sizes == key.sizes
             and (machine is None or r.machine.same_hardware(machine))]
    return sorted(found, key=Record.rank, reverse=True)


def best_record(records: Sequence[Record], key: ProgramKey, machine: Machine, any_machine: bool = False,
                source: str = "", path: str | None = None) -> Record:
    """The record to apply to the program `key` (see the module docstring); `source` names the
    records file and `path` the program's file in messages."""
    found = matching(records, key, None if any_machine else machine)
    if found:
        return found[0]
    raise why_none(records, key, machine, source, path)


def why_none(records: Sequence[Record], key: ProgramKey, machine: Machine, source: str,
             path: str | None) -> LooperError:
    """The error that says why no record matches `key` (the module docstring's order)."""
    where = f"{key.name} at {key.size_text}"
    elsewhere = matching(records, key, None)
    if elsewhere:
        made_on = sorted({r.machine.cpu for r in elsewhere})
        return OtherMachine(f"the records for {where} in {source} were made on {'; '.join(made_on)}, not on "
                            f"this machine ({machine.cpu}): pass --any-machine to apply them here", path)
    same_kernel = [r.program for r in records if r.program.fingerprint == key.fingerprint]
    if same_kernel:
        return NoRecord(f"no record for {where} in {source}; it holds {key.name} at "
                        f"{_listed(sorted({p.size_text for p in same_kernel}))}", path)
    same_name = [r for r in records if r.program.name == key.name]
    if same_name:
        diff = first_difference(same_name[-1].program.kernel, key.kernel)
        return StaleRecord(f"the records for {key.name} in {source} were made for another version of its "
                           f"kernel (edited since, or sized by macros in the region): {diff}", path)
    held = sorted({f"{r.program.name} [{r.program.fingerprint[:8]}] at {r.program.size_text}" for r in records})
    what = f"it holds {_listed(held)}" if held else "it holds no records"
    return NoRecord(f"no record for {key.name} (kernel fingerprint {key.fingerprint[:8]}) in {source}; {what}",
                    path)


def first_difference(recorded: str, now: str) -> str:
    """Where the kernel text a record was made for and the program's first differ."""
    old, new = recorded.splitlines(), now.splitlines()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        was = " / ".join(x.strip() for x in old[i1:i2]) or "(nothing)"
        is_ = " / ".join(x.strip() for x in new[j1:j2]) or "(nothing)"
        return f"recorded `{was}`, now `{is_}`"
    return "the kernels read the same but their arrays' types differ"


def _listed(items: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
