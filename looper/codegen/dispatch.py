"""A kernel tuned at several sizes as one C function that dispatches on its sizes.

    void gemm(int NI, int NJ, int NK, double alpha, double beta,
              double C[restrict NI][NJ], double A[restrict NI][NK], double B[restrict NK][NJ]);

`function.function_code` writes a function specialized to one set of sizes (the extents are in
its parameter types).  Here the sizes are parameters and the arrays variably modified (C99), so
one entry point takes the kernel at any sizes.  It compares them with each set it was tuned for
and calls that version (a static function exactly as `function_code` writes it, its sizes
defined as macros around it); at any other sizes it runs the original loops, printed from the
kernel as written with the sizes as variables (`harness.tree_to_c`).  Arrays must not overlap,
as for the one-size function.  C++ sees the arrays as plain pointers (it has no variably
modified types); the function has C linkage either way.
"""
from __future__ import annotations

import re
from typing import Sequence

import cgen

from ..ir.program import Program
from ..ir.schedule import Lowered
from .cexpr import c_bound, c_name
from .function import (
    FunctionCode, copies_in, copies_out, definition, function_name, helpers, local_declarations, parameters,
    pointer_name, prototype,
)
from .harness import tree_to_c


def dispatch_code(versions: Sequence[Lowered], comments: Sequence[str], name: str | None = None,
                  header_name: str | None = None) -> FunctionCode:
    """One function over `versions` (the same kernel, each specialized to its own sizes) and the
    original for any other sizes; `comments[k]` says what version k is."""
    program = versions[0].program
    name = name or function_name(program)
    header_name = header_name or f"{name}.h"
    params = parameters(program)
    sizes = tuple(program.sizes)
    env = {s: c_name(s) for s in sizes}
    leading = tuple(f"int {env[s]}" for s in sizes)

    def symbolic(a):
        return [c_bound(e, env) for e in a.shape]

    parts = [f"/* {_title(program, versions, comments)} */", "#include <math.h>", f'#include "{header_name}"', "",
             helpers(), ""]
    for k, lowered in enumerate(versions):
        values = lowered.program.sizes
        fixed = lambda a: [str(e) for e in a.extent]  # noqa: E731
        head = "static " + prototype(_version_name(name, k), parameters(lowered.program), True, fixed)
        fn = definition(lowered, head)
        parts += [f"/* {comments[k]} */", *[f"#define {env[s]} {values[s]}" for s in sizes], str(fn),
                  *[f"#undef {env[s]}" for s in sizes], ""]
    parts += [str(_original(program, "static " + prototype(f"{name}_original", params, True, symbolic, leading),
                            env)), ""]
    parts += [str(_entry(name, versions, params, sizes, env, prototype(name, params, True, symbolic, leading))), ""]
    guard = "LOOPER_" + re.sub(r"\W", "_", header_name).upper()
    header = "\n".join([
        f"/* {_title(program, versions, comments)} */", f"#ifndef {guard}", f"#define {guard}",
        "#ifdef __cplusplus", 'extern "C" {', _cxx_prototype(name, params, leading) + ";", "}",
        "#else", prototype(name, params, False, symbolic, leading) + ";", "#endif", f"#endif /* {guard} */", ""])
    return FunctionCode(name, params, "\n".join(parts), header, header_name,
                        prototype(name, params, False, symbolic, leading))


def _version_name(name: str, k: int) -> str:
    return f"{name}_v{k + 1}"


def _original(program: Program, head: str, env: dict[str, str]) -> cgen.FunctionBody:
    """The kernel as written, its sizes variables: what runs at sizes no version was tuned for."""
    params = parameters(program)
    return cgen.FunctionBody(cgen.Line(head), cgen.Block(
        local_declarations(program) + copies_in(params) + tree_to_c(program.kernel, env) + copies_out(params)))


def _entry(name: str, versions: Sequence[Lowered], params, sizes: tuple[str, ...], env: dict[str, str],
           head: str) -> cgen.FunctionBody:
    """The function the caller calls: the version tuned for its sizes, else the original."""
    args = ", ".join(pointer_name(p) if p.by_address else c_name(p.name) for p in params)
    size_args = ", ".join(env[s] for s in sizes)
    lines: list[cgen.Generable] = []
    for k, lowered in enumerate(versions):
        values = lowered.program.sizes
        test = " && ".join(f"{env[s]} == {values[s]}" for s in sizes) or "1"
        lines += [cgen.Line(f"{'else ' if k else ''}if ({test})"),
                  cgen.Line(f"  {_version_name(name, k)}({args});")]
    original = f"{name}_original({', '.join(filter(None, (size_args, args)))});"
    lines += [cgen.Line("else"), cgen.Line(f"  {original}")]
    return cgen.FunctionBody(cgen.Line(head), cgen.Block(lines))


def _cxx_prototype(name: str, params, leading: tuple[str, ...]) -> str:
    """The declaration C++ reads: every array a pointer to its elements."""
    parts = list(leading)
    for p in params:
        a = p.array
        ptr = a.rank or p.by_address
        parts.append(f"{a.dtype.ctype} {'*' if ptr else ''}{c_name(p.name)}")
    return f"void {name}({', '.join(parts) or 'void'})"


def _title(program: Program, versions: Sequence[Lowered], comments: Sequence[str]) -> str:
    head = program.doc.splitlines()[0] if program.doc else program.name
    lines = [head, f"Generated by looper from {program.path}, tuned for {len(versions)} sets of sizes:"]
    for lowered, comment in zip(versions, comments):
        sizes = ", ".join(f"{k}={v}" for k, v in lowered.program.sizes.items())
        lines.append(f"  {sizes}: {comment}")
    lines += ["Any other sizes run the original loops.  Arrays must not overlap; scalars passed by",
              "address return their final values."]
    return "\n   ".join(line.replace("*/", "* /") for line in lines)
