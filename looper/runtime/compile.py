"""gcc invocation through a content-hash build cache.

A binary is keyed by (compiler identity, flags, source text): the same program is never compiled
twice, across runs and processes.  Writes go to a temporary name and are renamed into place, so an
interrupted build never leaves a broken binary in the cache.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..lang.errors import LooperError

OPT_FLAGS = ("-O3", "-march=native", "-fopenmp")
EXACT_FLAGS = ("-ffp-contract=off",)  # no FMA contraction: outputs comparable bit for bit


class CompileError(LooperError):
    """gcc rejected a program looper generated (a looper bug, reported with gcc's message)."""

    exit_status = 3


def cache_dir() -> Path:
    root = os.environ.get("LOOPER_CACHE_DIR")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "looper"


@functools.lru_cache(maxsize=8)
def compiler_id(cc: str = "gcc") -> str:
    """First line of `cc --version`: part of every cache key and measurement record."""
    path = shutil.which(cc)
    if path is None:
        raise LooperError(f"compiler '{cc}' not found on PATH")
    out = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return (out.stdout.splitlines() or [cc])[0].strip()


@dataclass(frozen=True)
class Binary:
    path: Path
    key: str
    flags: tuple[str, ...]


def build_key(source: str, flags: tuple[str, ...], cc: str = "gcc") -> str:
    h = hashlib.sha256()
    for part in (compiler_id(cc), cc, " ".join(flags), source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def compile_c(source: str, flags: tuple[str, ...] = OPT_FLAGS, cc: str = "gcc",
              defines: tuple[str, ...] = ("POLYBENCH_TIME",), timeout: float = 600) -> Binary:
    """Compile a C program (cached).  `defines` become -D flags and are part of the key."""
    all_flags = tuple(flags) + tuple(f"-D{d}" for d in defines)
    key = build_key(source, all_flags, cc)
    out_dir = cache_dir() / "build"
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = out_dir / f"{key}.bin"
    if exe.exists():
        return Binary(exe, key, all_flags)
    with tempfile.TemporaryDirectory(prefix="looper-cc-") as tmp:
        src = Path(tmp) / "prog.c"
        src.write_text(source)
        tmp_exe = Path(tmp) / "prog"
        cmd = [cc, *all_flags, str(src), "-o", str(tmp_exe), "-lm"]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise CompileError(f"{cc} took longer than {timeout:.0f} s") from None
        if res.returncode != 0:
            msg = "\n".join(res.stderr.strip().splitlines()[:30])
            raise CompileError(f"{cc} failed on generated code ({' '.join(all_flags)}):\n{msg}")
        partial = out_dir / f".{key}.{os.getpid()}.tmp"
        shutil.copy2(tmp_exe, partial)
        os.replace(partial, exe)
    return Binary(exe, key, all_flags)
