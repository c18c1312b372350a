"""looper's input language: a Python subset parsed with `ast`, never executed.

`from looper.lang import *` in a program file only helps editors: the names below make the
annotations (`f64[N, N]`) and casts (`f64(x)`) resolve for linters.  looper itself never imports
a program file.
"""
from __future__ import annotations

import math as _math


class _DType:
    """Stand-in for a looper data type in editors: `f64[N, M]` and `f64(x)` both work."""

    def __init__(self, name: str):
        self.__name__ = name

    def __getitem__(self, dims):
        return self

    def __call__(self, value):
        return value

    def __repr__(self) -> str:
        return self.__name__


f64 = _DType("f64")
f32 = _DType("f32")
i64 = _DType("i64")
i32 = _DType("i32")
i8 = _DType("i8")
sqrt = _math.sqrt
exp = _math.exp

__all__ = ["f64", "f32", "i64", "i32", "i8", "sqrt", "exp"]
