"""The machine looper tunes for (`Target`), and the only place that reads the host.

`Target.detect()` reads this machine (CPU, vector width, caches, cores, the limits `looper
machine` measured); `Target.load(path)` a described one.  The search, the transformations, the
code generator and the cost estimates receive the target as a value; nothing else reads the host.
"""
from .caches import CacheLevel, cache_levels
from .host import cores, cpu_id, cpu_model, default_threads, load_average
from .isa import DEFAULT_CC, DEFAULT_CFLAGS, compiler_id
from .limits import Limits, load_limits, save_limits
from .target import Target

__all__ = ["CacheLevel", "DEFAULT_CC", "DEFAULT_CFLAGS", "Limits", "Target", "cache_levels", "compiler_id",
           "cores", "cpu_id", "cpu_model", "default_threads", "load_average", "load_limits", "save_limits"]
