"""Where the harness keeps a program's arrays: static globals, or the heap when they are huge.

Static arrays are what PolyBench's harness and every peer's input use, and what gcc optimizes
best (distinct objects never alias, addresses are link-time constants), so every program keeps
them while its arrays fit the default code model: x86-64's small model reaches 2 GB of static
data.  Beyond that the link fails ("relocation truncated to fit"; `runtime.compile` then retries
with `-mcmodel=medium`), and a multi-gigabyte .bss is mapped at exec time whatever the program
touches.  So when the arrays add up to more than `STATIC_LIMIT`, the largest move to the heap
(allocated, 64-byte aligned, before anything runs) until the static rest is under
`STATIC_REST`: the same C spelling indexes both (`double (*A)[M]` is indexed like `double
A[N][M]`), only declarations and byte counts change.
"""
from __future__ import annotations

import math
from typing import Callable

import cgen

from ..ir.program import Array, Program
from ..ir.schedule import Lowered
from .cexpr import c_name
from .private import PrivateSlice, last_name, own_name, private_slices

STATIC_LIMIT = 2 << 30  # bytes of static arrays the small code model holds
STATIC_REST = 1 << 30  # what stays static once some arrays move to the heap


def array_bytes(a: Array) -> int:
    return math.prod(a.extent) * a.dtype.nbytes if a.rank else a.dtype.nbytes


def heap_arrays(program: Program) -> frozenset[str]:
    """The arrays the harness allocates on the heap (none for programs of normal sizes)."""
    arrays = [a for a in program.arrays.values() if a.rank and a.role in ("param", "init")]
    total = sum(array_bytes(a) for a in arrays)
    if total <= STATIC_LIMIT:
        return frozenset()
    out = set()
    for a in sorted(arrays, key=array_bytes, reverse=True):
        if total <= STATIC_REST:
            break
        out.add(a.name)
        total -= array_bytes(a)
    return frozenset(out)


def pointer_declarator(name: str, dims: list[str]) -> str:
    """`(*A)[M][K]` for an array declared `A[N][M][K]` (`*A` for one dimension)."""
    return f"(*{name})" + "".join(f"[{d}]" for d in dims[1:]) if len(dims) > 1 else f"*{name}"


def byte_count(c_name: str, first_extent: str, on_heap: bool) -> str:
    """The bytes of an array as C: `sizeof(A)` for a static one, `N * sizeof(*A)` for a heap one."""
    return f"((size_t)({first_extent}) * sizeof(*{c_name}))" if on_heap else f"sizeof({c_name})"


def temporaries(lowered: Lowered, name_of: Callable[[str], str]) -> tuple[list[str], list[str]]:
    """C lines allocating the arrays a schedule adds (packed copies, expanded temporaries) on the
    heap, 64-byte aligned, and the lines freeing them: for code that runs inside the user's
    function (a static buffer would make it unsafe to call from two threads at once).  GCC/clang
    builtins only: the code is pasted where no header may be included.  `restrict`: gcc must know
    the buffer aliases no other array, as it knows of a static one, or it reloads every
    accumulator from memory (doitgen's expanded `sum` alone ran 5x slower without it).  A
    temporary kept one slice per thread (`codegen.private`) gets only the slice its copy-out
    reads here; the threads allocate their own."""
    allocate, free = [], []
    slices = private_slices(lowered)
    for a in lowered.program.arrays.values():
        if a.role != "temp":
            continue
        n = name_of(a.name)
        if a.name in slices:
            if slices[a.name].last is not None:
                lines, release = slice_allocation(last_name(n), slices[a.name])
                allocate += lines
                free.append(release)
            continue
        lines, release = heap_allocation(n, a.dtype.ctype, [str(e) for e in a.extent], array_bytes(a))
        allocate += lines
        free.append(release)
    return allocate, free


def heap_allocation(name: str, ctype: str, dims: list[str], nbytes: int) -> tuple[list[str], str]:
    """Lines allocating `nbytes` on the heap, 64-byte aligned, as a `restrict` pointer `name`
    indexed like an array of extents `dims`, and the line freeing it."""
    raw = f"{name}_raw"
    t = f"{ctype} {pointer_declarator('', dims)}"  # the pointer's type, for the cast
    return ([f"char *{raw} = __builtin_malloc({nbytes + 63});",
             f"if (!{raw}) __builtin_abort();  /* out of memory for {name} */",
             f"{ctype} {pointer_declarator('restrict ' + name, dims)} = ({t})"
             f"(((__UINTPTR_TYPE__){raw} + 63) & ~(__UINTPTR_TYPE__)63);"],
            f"__builtin_free({raw});")


def slice_allocation(name: str, s: PrivateSlice) -> tuple[list[str], str]:
    """One slice of a temporary kept per thread (`codegen.private`), as pointer `name`."""
    return heap_allocation(name, s.ctype, [str(e) for e in s.shape], s.bytes)


def own_slices(slices: list[PrivateSlice]) -> tuple[list[cgen.Generable], list[cgen.Generable]]:
    """What each thread of a team runs first and last: allocating its own slice of each
    temporary in `slices`, and freeing it."""
    allocate, free = [], []
    for sl in slices:
        lines, release = slice_allocation(own_name(c_name(sl.array)), sl)
        allocate += [cgen.Line(ln) for ln in lines]
        free.append(cgen.Line(release))
    return allocate, free
