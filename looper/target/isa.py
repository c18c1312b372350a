"""What the compiler targets: its identity and the width of the vector registers it uses.

Asked of the compiler itself (`cc --version`, `cc -march=... -dM -E`), once per compiler: a register
tile's columns are whole vectors, and every cache key and measurement names the compiler.
"""
from __future__ import annotations

import functools
import shutil
import subprocess

from ..errors import LooperError

# What looper compiles with unless told otherwise (`--cc`, `--cflags`).
DEFAULT_CC = "gcc"
DEFAULT_CFLAGS = ("-O3", "-march=native", "-fopenmp")

# predefined macro -> vector bytes, widest first
_VECTOR_MACROS = (("__AVX512F__", 64), ("__AVX__", 32), ("__SSE2__", 16), ("__ARM_NEON", 16))
ISA_NAMES = {64: "avx512", 32: "avx2", 16: "sse2"}


@functools.lru_cache(maxsize=8)
def compiler_id(cc: str = DEFAULT_CC) -> str:
    """First line of `cc --version`: part of every cache key and measurement record."""
    path = shutil.which(cc)
    if path is None:
        raise LooperError(f"compiler '{cc}' not found on PATH")
    out = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return (out.stdout.splitlines() or [cc])[0].strip()


def march(cflags: tuple[str, ...]) -> str:
    """The `-march=` flag among `cflags` (`-march=native` when there is none)."""
    return next((f for f in cflags if f.startswith("-march=")), "-march=native")


@functools.lru_cache(maxsize=8)
def vector_bytes(cc: str = DEFAULT_CC, arch: str = "-march=native") -> int:
    """Bytes in one vector register of the compile target (16 when the compiler cannot be asked)."""
    path = shutil.which(cc)
    if path is None:
        return 16
    out = subprocess.run([path, arch, "-dM", "-E", "-"], input="", capture_output=True, text=True).stdout
    defined = {line.split()[1] for line in out.splitlines() if line.startswith("#define ")}
    for macro, width in _VECTOR_MACROS:
        if macro in defined:
            return width
    return 16
