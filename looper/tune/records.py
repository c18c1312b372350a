"""Tuning records: an answer found once, kept as one line of JSON, applied again without a search.

A search at the sizes a kernel runs at costs minutes; its answer is a short transformation
sequence that replays on a fresh parse of the same kernel (`Schedule.to_json`).  A record keeps
that sequence with what it answers and how good it was:

- `program`: which kernel at which sizes (`ProgramKey`).  The kernel is identified by its
  normalized text (`Program.kernel_text`: Python, the kernel function and OUTPUTS unparsed by
  `ast`; C, the scop's statements as pycparser prints them after the preprocessor) and the types
  and ranks of its arrays.  Comments, blank lines, indentation and the docstring are not part of
  it, nor is `init`; a changed statement, bound, subscript or array type is.  The sizes are the
  values the kernel is specialized to (Python: its sizes; C: the variables the rewritten region
  tests, `ni=1000`), kept apart from the fingerprint so that one kernel has records at several
  sizes.  The dataset and `-D` values the program was parsed with are kept too: with them the
  program is parsed at those sizes again (`looper apply` without `--size`).
- `machine`: the CPU model and caches (what "the same machine" means when a record is matched),
  and the threads, compiler, flags and OpenMP environment the answer was found with.
- how: the evaluator, the search's seconds; what: the sequence as JSON and as text; how good:
  the predicted and the measured speedup over the original (None when there is none).
- when and by what: the date (UTC) and looper's version.

The file is JSON Lines: one record per line, appended.  Every record carries `record_format`;
a reader takes the formats up to its own and refuses a newer one naming the file and line.
Fields it does not know are kept (`extra`) and written back unchanged, so an older looper can
rewrite a newer minor addition without losing it.  An append writes the whole line with one
`write` under an exclusive lock and undoes a short write, so an interrupt or a full disk never
leaves half a line for later reads to trip on.
"""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from ..errors import LooperError

RECORD_FORMAT = 1  # bumped when a field changes meaning; new optional fields do not bump it


class RecordFormatError(LooperError):
    """A records file this looper cannot read (not JSON, not a record, a newer format)."""


@dataclass(frozen=True)
class ProgramKey:
    """Which kernel a record answers, at which sizes."""

    name: str  # the program's name (the file's stem; `stem-K` for the K-th scop of a C file)
    fingerprint: str  # of the normalized kernel and its arrays' types (`fingerprint`)
    sizes: tuple[tuple[str, int], ...]  # the values it is specialized to, sorted by name
    size: str | None = None  # the dataset it was parsed at (--size), None: the program's default
    defines: tuple[str, ...] = ()  # the -D values it was parsed with
    kernel: str = ""  # the normalized kernel (shown when a record no longer matches its program)
    extra: Mapping = field(default_factory=dict, compare=False)

    @property
    def size_text(self) -> str:
        """`MEDIUM (NI=200, NJ=220)`, `ni=500`, `no sizes`: for messages."""
        values = ", ".join(f"{k}={v}" for k, v in self.sizes)
        label = self.size or ("+".join(self.defines) if self.defines else "")
        if label and values:
            return f"{label} ({values})"
        return label or values or "no sizes"

    def to_json(self) -> dict:
        return {**self.extra, "name": self.name, "fingerprint": self.fingerprint, "sizes": dict(self.sizes),
                "size": self.size, "defines": list(self.defines), "kernel": self.kernel}

    @staticmethod
    def from_json(d: Mapping) -> "ProgramKey":
        known = {"name", "fingerprint", "sizes", "size", "defines", "kernel"}
        return ProgramKey(str(d["name"]), str(d["fingerprint"]), _sizes(d["sizes"]), d.get("size"),
                          tuple(d.get("defines") or ()), str(d.get("kernel", "")),
                          {k: v for k, v in d.items() if k not in known})


@dataclass(frozen=True)
class Machine:
    """Where a record's answer was found: the hardware, and the settings it ran with."""

    cpu: str
    caches: tuple[str, ...] = ()  # `L1d 48 KiB`, ... (`target.caches.CacheLevel.describe`)
    threads: int | None = None
    compiler: str = ""  # `gcc --version`'s first line
    cflags: tuple[str, ...] = ()
    omp_env: str = ""  # `runtime.ompenv.OmpEnv.describe()`
    extra: Mapping = field(default_factory=dict, compare=False)

    def same_hardware(self, other: "Machine") -> bool:
        """The same CPU model and caches: where a record's speed is this machine's speed."""
        return self.cpu == other.cpu and self.caches == other.caches

    def describe(self) -> str:
        threads = f", {self.threads} threads" if self.threads else ""
        return f"{self.cpu}{threads}, {self.compiler or 'unknown compiler'}"

    def to_json(self) -> dict:
        return {**self.extra, "cpu": self.cpu, "caches": list(self.caches), "threads": self.threads,
                "compiler": self.compiler, "cflags": list(self.cflags), "omp_env": self.omp_env}

    @staticmethod
    def from_json(d: Mapping) -> "Machine":
        known = {"cpu", "caches", "threads", "compiler", "cflags", "omp_env"}
        return Machine(str(d["cpu"]), tuple(d.get("caches") or ()), d.get("threads"), str(d.get("compiler", "")),
                       tuple(d.get("cflags") or ()), str(d.get("omp_env", "")),
                       {k: v for k, v in d.items() if k not in known})


