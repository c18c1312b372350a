"""An embedded SQLite memo of measurements, so that nothing is measured twice.

The key covers everything a time depends on: the program and its sizes, the kernel's C text, the
compiler and flags, the CPU model and the thread count.  Each record is committed as soon as it is
taken, so an interrupted search or data collection loses nothing.  Each also keeps what a later
reader needs to learn from it (`Provenance`): the sequence as JSON, the program's fingerprint,
path and sizes, and how it was timed (OpenMP environment, protocol), so that the hours a
measuring search spends can become a cost model's training data.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..fileio import cache_dir
from .status import Status

SCHEMA = """
CREATE TABLE IF NOT EXISTS measurements (
    key TEXT PRIMARY KEY,
    program TEXT NOT NULL,
    size TEXT NOT NULL,
    schedule TEXT NOT NULL,
    status TEXT NOT NULL,
    times TEXT NOT NULL,
    cutoff REAL NOT NULL,
    detail TEXT NOT NULL,
    compiler TEXT NOT NULL,
    flags TEXT NOT NULL,
    cpu TEXT NOT NULL,
    threads INTEGER NOT NULL,
    loadavg REAL NOT NULL,
    created REAL NOT NULL,
    sequence TEXT NOT NULL DEFAULT '',
    fingerprint TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '',
    sizes TEXT NOT NULL DEFAULT '',
    environment TEXT NOT NULL DEFAULT ''
)
"""
# Columns added after the first memos were written (kept empty in older rows; a memo written
# before them gains them when it is opened).
PROVENANCE_COLUMNS = ("sequence", "fingerprint", "source", "sizes", "environment")


@dataclass(frozen=True)
class Provenance:
    """What a measurement was taken of and how, beyond its key: enough to featurize it again."""

    sequence: str = ""  # the schedule's steps, JSON (`Schedule.to_json`)
    fingerprint: str = ""  # `Program.fingerprint`
    source: str = ""  # the program's path
    sizes: str = ""  # its sizes, JSON
    environment: str = ""  # the OpenMP settings added, and the timing protocol


@dataclass
class Measurement:
    """One candidate's measurement as the memo keeps it."""

    status: Status
    times: list[float] = field(default_factory=list)
    cutoff: float = 0.0
    detail: str = ""
    loadavg: float = -1.0

    def __post_init__(self):
        self.status = Status(self.status)


def measurement_key(*parts: str) -> str:
    """The memo key of everything a time depends on (program, C, compiler, flags, CPU, ...)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


class MeasurementStore:
    """The memo: measurements by key, in SQLite (WAL: several processes may share one file)."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path else cache_dir() / "measurements.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), timeout=60)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(SCHEMA)
        have = {row[1] for row in self.db.execute("PRAGMA table_info(measurements)")}
        for column in PROVENANCE_COLUMNS:
            if column not in have:
                try:
                    self.db.execute(f"ALTER TABLE measurements ADD COLUMN {column} TEXT NOT NULL DEFAULT ''")
                except sqlite3.OperationalError as e:  # another process sharing the memo added it first
                    if "duplicate column name" not in str(e):
                        raise
        self.db.commit()

    def get(self, key: str) -> Measurement | None:
        row = self.db.execute("SELECT status, times, cutoff, detail, loadavg FROM measurements WHERE key = ?",
                              (key,)).fetchone()
        if row is None:
            return None
        return Measurement(row[0], json.loads(row[1]), row[2], row[3], row[4])

    def put(self, key: str, m: Measurement, *, program: str, size: str, schedule: str, compiler: str,
            flags: str, cpu: str, threads: int, provenance: Provenance = Provenance()) -> None:
        """Record one measurement in its own transaction: committed whole, or rolled back when
        interrupted (Ctrl-C, kill -9: SQLite's journal undoes a half-written row)."""
        columns = ("key", "program", "size", "schedule", "status", "times", "cutoff", "detail", "compiler", "flags",
                   "cpu", "threads", "loadavg", "created") + PROVENANCE_COLUMNS
        values = (key, program, size, schedule, m.status.value, json.dumps(m.times), m.cutoff, m.detail, compiler,
                  flags, cpu, threads, m.loadavg, time.time(), provenance.sequence, provenance.fingerprint,
                  provenance.source, provenance.sizes, provenance.environment)
        with self.db:
            self.db.execute(f"INSERT OR REPLACE INTO measurements ({', '.join(columns)}) "
                            f"VALUES ({', '.join('?' * len(columns))})", values)

    def provenance(self, key: str) -> Provenance | None:
        """What the measurement under `key` was taken of (None: no such measurement)."""
        row = self.db.execute(f"SELECT {', '.join(PROVENANCE_COLUMNS)} FROM measurements WHERE key = ?",
                              (key,)).fetchone()
        return Provenance(*row) if row is not None else None

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]

    def close(self) -> None:
        self.db.close()
