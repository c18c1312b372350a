"""gcc invocation through a content-hash build cache.

A binary is keyed by (compiler identity, flags, source text): the same program is never compiled
twice, across runs and processes.  Writes go to a temporary name and are renamed into place, so an
interrupted build never leaves a broken binary in the cache.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import LooperError
from ..fileio import cache_dir
from ..target.isa import DEFAULT_CFLAGS, compiler_id
from .process import run_tool

OPT_FLAGS = DEFAULT_CFLAGS  # what looper builds with unless told otherwise
EXACT_FLAGS = ("-ffp-contract=off",)  # no FMA contraction: outputs comparable bit for bit
# Arrays are static: beyond 2 GB of them the default code model's 32-bit offsets cannot reach
# them and the link fails ("relocation truncated to fit").  Such programs are rebuilt with the
# medium model (large objects addressed with 64 bits); the others keep the faster default.
LARGE_DATA_FLAGS = ("-mcmodel=medium",)

_OMP_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+omp[ \t]+(\w+)", re.MULTILINE)
_OMP_RUNTIME = re.compile(r"#[ \t]*include[ \t]*<omp\.h>|\bomp_[a-z_]+[ \t]*\(")


def openmp_flags(source: str) -> tuple[str, ...]:
    """The OpenMP flag a C file needs: `-fopenmp` where it starts a thread team (any directive
    but `simd`, or a call into the OpenMP runtime), `-fopenmp-simd` where its only OpenMP is
    `omp simd` loops, none otherwise.  Why not always `-fopenmp`: PolyBench's harness flushes the
    caches in a parallel loop when built with it, and the team's idle thread then spins beside a
    sequential kernel; on a 2-vCPU VM, whose vCPUs can share a core, syr2k MEDIUM's sequential
    answer took 2.2x as long in one fresh run of seven (never with `-fopenmp-simd`)."""
    directives = set(_OMP_DIRECTIVE.findall(source))
    if directives - {"simd"} or _OMP_RUNTIME.search(source):
        return ("-fopenmp",)
    return ("-fopenmp-simd",) if directives else ()


class CompileError(LooperError):
    """gcc rejected a program looper generated (a looper bug, reported with gcc's message)."""

    exit_status = 3


class DataTooLarge(CompileError):
    """The link failed because the static arrays outgrow the default code model."""


@dataclass(frozen=True)
class Binary:
    path: Path
    key: str
    flags: tuple[str, ...]


def build_key(source: str, flags: tuple[str, ...], cc: str = "gcc") -> str:
    h = hashlib.sha256()
    for part in (compiler_id(cc), cc, " ".join(flags), source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def run_compiler(cmd: list[str], timeout: float, what: str) -> None:
    """Run one compiler command; a CompileError (DataTooLarge for a link the static arrays
    outgrew) with the compiler's first 30 lines of errors when it fails."""
    try:
        res = run_tool(cmd, timeout)
    except subprocess.TimeoutExpired:
        raise CompileError(f"{cmd[0]} took longer than {timeout:.0f} s") from None
    if res.returncode != 0:
        msg = "\n".join(res.stderr.strip().splitlines()[:30])
        error = DataTooLarge if "relocation truncated to fit" in res.stderr else CompileError
        raise error(f"{cmd[0]} failed on generated code ({what}):\n{msg}")


def cached_build(key: str, suffix: str, build) -> Path:
    """Path of a cached build product, building it (atomically) when absent: `build(tmp)`
    makes the product in a temporary directory and returns its path."""
    out_dir = cache_dir() / "build"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{key}{suffix}"
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(prefix="looper-cc-") as tmp:
        product = build(Path(tmp))
        # one name per process and thread: two threads may build the same product at once
        partial = out_dir / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            shutil.copy2(product, partial)
            os.replace(partial, target)
        finally:  # interrupted between the copy and the rename: no stray partial file
            partial.unlink(missing_ok=True)
    return target


def compile_c(source: str, flags: tuple[str, ...] = OPT_FLAGS, cc: str = "gcc",
              defines: tuple[str, ...] = ("POLYBENCH_TIME",), timeout: float = 600) -> Binary:
    """Compile a one-file C program (cached).  `defines` become -D flags, part of the key.
    Programs with more than 2 GB of arrays are built with LARGE_DATA_FLAGS added."""
    try:
        return _compile_c(source, tuple(flags), cc, defines, timeout)
    except DataTooLarge:
        return _compile_c(source, tuple(flags) + LARGE_DATA_FLAGS, cc, defines, timeout)


def _compile_c(source: str, flags: tuple[str, ...], cc: str, defines: tuple[str, ...],
               timeout: float) -> Binary:
    all_flags = tuple(flags) + tuple(f"-D{d}" for d in defines)
    key = build_key(source, all_flags, cc)

    def build(tmp: Path) -> Path:
        src = tmp / "prog.c"
        src.write_text(source)
        run_compiler([cc, *all_flags, str(src), "-o", str(tmp / "prog"), "-lm"], timeout, " ".join(all_flags))
        return tmp / "prog"

    return Binary(cached_build(key, ".bin", build), key, all_flags)


def compile_split(common: str, kernels: Sequence[str], flags: tuple[str, ...] = OPT_FLAGS, cc: str = "gcc",
                  defines: tuple[str, ...] = ("POLYBENCH_TIME",), timeout: float = 600) -> Binary:
    """Compile a program given as a harness and kernel translation units; the harness object is
    cached on its own, so a batch of candidates only pays for its kernels and the link, and the
    kernel units are compiled at once (the caller deals its kernels into as many units as it has
    CPUs for gcc).  Programs with more than 2 GB of arrays are built with LARGE_DATA_FLAGS added
    (every unit)."""
    try:
        return _compile_split(common, tuple(kernels), tuple(flags), cc, defines, timeout)
    except DataTooLarge:
        return _compile_split(common, tuple(kernels), tuple(flags) + LARGE_DATA_FLAGS, cc, defines, timeout)


def _compile_split(common: str, kernels: tuple[str, ...], flags: tuple[str, ...], cc: str,
                   defines: tuple[str, ...], timeout: float) -> Binary:
    all_flags = tuple(flags) + tuple(f"-D{d}" for d in defines)
    common_key = build_key(common, all_flags + ("-c",), cc)

    def build_common(tmp: Path) -> Path:
        src = tmp / "common.c"
        src.write_text(common)
        run_compiler([cc, *all_flags, "-c", str(src), "-o", str(tmp / "common.o")], timeout, "harness")
        return tmp / "common.o"

    obj = cached_build(common_key, ".o", build_common)
    key = build_key(common_key + "\0unit\0".join(kernels), all_flags, cc)
    what = " ".join(all_flags)

    def build(tmp: Path) -> Path:
        if len(kernels) == 1:
            src = tmp / "kernels.c"
            src.write_text(kernels[0])
            run_compiler([cc, *all_flags, str(src), str(obj), "-o", str(tmp / "prog"), "-lm"], timeout, what)
            return tmp / "prog"
        objects = []
        for k, text in enumerate(kernels):
            (tmp / f"kernels{k}.c").write_text(text)
            objects.append(tmp / f"kernels{k}.o")
        with ThreadPoolExecutor(len(kernels)) as pool:
            list(pool.map(lambda k: run_compiler([cc, *all_flags, "-c", str(tmp / f"kernels{k}.c"), "-o",
                                                  str(objects[k])], timeout, what), range(len(kernels))))
        run_compiler([cc, *all_flags, *map(str, objects), str(obj), "-o", str(tmp / "prog"), "-lm"], timeout, what)
        return tmp / "prog"

    return Binary(cached_build(key, ".bin", build), key, all_flags)


SHARED_FLAGS = ("-shared", "-fPIC")


def compile_shared(source: str, headers: dict[str, str] | None = None, flags: tuple[str, ...] = OPT_FLAGS,
                   cc: str = "gcc", timeout: float = 600) -> Binary:
    """Compile a C file without `main` into a shared library (`-shared -fPIC`), cached by content
    like programs.  `headers` are files written next to it (name -> text), part of the key."""
    headers = dict(headers or {})
    all_flags = tuple(flags) + SHARED_FLAGS
    key = build_key(source + "".join(f"\0{n}\0{t}" for n, t in sorted(headers.items())), all_flags, cc)

    def build(tmp: Path) -> Path:
        for name, text in headers.items():
            (tmp / name).write_text(text)
        src = tmp / "lib.c"
        src.write_text(source)
        run_compiler([cc, *all_flags, str(src), "-o", str(tmp / "lib.so"), "-lm"], timeout, " ".join(all_flags))
        return tmp / "lib.so"

    return Binary(cached_build(key, ".so", build), key, all_flags)