@dataclass(frozen=True)
class Record:
    """One answer: a transformation sequence for a kernel at its sizes, found on a machine."""

    program: ProgramKey
    machine: Machine
    evaluator: str  # model | measure | hybrid (or what found it: `bench` records say their own)
    sequence: tuple[dict, ...]  # `Schedule.to_json()`: replays on a fresh parse of the kernel
    describe: str = ""  # the sequence as text (`Schedule.describe`), for people
    predicted: float | None = None  # the cost model's speedup over the original
    measured: float | None = None  # a measured speedup over the original
    search_seconds: float | None = None
    date: str = ""  # ISO 8601, UTC
    looper_version: str = ""
    extra: Mapping = field(default_factory=dict, compare=False)  # fields this looper does not know
    rewritten: bool = False  # no steps, and the original loops written in looper's code (`Schedule.rewrite`)
    origin: str = field(default="", compare=False)  # FILE:LINE it was read from ("" when built here)

    @property
    def speedup(self) -> float | None:
        """The measured speedup, else the predicted one."""
        return self.measured if self.measured is not None else self.predicted

    def rank(self) -> tuple:
        """Larger is better: a measured speedup before any prediction, then the newer."""
        return (self.measured is not None, self.speedup or 0.0, self.date)

    def to_json(self) -> dict:
        return {**self.extra, "record_format": RECORD_FORMAT, "program": self.program.to_json(),
                "machine": self.machine.to_json(), "evaluator": self.evaluator, "sequence": list(self.sequence),
                "describe": self.describe, "predicted": self.predicted, "measured": self.measured,
                "search_seconds": self.search_seconds, "date": self.date, "looper_version": self.looper_version,
                **({"rewritten": True} if self.rewritten else {})}

    @staticmethod
    def from_json(d: Mapping, origin: str = "") -> "Record":
        """A record from its JSON object (`origin`, FILE:LINE, is kept for messages).  Raises
        KeyError/TypeError/ValueError on a malformed one (`read_records` says where)."""
        known = {"record_format", "program", "machine", "evaluator", "sequence", "describe", "predicted",
                 "measured", "search_seconds", "date", "looper_version", "rewritten"}
        sequence = d["sequence"]
        if not isinstance(sequence, list) or not all(isinstance(s, dict) for s in sequence):
            raise ValueError("'sequence' is not a list of transformations")
        program, machine = _part(ProgramKey.from_json, d, "program"), _part(Machine.from_json, d, "machine")
        return Record(program, machine, str(d["evaluator"]),
                      tuple(sequence), str(d.get("describe", "")), _number(d.get("predicted")),
                      _number(d.get("measured")), _number(d.get("search_seconds")), str(d.get("date", "")),
                      str(d.get("looper_version", "")), {k: v for k, v in d.items() if k not in known},
                      d.get("rewritten") is True, origin)

    def line(self) -> str:
        """The record as one line of JSON (newline included)."""
        return json.dumps(self.to_json(), separators=(",", ":"), allow_nan=False) + "\n"


def _part(read, d: Mapping, name: str):
    """A nested object of a record (its missing fields named `program.sizes`)."""
    try:
        return read(d[name])
    except KeyError as e:
        if e.args and e.args[0] == name:
            raise
        raise KeyError(f"{name}.{e.args[0]}") from None


def _sizes(d) -> tuple[tuple[str, int], ...]:
    if not isinstance(d, Mapping):
        raise ValueError("'sizes' is not an object")
    return tuple(sorted((str(k), int(v)) for k, v in d.items()))


def _number(v) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{v!r} is not a number")
    return float(v)


# -- what a record is keyed on --------------------------------------------------------------------------

