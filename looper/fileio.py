"""Files written whole or not at all.

Every file looper writes for the user (the optimized C, its header, JSON reports, the bench's
tables and plots) goes through here: the content is written to a temporary name in the same
directory and renamed over the target (`os.replace` is atomic on POSIX).  An interrupt (Ctrl-C,
SIGTERM, a full disk) at any moment leaves either the previous file or the new one, never a
partial one, and the temporary name is removed on the way out.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path next to `path` to write to; renamed to `path` when the block ends normally,
    removed when it raises (KeyboardInterrupt included)."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to `path` atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def cache_dir() -> Path:
    """looper's on-disk cache: `LOOPER_CACHE_DIR`, else `$XDG_CACHE_HOME/looper` (~/.cache/looper)."""
    root = os.environ.get("LOOPER_CACHE_DIR")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "looper"
