"""Exact comparison of two runs' outputs, as the harness saves them (`save:F`).

The harness' own check (`check:F`) allows a relative 1e-7 per value, because loop orders that gcc
contracts into different FMAs round differently.  Verification must not allow anything: a
tolerance would excuse a wrong value that happens to be close (an off-by-one in a smoothing
stencil, a lost update of a tiny term).  So the outputs of both runs are saved raw and compared
here value for value; what rounding alone explains is decided separately, by rebuilding both
programs without FMA contraction (`runtime.reference`), where a legal reordering gives the same
bits.  `within_rounding` bounds how far the contracted outputs may be from the original's for
that excuse to apply where the original's own outputs do not depend on contraction.

A saved file is the OUTPUTS, in order, each as its raw bytes (`fwrite` of the whole array or
scalar); equal values compare equal (so do two NaNs, and -0.0 and 0.0).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..ir.program import DType, Program

NUMPY_TYPES = {DType.F64: "<f8", DType.F32: "<f4", DType.I64: "<i8", DType.I32: "<i4", DType.I8: "i1"}


@dataclass(frozen=True)
class Segment:
    """One output in a saved file: its array, element type and element count."""

    name: str
    dtype: DType
    count: int


def layout(program: Program) -> list[Segment]:
    """The segments of a saved outputs file, in the order `save_outputs` writes them."""
    out = []
    for o in program.outputs:
        a = program.arrays[o.array]
        out.append(Segment(a.name, a.dtype, math.prod(a.extent) if a.rank else 1))
    return out


ROUNDING = 1e-7  # relative difference per value that FMA rounding may explain (the harness' check)


def _segments(expected: bytes, got: bytes, program: Program):
    """(segment, expected values, got values) of every output, or None past a truncated file."""
    import numpy as np
    offset = 0
    for seg in layout(program):
        n = seg.count * seg.dtype.nbytes
        if len(expected) < offset + n or len(got) < offset + n:
            yield seg, None, None
            return
        yield (seg, np.frombuffer(expected, NUMPY_TYPES[seg.dtype], seg.count, offset),
               np.frombuffer(got, NUMPY_TYPES[seg.dtype], seg.count, offset))
        offset += n


def within_rounding(expected: Path, got: Path, program: Program, tolerance: float = ROUNDING) -> bool:
    """Whether every output of `got` equals `expected`'s but for floating-point values within a
    relative `tolerance` (integers and NaNs exactly): the most that FMA rounding may explain."""
    import numpy as np
    a, b = expected.read_bytes(), got.read_bytes()
    if len(a) != len(b):
        return False
    for seg, x, y in _segments(a, b, program):
        if x is None:
            return False
        if not seg.dtype.is_float:
            if not (x == y).all():
                return False
            continue
        nan = np.isnan(x) | np.isnan(y)
        if not (np.isnan(x) == np.isnan(y)).all():
            return False
        x, y = x[~nan].astype(np.float64), y[~nan].astype(np.float64)
        scale = np.maximum(np.maximum(np.abs(x), np.abs(y)), np.finfo(np.float64).tiny)
        if not (np.abs(x - y) <= tolerance * scale).all():
            return False
    return True


def outputs_differ(expected: Path, got: Path, program: Program) -> str | None:
    """None when `got` holds the same output values as `expected`; otherwise what differs."""
    a, b = expected.read_bytes(), got.read_bytes()
    if a == b:
        return None
    import numpy as np
    offset = 0
    for seg in layout(program):
        n = seg.count * seg.dtype.nbytes
        if len(a) < offset + n or len(b) < offset + n:
            return f"the saved outputs end before {seg.name} (a run that did not finish writing them)"
        x = np.frombuffer(a, NUMPY_TYPES[seg.dtype], seg.count, offset)
        y = np.frombuffer(b, NUMPY_TYPES[seg.dtype], seg.count, offset)
        same = x == y
        if seg.dtype.is_float:
            same |= np.isnan(x) & np.isnan(y)
        if not same.all():
            k = int(np.argmin(same))
            return (f"{seg.name}: {int((~same).sum())}/{seg.count} values differ "
                    f"(first at element {k}: expected {x[k].item()!r}, got {y[k].item()!r})")
        offset += n
    return None if len(a) == len(b) == offset else "the saved outputs differ in length"
