"""The BLAS reference for the dense products: OpenBLAS's GEMM at the kernel's own shapes, timed in
the bench's rounds (`--compare openblas`).

A compiler's matrix product is judged against what the machine's best library reaches on the
same threads.  `looper machine` measures numpy's DGEMM once, on square matrices, at the start
of a campaign; but this VM's speed drifts for minutes at a time (a parallel program runs 1.7x
slower in some stretches), so a rate taken once is not a fair denominator for means taken an
hour later.  Here the reference is a system of the run: each round runs, in a fresh process,
numpy's matrix products of the shapes the kernel computes (gemm: one NI x NK by NK x NJ; 2mm:
two; doitgen: one (NR NQ) x NP by NP x NP), once each, cold, as a program that calls the BLAS
once would.  Its rate and the kernel's are ratios of the same rounds.

The reference computes a product, not the kernel (syrk's full product where the kernel fills a
triangle): it is never checked against gcc's outputs and has no speedup, only a rate.  A
kernel's own rate counts 2 flops per multiply-add of its products (`multiply_adds`), exactly
from its iteration domains, so a triangular kernel is credited with the half it computes.
"""
from __future__ import annotations

import stat
import sys
from pathlib import Path
from typing import Callable

from ..fileio import cache_dir
from ..ir.program import Binary, Expr, Load, Program, walk
from ..poly.flops import kernel_work
from ..runtime.compile import Binary as BinaryFile
from ..runtime.dgemm import best_core_type
from .peers import Build
from .results import BLAS_REFERENCE as SYSTEM

Shape = tuple[int, int, int]  # (m, n, k): an m x k by k x n product

# The products each dense PolyBench kernel computes, from its sizes.
PRODUCTS: dict[str, Callable[[dict[str, int]], tuple[Shape, ...]]] = {
    "gemm": lambda s: ((s["NI"], s["NJ"], s["NK"]),),
    "2mm": lambda s: ((s["NI"], s["NJ"], s["NK"]), (s["NI"], s["NL"], s["NJ"])),
    "3mm": lambda s: ((s["NI"], s["NJ"], s["NK"]), (s["NJ"], s["NL"], s["NM"]), (s["NI"], s["NL"], s["NJ"])),
    "doitgen": lambda s: ((s["NR"] * s["NQ"], s["NP"], s["NP"]),),
    "symm": lambda s: ((s["M"], s["N"], s["M"]),),
    "syrk": lambda s: ((s["N"], s["N"], s["M"]),),
    "syr2k": lambda s: ((s["N"], s["N"], s["M"]), (s["N"], s["N"], s["M"])),
    "trmm": lambda s: ((s["M"], s["N"], s["M"]),),
}

_SCRIPT = """\
#!{python}
# {name}: OpenBLAS's GEMM at {kernel}'s shapes, one cold call each; prints the seconds.
import os, time
# the threads every system of the round gets (OpenBLAS would take its own variable first)
if "OMP_NUM_THREADS" in os.environ:
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]
{core}import numpy as np
rng = np.random.default_rng(0)
shapes = {shapes!r}
operands = [(rng.random((m, k)).astype(np.{dtype}), rng.random((k, n)).astype(np.{dtype}),
             np.ones((m, n), dtype=np.{dtype})) for m, n, k in shapes]
t = time.perf_counter()
for a, b, c in operands:
    np.matmul(a, b, out=c)
print("%0.6f" % (time.perf_counter() - t))
"""


def shapes_of(program: Program) -> tuple[Shape, ...] | None:
    """The GEMM shapes of a dense PolyBench kernel; None for any other program."""
    products = PRODUCTS.get(program.name.replace("_", "-"))
    return products(program.sizes) if products is not None else None


def reference_flops(shapes: tuple[Shape, ...]) -> int:
    """What the reference computes: 2 flops per multiply-add of its products."""
    return sum(2 * m * n * k for m, n, k in shapes)


def multiply_adds(program: Program) -> int:
    """The kernel's multiply-adds, counted exactly: each execution of an accumulation (`X += ...`,
    `X -= ...`, or `X = X + ...` as atax writes it) adds one per product of two arrays' elements
    among its terms (syr2k's two; gemm's `alpha * A[i][k] * B[k][j]` one: the scalar is not an
    operand)."""
    counts = {w.statement: w.instances for w in kernel_work(program).statements}
    total = 0
    for st in program.statements:
        body = st.body
        if not body.target.dtype.is_float:
            continue
        terms = _terms(body.value)
        if body.op == "=":
            if body.target not in terms:
                continue
            terms.remove(body.target)
        elif body.op not in ("+=", "-="):
            continue
        total += counts.get(st.name, 0) * sum(1 for t in terms if _array_loads(t, program) >= 2)
    return total


def _terms(e: Expr) -> list[Expr]:
    """The additive terms of `e`."""
    if isinstance(e, Binary) and e.op in "+-":
        return _terms(e.left) + _terms(e.right)
    return [e]


def _array_loads(e: Expr, program: Program) -> int:
    return sum(1 for x in walk(e) if isinstance(x, Load) and program.arrays[x.array].rank >= 1)


def build_reference(program: Program, directory: Path | None = None) -> Build:
    """The reference's "binary": a Python script of numpy's products at the kernel's shapes,
    run like PolyBench's harness (one time on stdout), with OpenBLAS's best kernels for this CPU
    (`runtime.dgemm.best_core_type`).  Unavailable for other kernels."""
    directory = directory if directory is not None else cache_dir() / "blas"
    shapes = shapes_of(program)
    if shapes is None:
        return Build(SYSTEM, status="unavailable", harness="polybench",
                     detail=f"no GEMM reference for {program.name}: not a dense product")
    dtype = "float32" if program.arrays[program.outputs[0].array].dtype.short == "f32" else "float64"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{SYSTEM}-{program.name}-{program.size_label}.py"
    core = best_core_type()
    path.write_text(_SCRIPT.format(python=sys.executable, name=SYSTEM, kernel=program.name, shapes=shapes,
                                   dtype=dtype, core=f"os.environ.setdefault('OPENBLAS_CORETYPE', {core!r})\n"
                                   if core else ""))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    b = Build(SYSTEM, BinaryFile(path, f"{SYSTEM}:{program.name}:{shapes}", ()), harness="polybench",
              detail=f"numpy.matmul ({_blas_name()}{', ' + core + ' kernels' if core else ''}) at "
                     + " + ".join(f"{m}x{k} by {k}x{n}" for m, n, k in shapes))
    b.info.update(shapes=[list(s) for s in shapes], flops=reference_flops(shapes))
    return b


def _blas_name() -> str:
    """The BLAS numpy was built with, as its configuration names it."""
    try:
        import numpy as np
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name', 'BLAS')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - a label only
        return "numpy's BLAS"
