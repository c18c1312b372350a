"""The cache hierarchy as the kernel reports it (sysfs), for `looper machine` and the roofline.

Sizes are per instance (`shared_cpu_list` says which CPUs share one): on this VM each core has
its own 48 KiB L1d and 1 MiB L2 and the two share a 32 MiB L3.  Read, never assumed: a tile size
or a bandwidth array that is "far bigger than the last level" must follow the machine.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SYSFS = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclass(frozen=True)
class CacheLevel:
    """One cache seen from CPU 0: level, type (Data, Instruction, Unified), size in bytes."""

    level: int
    type: str
    size: int
    line: int | None = None
    shared_with: str = ""  # the CPUs sharing one instance, as sysfs lists them (`0-1`)

    def describe(self) -> str:
        """`L1d 48 KiB`, `L3 32 MiB, shared by CPUs 0-1`."""
        kind = {"Data": "d", "Instruction": "i"}.get(self.type, "")
        shared = f", shared by CPUs {self.shared_with}" if "-" in self.shared_with or "," in self.shared_with else ""
        return f"L{self.level}{kind} {_human(self.size)}{shared}"


def cache_levels(root: Path = SYSFS) -> list[CacheLevel]:
    """CPU 0's caches, innermost first; empty when sysfs does not say (not Linux, a container
    that hides it)."""
    out = []
    for index in sorted(root.glob("index*")):
        try:
            level = int(_read(index / "level"))
            size = parse_size(_read(index / "size"))
        except (OSError, ValueError):
            continue
        line = _read(index / "coherency_line_size", "")
        out.append(CacheLevel(level, _read(index / "type", "Unified"), size,
                              int(line) if line.isdigit() else None, _read(index / "shared_cpu_list", "")))
    return sorted(out, key=lambda c: (c.level, c.type))


def last_level_bytes(levels: list[CacheLevel]) -> int | None:
    """The largest data-holding cache, in bytes (None when unknown)."""
    sizes = [c.size for c in levels if c.type != "Instruction"]
    return max(sizes) if sizes else None


def parse_size(text: str) -> int:
    """sysfs spells sizes `48K`, `1024K`, `32M`."""
    text = text.strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def _read(path: Path, default: str | None = None) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        if default is None:
            raise
        return default


def _human(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"
