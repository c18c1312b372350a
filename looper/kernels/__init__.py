"""The 30 PolyBench 4.2.1 kernels in looper's Python subset, shipped inside the package.

They are package data, found through `importlib.resources` rather than a path relative to the
source tree, so an installed wheel has them too: `looper optimize polybench:gemm` works from any
directory.  looper parses these files and never imports them.
"""
from __future__ import annotations

import functools
import os
from importlib.resources import files
from pathlib import Path

from ..errors import LooperUsageError

PREFIX = "polybench:"


def polybench_dir() -> Path:
    """The directory of the kernel files.  pip installs looper as files (it never zips a package),
    so the resource is a filesystem path; a zip import would fail here, loudly."""
    return Path(os.fspath(files(__package__) / "polybench"))


def polybench_names() -> list[str]:
    """Every shipped kernel, in PolyBench's spelling (jacobi-2d), sorted."""
    return sorted(p.stem.replace("_", "-") for p in polybench_dir().glob("*.py"))


def polybench_file(name: str) -> Path:
    """The file of kernel `name` (jacobi-2d or jacobi_2d), or a usage error listing the known ones."""
    path = polybench_dir() / f"{name.replace('-', '_')}.py"
    if not path.is_file():
        raise LooperUsageError(f"no PolyBench kernel '{name}' (known: {', '.join(polybench_names())})")
    return path


def resolve_program(spec: str | os.PathLike) -> str | os.PathLike:
    """`polybench:NAME` -> the shipped kernel's file; any other path or text unchanged."""
    if isinstance(spec, str) and spec.startswith(PREFIX) and "\n" not in spec:
        return str(polybench_file(spec[len(PREFIX):]))
    return spec


def is_shipped(path: str | os.PathLike) -> bool:
    """Whether `path` is one of the shipped kernels (whose directory is no place for output)."""
    return Path(path).resolve().parent == polybench_dir().resolve()


def is_polybench(path: str | os.PathLike) -> bool:
    """A PolyBench kernel by its file's name (looper's Python, PolyBench's C, a copy of either
    under a directory named for PolyBench); a copy renamed elsewhere is caught by its text
    (`is_polybench_program`).  PolyBench is the test set: it stays out of training."""
    p = Path(path)
    return "polybench" in p.as_posix().lower() or p.stem.replace("_", "-") in polybench_names()


def is_polybench_program(program) -> bool:
    """Whether a parsed program (`ir.program.Program`) is one of the shipped kernels whatever its
    file is called: its normalized kernel text (no comments, no layout, no sizes) is theirs."""
    return program.kernel_text in _polybench_kernel_texts()


@functools.cache
def _polybench_kernel_texts() -> frozenset[str]:
    from ..lang.parse import parse_source
    return frozenset(parse_source(polybench_file(n).read_text(), str(polybench_file(n)), "MINI").kernel_text
                     for n in polybench_names())
