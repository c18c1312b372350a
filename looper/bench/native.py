"""The native input mode: each peer compiles PolyBench's own C file with PolyBench's own harness.

That is what users of these tools run and what papers report.  A kernel's C file
(`linear-algebra/blas/gemm/gemm.c`) is built with `utilities/polybench.c`, `-I utilities`, the
kernel's directory for its header, `-D<SIZE>_DATASET`, and `-DPOLYBENCH_TIME` (one time per run,
after PolyBench flushes the caches) or `-DPOLYBENCH_DUMP_ARRAYS` (the output arrays on stderr):

- gcc:      gcc -O3 -march=native (the baseline of this mode)
- pluto:    polycc --tile --parallel on the C file, then gcc -O3 -march=native -fopenmp
- polly:    clang -O3 -march=native -mllvm -polly -mllvm -polly-parallel -fopenmp
- graphite: gcc -O3 -march=native -floop-nest-optimize -floop-parallelize-all ... -fopenmp

`-fopenmp` only where the system's kernel starts a thread team (Pluto's and looper's C by its
pragmas, Polly's by its object's calls into the OpenMP runtime; `compile.openmp_flags`): built
with it, PolyBench's harness flushes the caches in a parallel loop, and that team's idle thread
spinning beside a sequential kernel made syr2k's 2.2x slower in one fresh run of seven.

Outputs are checked by comparing dumps: every system's against gcc's dump of PolyBench's C,
all built with `-ffp-contract=off` (see `peers.py`: a legal reordering then gives the same bits).
Binaries are cached like looper's own, keyed by every file that goes into them.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from ..errors import LooperUsageError
from ..runtime import run
from ..runtime.compile import (
    Binary, CompileError, build_key, cached_build, openmp_flags, run_compiler,
)
from ..runtime.process import run_tool
from ..runtime.run import compare_dumps, parse_dump
from . import peers
from .peers import Build
from .results import SystemResult

REPO = Path(__file__).resolve().parent.parent.parent
POLYBENCH_FILES = ("utilities/polybench.c", "utilities/polybench.h")


def default_polybench_c() -> Path:
    """`$LOOPER_SHARED/polybench-c`, else `../shared/polybench-c` next to the repository."""
    shared = os.environ.get("LOOPER_SHARED")
    return (Path(shared) if shared else REPO.parent / "shared") / "polybench-c"


@dataclass(frozen=True)
class PolyBenchC:
    """A PolyBench/C 4.2.1 source tree: each kernel's C file and header, and the harness."""

    root: Path

    @staticmethod
    def find(explicit: str | Path | None = None) -> "PolyBenchC":
        """The tree at `explicit` (--polybench-c) or at the default place; a usage error saying
        where it looked when it is not there."""
        root = Path(explicit) if explicit else default_polybench_c()
        if not all((root / f).is_file() for f in POLYBENCH_FILES):
            raise LooperUsageError(f"--input native needs PolyBench/C 4.2.1's sources: no {POLYBENCH_FILES[0]} "
                                   f"under {root} (pass --polybench-c DIR or set LOOPER_SHARED)")
        return PolyBenchC(root.resolve())

    @property
    def utilities(self) -> Path:
        """Where polybench.c and polybench.h are (`-I` and the second translation unit)."""
        return self.root / "utilities"

    def kernel(self, name: str) -> Path:
        """The C file of kernel `name` (`jacobi-2d` -> stencils/jacobi-2d/jacobi-2d.c)."""
        hits = [p for p in self.root.rglob(f"{name}.c") if p.parent.name == name]
        if not hits:
            raise LooperUsageError(f"no {name}.c in {self.root}")
        return hits[0]


def dataset_define(size: str) -> str:
    """PolyBench's size switch: LARGE -> LARGE_DATASET."""
    return f"{size}_DATASET"


