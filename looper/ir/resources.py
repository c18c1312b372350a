"""Sizes a program can be built and run at, checked before anything is compiled.

Two limits come from the machine and the C looper writes, not from the program:

- **Memory.** The harness holds every array at once (and copies of the kernel's to restore them
  between timed runs).  Arrays that need more memory than the machine has would fail at link or
  exec time with a message about relocations or the size of an array, far from the cause
  (`N=10000000000` for `A[N, N]` asks for 800 exabytes).
- **The C types.** Loop iterators and the bounds isl's code computes are `int`; sizes, array
  extents and every iterator value must fit in it, or the loops overflow (undefined behaviour
  gcc is free to turn into anything).

Both are `FILE: error: ...` (exit status 2), said in the program's own names and sizes.
"""
from __future__ import annotations

import math
import os

from ..errors import LooperUsageError
from .program import Program

INT_MAX = 2**31 - 1


def physical_memory() -> int | None:
    """Bytes of RAM (None where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def array_footprint(program: Program) -> dict[str, int]:
    """Bytes of each array and scalar the program's harness declares."""
    return {a.name: math.prod(a.extent) * a.dtype.nbytes if a.rank else a.dtype.nbytes
            for a in program.arrays.values() if a.role in ("param", "init", "local")}


def check_resources(program: Program, sizes: dict[str, int] | None = None) -> None:
    """Raise a `LooperUsageError` when the program's arrays need more memory than the machine has,
    or a size, an extent or a loop iterator overflows `int`.  `sizes`: the size variables to
    name in messages (a C scop's; a Python program's are its own)."""
    sizes = program.sizes if sizes is None else sizes
    where = _show(sizes)
    need = array_footprint(program)
    total = sum(need.values())
    memory = physical_memory()
    if memory is not None and total > memory:
        big = max(need, key=need.get)
        raise LooperUsageError(
            f"the arrays need {_bytes(total)} at {where} ({big}: {_bytes(need[big])}), more than this "
            f"machine's {_bytes(memory)} of memory", program.path)
    for name, value in sizes.items():
        if value > INT_MAX:
            raise LooperUsageError(f"the size {name}={value} does not fit in a C int (at most {INT_MAX}): "
                                   "loop iterators in the generated code are int", program.path)
    for a in program.arrays.values():
        if any(e > INT_MAX for e in a.extent):
            raise LooperUsageError(f"array '{a.name}' has an extent {list(a.extent)} at {where}: beyond "
                                   f"{INT_MAX}, its subscripts overflow the C int they are computed in",
                                   program.path)
    _check_iterators(program, where)


def _check_iterators(program: Program, where: str) -> None:
    """Every loop iterator's values, as the statements' domains bound them, fit in an int."""
    for s in program.statements:
        for k, var in enumerate(s.iterators):
            lo, hi = s.domain.dim_min_val(k), s.domain.dim_max_val(k)
            values = [v.to_python() for v in (lo, hi) if v.is_int()]
            if any(abs(v) > INT_MAX for v in values):
                raise LooperUsageError(f"the loop over '{var}' around line {s.line} reaches {max(values, key=abs)} "
                                       f"at {where}: beyond the C int its iterator is", program.path)


def _bytes(n: int) -> str:
    for unit, scale in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _show(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) if sizes else "these sizes"