def fingerprint(program) -> str:
    """The kernel's identity across sizes and formatting: a hash of `Program.kernel_text` and of
    its arrays' element types and ranks (C declares them outside the region).  A program whose
    front end kept no kernel text is identified by its whole source."""
    h = hashlib.sha256((program.kernel_text or program.source).encode("utf-8", "surrogateescape"))
    for name, a in sorted(program.arrays.items()):
        if a.role != "temp":
            h.update(f"\0{name}:{a.dtype.short}:{a.rank}:{a.role}".encode())
    return h.hexdigest()[:20]


def program_key(program, sizes: Mapping[str, int] | None = None, size: str | None = None,
                defines: Iterable[str] = ()) -> ProgramKey:
    """The key of `program` at its sizes: `sizes` are a C scop's size variables (`CScop.size_vars`;
    a Python program's own sizes when None); `size`, `defines`: how it was parsed."""
    values = program.sizes if sizes is None else sizes
    return ProgramKey(program.name, fingerprint(program), tuple(sorted((k, int(v)) for k, v in values.items())),
                      size.upper() if size else None, tuple(str(d) for d in defines), program.kernel_text)


def this_machine(threads: int | None = None, cc: str = "gcc", cflags: Iterable[str] = (),
                 omp_env: str = "") -> Machine:
    """The machine looper runs on, with the settings an answer is found or applied with."""
    from ..target import cache_levels, compiler_id, cpu_id, default_threads
    try:
        compiler = compiler_id(cc)
    except LooperError:
        compiler = cc
    return Machine(cpu_id(), tuple(c.describe() for c in cache_levels()), threads or default_threads(),
                   compiler, tuple(cflags), omp_env)


def now() -> str:
    """The date a record is made: UTC, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def looper_version() -> str:
    from .. import __version__
    return __version__


# -- the file -------------------------------------------------------------------------------------------

def read_records(path: str | os.PathLike) -> list[Record]:
    """Every record of a JSON Lines file, in file order (blank lines skipped).  A line that is
    not a record, or a record of a newer format, is a `RecordFormatError` at FILE:LINE."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise LooperError(f"cannot read records: {e.strerror}", str(path)) from None
    except UnicodeDecodeError:
        raise RecordFormatError("records file is not UTF-8 text", str(path)) from None
    return [parse_record(line, str(path), n) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def parse_record(line: str, file: str, number: int) -> Record:
    """One line of a records file (`file`, `number`: where it stands, for errors)."""
    try:
        d = json.loads(line)
    except json.JSONDecodeError as e:
        raise RecordFormatError(f"not a JSON record ({e.msg} at column {e.colno})", file, number) from None
    return record_from(d, file, number)


def record_from(d, file: str, where: int | str) -> Record:
    """A record from a decoded JSON object; `file`, `where` (a line number, or a name such as a
    baseline's kernel) place the errors."""
    line = where if isinstance(where, int) else None
    what = "" if line is not None else f"{where}: "
    if not isinstance(d, dict) or "record_format" not in d:
        raise RecordFormatError(f"{what}not a looper tuning record (no record_format)", file, line)
    version = d["record_format"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise RecordFormatError(f"{what}record_format {version!r} is not a format number", file, line)
    if version > RECORD_FORMAT:
        raise RecordFormatError(f"{what}record format {version} is newer than this looper reads (formats up "
                                f"to {RECORD_FORMAT}): upgrade looper ({looper_version()}) to use it", file, line)
    try:
        return Record.from_json(d, f"{file}:{where}" if line is not None else f"{file} ({where})")
    except KeyError as e:
        raise RecordFormatError(f"{what}the record has no {e.args[0]!r}", file, line) from None
    except (TypeError, ValueError, AttributeError) as e:
        raise RecordFormatError(f"{what}malformed record: {e}", file, line) from None


def append_records(path: str | os.PathLike, records: Iterable[Record]) -> None:
    """Append records to a JSON Lines file (created when missing), one whole line at a time."""
    lines = [r.line().encode("utf-8") for r in records]
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # concurrent appenders (two bench runs) take turns
            for data in lines:
                _append_line(fd, data)
        finally:
            os.close(fd)  # releases the lock
    except OSError as e:
        raise LooperError(f"cannot append records: {e.strerror or e}", str(path)) from None


def _append_line(fd: int, data: bytes) -> None:
    """Write `data` at the end as one `write`; a short or failed write (a full disk, an
    interrupt) is cut off again, so the file ends at a line boundary whatever happens."""
    start = os.fstat(fd).st_size
    if start and os.pread(fd, 1, start - 1) != b"\n":  # a hand-edited file without a final newline
        data = b"\n" + data
    done = False
    try:
        if os.write(fd, data) != len(data):
            raise OSError(f"short write appending a record to file descriptor {fd}")
        os.fsync(fd)
        done = True
    finally:
        if not done:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
