"""The machine the emitted C is compiled for, as the code generator and the search need it.

The width of the widest vector registers gcc targets with the default flags (-march=native): a
register tile's columns are whole vectors of it; and the data cache sizes: cache tiles are
sized to them.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess

from .caches import cache_levels

# predefined macro -> vector bytes, widest first
_VECTOR_MACROS = (("__AVX512F__", 64), ("__AVX__", 32), ("__SSE2__", 16), ("__ARM_NEON", 16))


@functools.lru_cache(maxsize=4)
def vector_bytes(cc: str = "gcc", march: str = "-march=native") -> int:
    """Bytes in one vector register of the compile target (`LOOPER_VECTOR_BYTES` overrides;
    16 when the compiler cannot be asked)."""
    forced = os.environ.get("LOOPER_VECTOR_BYTES")
    if forced:
        return int(forced)
    path = shutil.which(cc)
    if path is None:
        return 16
    out = subprocess.run([path, march, "-dM", "-E", "-"], input="", capture_output=True, text=True).stdout
    defined = {line.split()[1] for line in out.splitlines() if line.startswith("#define ")}
    for macro, width in _VECTOR_MACROS:
        if macro in defined:
            return width
    return 16


DEFAULT_CACHES = {1: 32 * 1024, 2: 1024 * 1024, 3: 8 * 1024 * 1024}


@functools.lru_cache(maxsize=1)
def cache_bytes() -> dict[int, int]:
    """Data (or unified) cache size per level (`runtime.caches`, sysfs); typical sizes where the
    machine does not say."""
    out = dict(DEFAULT_CACHES)
    for c in cache_levels():
        if c.type in ("Data", "Unified"):
            out[c.level] = c.size
    return out
