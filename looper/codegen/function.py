"""A kernel as a C function any program can call: arrays and scalars as parameters, no globals,
no `main`; a header declares it.

    void gemm(double alpha, double beta, double C[restrict 1000][1100], ...);

The function is specialized to the sizes looper optimized for: they are the arrays' extents in
its parameter types (the caller passes arrays of exactly those shapes).  Arrays are `restrict`:
they must not overlap, as the program's arrays never do.  A scalar in OUTPUTS is passed by
address and holds its final value when the function returns; other scalars are passed by value.
Kernel-local scalars and loop iterators are locals of the function.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import cgen

from ..ir.program import Array, Program
from ..ir.schedule import Lowered
from .ast import kernel_body
from .cexpr import c_name
from .harness import PRELUDE
from .storage import temporaries


@dataclass(frozen=True)
class Parameter:
    """One parameter of the function, in the kernel's parameter order."""

    name: str  # as in the program
    array: Array
    by_address: bool  # a scalar output: the function writes its final value through a pointer
    written: bool  # the kernel writes it (arrays passed to it must be writable)


@dataclass(frozen=True)
class FunctionCode:
    name: str
    parameters: tuple[Parameter, ...]
    source: str  # the .c file
    header: str  # the .h file
    header_name: str  # how the .c file includes the header
    declaration: str = ""  # the prototype, when it is not the one-size function's (`codegen.dispatch`)

    def signature(self) -> str:
        return self.declaration or _prototype(self.name, self.parameters, definition=False)


def function_name(program: Program) -> str:
    """A C identifier from the program's name (`jacobi_2d`; `2mm` -> `kernel_2mm`)."""
    name = re.sub(r"\W", "_", program.name)
    if not name or name[0].isdigit():
        name = "kernel_" + name
    taken = {c_name(a) for a in program.arrays} | {c_name(s) for s in program.sizes}
    while name in taken or name in ("main",):
        name += "_kernel"
    return name


def parameters(program: Program) -> tuple[Parameter, ...]:
    written = {a.array for s in program.statements for a in s.accesses if a.is_write}
    outputs = {o.array for o in program.outputs}
    return tuple(Parameter(a.name, a, a.rank == 0 and a.name in outputs, a.name in written)
                 for a in program.arrays.values() if a.role == "param")


def function_code(lowered: Lowered, comment: str = "", name: str | None = None,
                  header_name: str | None = None) -> FunctionCode:
    """The C function (and its header) running `lowered` on arrays passed by the caller."""
    program = lowered.program
    name = name or function_name(program)
    header_name = header_name or f"{name}.h"
    params = parameters(program)
    fn = definition(lowered, _prototype(name, params, definition=True))
    sizes = ", ".join(f"{k}={v}" for k, v in program.sizes.items())
    doc = _title(program, comment, sizes)
    source = "\n".join([
        f"/* {doc} */",
        "#include <math.h>",
        f'#include "{header_name}"',
        "",
        *[f"#define {c_name(k)} {v}" for k, v in program.sizes.items()],
        helpers(),
        "",
        str(fn),
        "",
    ])
    guard = "LOOPER_" + re.sub(r"\W", "_", header_name).upper()
    header = "\n".join([
        f"/* {doc} */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        _prototype(name, params, definition=False) + ";",
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        f"#endif /* {guard} */",
        "",
    ])
    return FunctionCode(name, params, source, header, header_name)


def definition(lowered: Lowered, prototype: str) -> cgen.FunctionBody:
    """The function `prototype` running `lowered` (its parameters named as `_prototype` names
    them): locals, temporaries, scalar outputs copied in and out around the loops."""
    program = lowered.program
    params = parameters(program)
    body, iterators = kernel_body(lowered)
    decls: list[cgen.Generable] = []
    if iterators:
        decls.append(cgen.Statement("int " + ", ".join(iterators)))
    allocate, free = temporaries(lowered, c_name)
    return cgen.FunctionBody(cgen.Line(prototype), cgen.Block(
        decls + local_declarations(program) + [cgen.Line(x) for x in allocate] + copies_in(params) + body
        + copies_out(params) + [cgen.Line(x) for x in free]))


def local_declarations(program: Program) -> list[cgen.Generable]:
    """The kernel's own scalars, zeroed."""
    return [cgen.Statement(f"{a.dtype.ctype} {c_name(a.name)} = 0") for a in program.arrays.values()
            if a.role == "local"]


def copies_in(params: tuple[Parameter, ...]) -> list[cgen.Generable]:
    """A scalar output passed by address is worked on in a local of its own name."""
    return [cgen.Statement(f"{p.array.dtype.ctype} {c_name(p.name)} = *{pointer_name(p)}")
            for p in params if p.by_address]


def copies_out(params: tuple[Parameter, ...]) -> list[cgen.Generable]:
    return [cgen.Statement(f"*{pointer_name(p)} = {c_name(p.name)}") for p in params if p.by_address]


def _title(program: Program, comment: str, sizes: str) -> str:
    head = program.doc.splitlines()[0] if program.doc else program.name
    lines = [head, f"Generated by looper from {program.path}" + (f": {comment}" if comment else "") + ".",
             f"Specialized to the sizes {sizes or '(none)'}: array parameters have exactly these extents;",
             "arrays must not overlap; scalars passed by address return their final values."]
    return "\n   ".join(line.replace("*/", "* /") for line in lines)


def pointer_name(p: Parameter) -> str:
    return f"looper_{p.name}"


def _prototype(name: str, params: tuple[Parameter, ...], definition: bool) -> str:
    return prototype(name, params, definition, lambda a: [str(e) for e in a.extent])


def prototype(name: str, params: tuple[Parameter, ...], definition: bool, dims,
              leading: tuple[str, ...] = ()) -> str:
    """`void name(...)`: `dims(array)` spells an array parameter's extents (`restrict` on the
    first in a definition); `leading`: parameters before the kernel's own (`int N`)."""
    parts = list(leading)
    for p in params:
        a = p.array
        t = a.dtype.ctype
        if a.rank == 0:
            parts.append(f"{t} *{pointer_name(p) if definition else c_name(p.name)}" if p.by_address
                         else f"{t} {c_name(p.name)}")
        else:
            extents = dims(a)
            first = f"restrict {extents[0]}" if definition else extents[0]
            parts.append(f"{t} {c_name(p.name)}[{first}]" + "".join(f"[{d}]" for d in extents[1:]))
    return f"void {name}({', '.join(parts) or 'void'})"


def helpers() -> str:
    """The floord/min/max macros isl's loops use (from the harness prelude)."""
    lines = PRELUDE.split("\n")
    start = next(k for k, line in enumerate(lines) if line.startswith("#ifndef floord"))
    return "\n".join(lines[start:]).strip()
