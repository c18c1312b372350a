"""The 30 PolyBench 4.2.1 kernels in looper's Python subset, shipped inside the package.

They are package data, found through `importlib.resources` rather than a path relative to the
source tree, so an installed wheel has them too: `looper optimize polybench:gemm` works from any
directory.  looper parses these files and never imports them.
"""
from __future__ import annotations

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
