"""The same program at a small size: where an answer is verified before it is written.

Running the answer and the original at the size tuned for would cost their run time there (LARGE
kernels take seconds); at PolyBench's SMALL or MINI they take milliseconds, and the transformation
sequence replays there (`search.verify`).  The run's own size is used when it is no larger.

- A Python program is parsed again from its source at SMALL (else MINI) from its SIZES, without
  the run's `-D` overrides.
- A C file's scops are specialized to the sizes gcc's flags gave them (`lang.c.sizes`): the file
  is preprocessed again with `-DSMALL_DATASET` in place of any other dataset flag, which shrinks
  PolyBench-style files (their sizes come from dataset macros).  When that fails, or the sizes do
  not shrink (a size given by `-D N=500`, or by a constant in the code), verification runs at the
  tuned size, and says so.

`Origin` parses a program again at sizes of the caller's choosing: a stand-in's
(`search.proxy`), smaller than the program's in every size.
"""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..errors import LooperError
from ..ir.program import Program

LABELS = ("SMALL", "MINI")  # the verification sizes, in order of preference
_DATASET_FLAG = re.compile(r"-D(MINI|SMALL|MEDIUM|LARGE|EXTRALARGE)_DATASET(=.*)?")


@dataclass(frozen=True)
class Resized:
    """The programs (one per scop; one for Python) at the verification size, or why there are none."""

    programs: tuple[Program, ...] | None
    label: str  # the dataset they are at ("SMALL"), or the tuned size's label
    note: str = ""  # why the tuned size is used (empty when it is simply no larger)


def not_larger(sizes: Mapping[str, int], than: Mapping[str, int]) -> bool:
    """Every size in `sizes` at most its value in `than` (a size `than` lacks counts as larger)."""
    return all(k in than and v <= than[k] for k, v in sizes.items())


def smaller_python(program: Program) -> Resized:
    """A Python program at SMALL (else MINI), or itself when its sizes are no larger."""
    from .parse import declared_sizes, parse_source
    tuned = Resized((program,), program.size_label)
    try:
        table = declared_sizes(program.source, program.path)
    except LooperError:
        return tuned
    label = next((x for x in LABELS if x in table), None)
    if label is None:
        return Resized((program,), program.size_label, f"SIZES has no {' or '.join(LABELS)}")
    if not_larger(program.sizes, table[label]):
        return tuned
    try:
        return Resized((parse_source(program.source, program.path, label),), label)
    except LooperError as e:
        return Resized((program,), program.size_label, f"it does not parse at {label}: {e.message}")


def smaller_c(cfile) -> Resized:
    """A C file's scops preprocessed again with -DSMALL_DATASET (`cfile` is a `lang.c.cfile.CFile`)."""
    from .c.cfile import parse_c_file
    programs = tuple(s.program for s in cfile.scops)
    flags = tuple(f for f in cfile.cpp_flags if not _DATASET_FLAG.fullmatch(f)) + ("-DSMALL_DATASET",)
    try:
        small = _reparse(cfile, flags, parse_c_file)
    except LooperError as e:
        return Resized(programs, cfile.size_label, f"it does not preprocess with -DSMALL_DATASET: {e.message}")
    if len(small.scops) != len(cfile.scops) or any(
            [s.name for s in a.program.statements] != [s.name for s in b.program.statements]
            for a, b in zip(small.scops, cfile.scops)):
        return Resized(programs, cfile.size_label, "its scops change with -DSMALL_DATASET")
    if all(not_larger(t.size_vars, s.size_vars) for t, s in zip(cfile.scops, small.scops)):
        same = all(t.size_vars == s.size_vars for t, s in zip(cfile.scops, small.scops))
        return Resized(programs, cfile.size_label, "its sizes do not shrink with -DSMALL_DATASET" if same else "")
    if not all(not_larger(s.size_vars, t.size_vars) for t, s in zip(cfile.scops, small.scops)):
        return Resized(programs, cfile.size_label, "-DSMALL_DATASET makes some of its sizes larger")
    return Resized(tuple(s.program for s in small.scops), "SMALL")


@dataclass(frozen=True)
class Origin:
    """Where a program was parsed from, to parse it again at other sizes.  A Python program
    (`cfile` None) is parsed from its own source with every size given; a C file's scop `index`
    is preprocessed again with every size macro given as `-DNAME=VALUE` (a size variable `n`
    takes its value from the macro `N`, `lang.c.sizes`), which PolyBench-style headers let a
    command line set.  A size the file sets itself does not move, and is refused."""

    cfile: object | None = None  # lang.c.cfile.CFile
    index: int = 0

    def sizes(self, program: Program) -> dict[str, int]:
        """The sizes that can be set, by the name that sets them, with their values."""
        if self.cfile is None:
            return dict(program.sizes)
        return {name.upper(): v for name, v in self.cfile.scops[self.index].size_vars.items()}

    def at(self, program: Program, sizes: Mapping[str, int]) -> Program:
        """`program` with `sizes` (every one of `self.sizes`): a `LooperError` when it does not
        parse there, or its sizes do not take those values."""
        if self.cfile is None:
            from .parse import parse_source
            return parse_source(program.source, program.path, None, dict(sizes))
        from .c.cfile import parse_c_file
        cfile, scop = self.cfile, self.cfile.scops[self.index]
        names = "|".join(re.escape(k) for k in sizes)
        flags = tuple(f for f in cfile.cpp_flags if not re.fullmatch(rf"-D({names})(=.*)?", f)) + \
            tuple(f"-D{k}={v}" for k, v in sizes.items())
        again = _reparse(cfile, flags, parse_c_file)
        if len(again.scops) != len(cfile.scops):
            raise LooperError(f"its scops change with {' '.join(flags[-len(sizes):])}", cfile.path)
        got = {k.upper(): v for k, v in again.scops[self.index].size_vars.items()}
        if got != dict(sizes) or [s.name for s in again.scops[self.index].program.statements] != \
                [s.name for s in scop.program.statements]:
            shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
            raise LooperError(f"its sizes do not follow -D flags ({shown} gave "
                              f"{', '.join(f'{k}={v}' for k, v in got.items())})", cfile.path)
        return again.scops[self.index].program


def _reparse(cfile, flags: tuple[str, ...], parse_c_file):
    """The file parsed again with `flags`; a file that was given as text is written out again."""
    if Path(cfile.path).is_file():
        return parse_c_file(cfile.path, flags)
    with tempfile.TemporaryDirectory(prefix="looper-src-") as tmp:
        path = Path(tmp) / Path(cfile.path).name
        path.write_text(cfile.original, errors="surrogateescape")
        return parse_c_file(str(path), flags)
