"""The target: the machine a search tunes for, as one value.

After Halide's `Target` and Adams2019's `MachineParams`, and TVM's `Target`: everything about the
machine that a transformation, the code generator or a cost estimate asks is a field here, and the
value is passed down to them.  `Target.detect` reads the host once; `Target.load` reads a described
machine (`looper optimize --target FILE.json`), so a model search can tune for a machine it does
not run on, and tests can pin one.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import LooperUsageError
from .caches import CacheLevel, cache_levels
from .host import cores, cpu_id, default_threads
from .isa import DEFAULT_CC, DEFAULT_CFLAGS, ISA_NAMES, compiler_id, march, vector_bytes
from .limits import Limits, load_limits

# Typical sizes where a machine does not say (a container that hides sysfs).
DEFAULT_CACHES = {1: 32 * 1024, 2: 1024 * 1024, 3: 8 * 1024 * 1024}


@dataclass(frozen=True)
class Target:
    """A machine and the compiler its code is built with."""

    cpu: str
    vector_bytes: int  # one vector register of the compile target
    caches: tuple[CacheLevel, ...]  # as sysfs lists them (per instance; `shared_with` says who shares)
    cores: int
    threads: int  # what the answer runs on (OMP_NUM_THREADS as the user has it, unless told)
    cc: str = DEFAULT_CC
    cflags: tuple[str, ...] = DEFAULT_CFLAGS
    compiler: str = ""  # `cc --version`'s first line
    limits: Limits | None = None  # measured on `threads` threads (`looper machine`); None: never measured

    @property
    def isa(self) -> str:
        return ISA_NAMES.get(self.vector_bytes, f"{8 * self.vector_bytes}-bit")

    def lanes(self, element_bytes: int) -> int:
        """Elements of `element_bytes` in one vector register."""
        return max(1, self.vector_bytes // element_bytes)

    def cache_bytes(self, level: int) -> int:
        """The data (or unified) cache of `level` per instance, in bytes."""
        sizes = [c.size for c in self.caches if c.level == level and c.type in ("Data", "Unified")]
        return sizes[0] if sizes else DEFAULT_CACHES.get(level, DEFAULT_CACHES[3])

    def with_threads(self, threads: int) -> "Target":
        """The same machine running `threads` threads (limits measured for that count, if kept)."""
        if threads == self.threads:
            return self
        limits = load_limits(threads, self.compiler) if self.compiler else None
        return dataclasses.replace(self, threads=threads, limits=limits)

    def with_limits(self, limits: Limits | None) -> "Target":
        return dataclasses.replace(self, limits=limits)

    def describe(self) -> str:
        """One line for reports: CPU, ISA, caches, threads, compiler."""
        caches = ", ".join(c.describe() for c in self.caches if c.type != "Instruction")
        return (f"{self.cpu}; {self.isa}; {caches or 'caches unknown'}; {self.threads} of {self.cores} cores; "
                f"{self.compiler or self.cc} {' '.join(self.cflags)}")

    # -- JSON ------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        out = dataclasses.asdict(self)
        out["caches"] = [dataclasses.asdict(c) for c in self.caches]
        out["cflags"] = list(self.cflags)
        out["limits"] = self.limits.to_json() if self.limits else None
        return out

    @staticmethod
    def from_json(d: dict) -> "Target":
        known = {f.name for f in dataclasses.fields(Target)}
        fields = {k: v for k, v in d.items() if k in known}
        fields["caches"] = tuple(CacheLevel(**c) for c in d.get("caches", ()))
        fields["cflags"] = tuple(d.get("cflags", DEFAULT_CFLAGS))
        fields["limits"] = Limits.from_json(d["limits"]) if d.get("limits") else None
        return Target(**fields)

    @staticmethod
    def load(path: str | Path) -> "Target":
        """A described machine (`--target FILE.json`, as `looper machine --target-json` writes it)."""
        try:
            return Target.from_json(json.loads(Path(path).read_text()))
        except OSError as e:
            raise LooperUsageError(f"{path}: cannot read the target ({e.strerror})") from None
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise LooperUsageError(f"{path}: not a target description ({e})") from None

    # -- this machine ----------------------------------------------------------------------------
    @staticmethod
    def detect(threads: int | None = None, cc: str = DEFAULT_CC, cflags: tuple[str, ...] = DEFAULT_CFLAGS,
               ) -> "Target":
        """This machine, with `threads` (default: as the shell has it) and the compiler given; its
        limits where `looper machine` (or a bench) measured them."""
        return _detect(threads or default_threads(), cc, tuple(cflags))


@functools.lru_cache(maxsize=16)
def _detect(threads: int, cc: str, cflags: tuple[str, ...]) -> Target:
    try:
        compiler = compiler_id(cc)
    except Exception:  # no compiler: a model search still tunes (nothing is built)
        compiler = ""
    limits = load_limits(threads, compiler) if compiler else None
    return Target(cpu_id(), vector_bytes(cc, march(cflags)), tuple(cache_levels()), cores(), threads, cc, cflags,
                  compiler, limits)
