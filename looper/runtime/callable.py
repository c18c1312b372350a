"""A compiled kernel function called from Python on NumPy arrays, through ctypes.

Arrays are passed by address and updated in place, so each must be exactly what the C function
was specialized to: the array's shape, its element type, C-contiguous, writable when the kernel
writes it, and not overlapping another array argument (the C parameters are `restrict`).  A bad
argument is a `ValueError` naming it, raised before any C runs.
"""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from ..codegen.function import FunctionCode, Parameter
from ..ir.program import DType

NUMPY = {DType.F64: np.float64, DType.F32: np.float32, DType.I64: np.int64, DType.I32: np.int32,
         DType.I8: np.int8}
CTYPES = {DType.F64: ctypes.c_double, DType.F32: ctypes.c_float, DType.I64: ctypes.c_long,
          DType.I32: ctypes.c_int, DType.I8: ctypes.c_byte}


class KernelFunction:
    """`f(alpha=1.5, C=C, ...)` or `f(1.5, ..., C, ...)` in the kernel's parameter order; returns
    the final values of the scalars in OUTPUTS (a dict, empty for most kernels)."""

    def __init__(self, library: Path, code: FunctionCode):
        self.library = Path(library)
        self.code = code
        self.parameters = code.parameters
        self._lib = ctypes.CDLL(str(self.library))
        self._fn = getattr(self._lib, code.name)
        self._fn.restype = None
        self._fn.argtypes = [ctypes.c_void_p if (p.array.rank or p.by_address) else CTYPES[p.array.dtype]
                             for p in self.parameters]
        self.__name__ = code.name
        self.__doc__ = f"{code.signature()}\n\n(looper kernel; NumPy arrays are updated in place)"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    def __repr__(self) -> str:
        return f"<looper kernel {self.code.signature()}>"

    def __call__(self, *args, **kwargs) -> dict[str, float | int]:
        values = self._bind(args, kwargs)
        c_args = []
        outputs: dict[str, object] = {}
        arrays: list[tuple[str, np.ndarray]] = []
        for p in self.parameters:
            v = values[p.name]
            if p.array.rank:
                arr = _check_array(p, v)
                for other, o in arrays:
                    if np.may_share_memory(arr, o):
                        raise ValueError(f"arrays '{other}' and '{p.name}' overlap: a looper kernel's "
                                         "arrays must be distinct")
                arrays.append((p.name, arr))
                c_args.append(arr.ctypes.data)
            else:
                scalar = CTYPES[p.array.dtype](_check_scalar(p, v))
                if p.by_address:
                    outputs[p.name] = scalar
                    c_args.append(ctypes.addressof(scalar))
                else:
                    c_args.append(scalar)
        self._fn(*c_args)
        return {name: s.value for name, s in outputs.items()}

    def _bind(self, args: tuple, kwargs: dict) -> dict:
        names = self.names
        if len(args) > len(names):
            raise TypeError(f"{self.code.name}() takes {len(names)} arguments ({', '.join(names)}), "
                            f"{len(args)} given")
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"{self.code.name}() has no parameter '{k}' (parameters: {', '.join(names)})")
            if k in values:
                raise TypeError(f"{self.code.name}() got two values for '{k}'")
            values[k] = v
        missing = [n for n in names if n not in values]
        if missing:
            raise TypeError(f"{self.code.name}() is missing {', '.join(repr(m) for m in missing)}")
        return values


def _check_array(p: Parameter, v) -> np.ndarray:
    a = p.array
    want = np.dtype(NUMPY[a.dtype])
    if not isinstance(v, np.ndarray):
        raise ValueError(f"argument '{p.name}' must be a NumPy array of shape {a.extent} and dtype "
                         f"{want}, not {type(v).__name__}")
    if v.shape != tuple(a.extent):
        raise ValueError(f"argument '{p.name}' has shape {v.shape}; the kernel was optimized for "
                         f"{tuple(a.extent)}")
    if v.dtype != want:
        raise ValueError(f"argument '{p.name}' has dtype {v.dtype}; the kernel needs {want}")
    if not v.flags.c_contiguous:
        raise ValueError(f"argument '{p.name}' is not C-contiguous (use np.ascontiguousarray)")
    if p.written and not v.flags.writeable:
        raise ValueError(f"argument '{p.name}' is read-only, and the kernel writes it")
    return v


def _check_scalar(p: Parameter, v):
    a = p.array
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ValueError(f"argument '{p.name}' must be a number ({a.dtype.ctype}), not {type(v).__name__}")
    if not a.dtype.is_float:
        if isinstance(v, (float, np.floating)) and float(v) != int(v):
            raise ValueError(f"argument '{p.name}' is {a.dtype.ctype}; {v!r} is not an integer")
        bits = 8 * a.dtype.nbytes
        if not -(1 << (bits - 1)) <= int(v) < (1 << (bits - 1)):
            raise ValueError(f"argument '{p.name}' is {a.dtype.ctype}; {v!r} does not fit")
        return int(v)
    return float(v)