@dataclass(frozen=True)
class NativeKernel:
    """One kernel of the tree at one size: what every native build of it shares."""

    tree: PolyBenchC
    name: str
    size: str

    @property
    def c_file(self) -> Path:
        """PolyBench's C file of this kernel."""
        return self.tree.kernel(self.name)

    def _inputs(self, text: str) -> str:
        """Every file a build of `text` reads, for its cache key."""
        headers = sorted(self.c_file.parent.glob("*.h"))
        return "\0".join([text] + [p.read_text() for p in headers + [self.tree.root / f for f in POLYBENCH_FILES]])

    def _all_flags(self, flags: tuple[str, ...], defines: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(flags) + tuple(f"-D{d}" for d in (dataset_define(self.size),) + defines)

    def forks(self, text: str, flags: tuple[str, ...], cc: str, defines: tuple[str, ...]) -> bool:
        """Whether `text` compiled alone with `flags` calls into the OpenMP runtime (GOMP_*,
        __kmpc_*, omp_*): how Polly's choice to run a loop in parallel is seen from outside."""
        all_flags = self._all_flags(flags, defines)
        key = build_key(self._inputs(text), all_flags + ("-c",), cc)

        def build(tmp: Path) -> Path:
            src = tmp / self.c_file.name
            src.write_text(text)
            cmd = [cc, *all_flags, "-c", "-I", str(self.tree.utilities), "-I", str(self.c_file.parent),
                   str(src), "-o", str(tmp / "kernel.o")]
            run_compiler(cmd, 600, " ".join(all_flags))
            return tmp / "kernel.o"

        undefined = run_tool(["nm", "-u", str(cached_build(key, ".o", build))], 60).stdout.split()
        return any(s.startswith(("GOMP_", "__kmpc_", "omp_")) for s in undefined)

    def compile(self, system: str, text: str, flags: tuple[str, ...], cc: str,
                defines: tuple[str, ...]) -> Build:
        """Build `text` (the kernel's C, or Pluto's rewrite of it) with PolyBench's harness."""
        c_file = self.c_file
        all_flags = self._all_flags(flags, defines)
        key = build_key(self._inputs(text), all_flags, cc)

        def build(tmp: Path) -> Path:
            """Compile the kernel and polybench.c into one binary in `tmp`."""
            src = tmp / c_file.name
            src.write_text(text)
            cmd = [cc, *all_flags, "-I", str(self.tree.utilities), "-I", str(c_file.parent), str(src),
                   str(self.tree.utilities / "polybench.c"), "-lm", "-o", str(tmp / "prog")]
            run_compiler(cmd, 600, " ".join(all_flags))
            return tmp / "prog"

        try:
            path = cached_build(key, ".bin", build)
        except CompileError as e:
            return Build(system, status="failed", detail=peers.compile_failure(e, cc), harness="polybench")
        return Build(system, Binary(path, key, all_flags), harness="polybench",
                     detail=f"{Path(cc).name} on PolyBench's {c_file.name}")


class NativeConfig(Protocol):
    """What a native build needs of the bench's configuration."""

    threads: int
    polycc: str | None
    pluto_timeout: float


def build_native(system: str, kernel: NativeKernel, defines: tuple[str, ...], cfg: NativeConfig,
                 extra: tuple[str, ...] = ()) -> Build:
    """One peer's binary of PolyBench's own C (see the module docstring for the flags)."""
    text = kernel.c_file.read_text()
    if system == "gcc":
        return kernel.compile("gcc", text, peers.BASE_FLAGS + extra, "gcc", defines)
    if system == "graphite":
        return kernel.compile("graphite", text, peers.graphite_flags(cfg.threads) + extra, "gcc", defines)
    if system == "polly":
        clang = peers.find_clang()
        if clang is None:
            return Build("polly", status="unavailable", detail="no clang with Polly", harness="polybench")
        try:
            forks = kernel.forks(text, peers.POLLY_FLAGS + extra, clang, defines)
        except CompileError as e:
            return Build("polly", status="failed", detail=peers.compile_failure(e, clang), harness="polybench")
        if not forks:
            sequential = tuple(f for f in peers.POLLY_FLAGS if f != "-fopenmp")
            b = kernel.compile("polly", text, sequential + extra, clang, defines)
            if b.binary is not None:
                b.detail += " (Polly runs it sequentially: without -fopenmp)"
                return b
            # Polly's choice is not always the same build to build: fdtd-2d LARGE's object had
            # no OpenMP call, and once its linked build did (GOMP_* undefined)
        return kernel.compile("polly", text, peers.POLLY_FLAGS + extra, clang, defines)
    if system == "pluto":
        return _build_pluto(kernel, text, defines, peers.find_polycc(cfg.polycc), cfg.pluto_timeout, extra)
    if system == "isl":
        return Build("isl", status="unavailable", harness="polybench",
                     detail="isl's scheduler works on looper's IR: it has no native input")
    raise ValueError(f"unknown system {system}")


def _build_pluto(kernel: NativeKernel, text: str, defines: tuple[str, ...], polycc: str, timeout: float,
                 extra: tuple[str, ...]) -> Build:
    pluto = peers.run_polycc(polycc, text, kernel.name, timeout)
    if pluto.text is None:
        return Build("pluto", status="failed", detail=pluto.detail, harness="polybench")
    b = kernel.compile("pluto", pluto.text, peers.BASE_FLAGS + openmp_flags(pluto.text) + extra, "gcc", defines)
    b.info.update(pluto.info)
    if b.binary is not None:
        b.detail = f"polycc, then gcc, on PolyBench's {kernel.c_file.name}"
    return b


def check_dumps(builds: dict[str, Build], threads: int = 2, timeout: float = 600.0,
                log: Callable[[str], None] = lambda s: None) -> dict[str, SystemResult]:
    """Run every build once with its dump on stderr, gcc's (PolyBench's C) first: its dump is
    the reference, and a system whose dump differs in any value is WRONG.  The others' runs are
    limited to a multiple of gcc's (`check.check_limit`)."""
    from .check import check_limit
    out: dict[str, SystemResult] = {}
    reference = None
    limit = timeout
    for system, b in builds.items():
        if b.binary is None:
            out[system] = SystemResult(system, b.status, detail=b.detail)
        elif system != "gcc" and reference is None:
            out[system] = SystemResult(system, "unchecked", detail="gcc's build of PolyBench's C did not run")
        else:
            used, t0 = limit, time.perf_counter()
            res = run.run_binary(b.binary.path, 0, 1, timeout=used, threads=threads)
            if system == "gcc":
                limit = check_limit(time.perf_counter() - t0, timeout)
            if res.timed_out:
                out[system] = SystemResult(system, "timeout", detail=f"over {used:.0f} s")
            elif not res.ok:
                out[system] = SystemResult(system, "crash", detail=res.describe_failure())
            elif system == "gcc":
                reference = res.stderr if parse_dump(res.stderr) else None
                out[system] = SystemResult(system, "checked" if reference else "crash",
                                           detail=b.detail if reference else "no arrays dumped")
            else:
                diff = compare_dumps(reference, res.stderr)
                out[system] = SystemResult(system, "WRONG" if diff else "checked",
                                           detail=f"{diff} (against gcc's)" if diff else b.detail)
        log(f"  check {system:9} {out[system].status:8} {out[system].detail}")
    return out
