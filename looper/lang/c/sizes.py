"""The value of each size of a scop, at the sizes looper optimizes for.

looper specializes a program to concrete sizes: legality, array bounds and the cost model's
features are all computed at them.  The code it writes into the user's file tests them at run time
and runs the original loops for any other values (`codegen.inplace`), so a size's value chooses
what the code is tuned for, never whether it is correct.  A size `n` takes, in order:

1. for a local or global variable with a constant initializer (`int n = 500;`, `const int n = N;`),
   that constant;
2. the value of the macro named like it in upper case (`ni` -> `NI`, PolyBench's convention), as
   gcc defines it with the user's flags (`-DLARGE_DATASET`, `-D NI=500`; `--size LARGE` adds
   `-DLARGE_DATASET`).

Otherwise looper stops and asks for `-D N=VALUE`.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pycparser import c_parser

from .constants import const_int

from ...errors import LooperSyntaxError

if TYPE_CHECKING:
    from .scops import Locator, Symbol


def size_values(sizes: dict[str, Symbol], macros: dict[str, str], loc: Locator) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, sym in sizes.items():
        value = None
        if sym.kind != "param" and sym.decl.init is not None:
            value = const_int(sym.decl.init)
        if value is None:
            value = macro_int(name.upper(), macros)
        if value is None:
            raise LooperSyntaxError(
                f"no value for the size '{name}': looper reads it from the macro {name.upper()} (the "
                f"name in upper case, as PolyBench's ni is NI) or from a constant initializer; pass "
                f"-D {name.upper()}=VALUE (or the dataset flag the file expects)",
                loc.pp.path, *_where(sym))
        if value < 0:
            raise LooperSyntaxError(f"the size '{name}' is {value}: sizes are non-negative",
                                    loc.pp.path, *_where(sym))
        out[name] = value
    return out


def _where(sym: Symbol) -> tuple[int | None, int | None]:
    c = sym.decl.coord
    return (c.line, c.column) if c is not None else (None, None)


def macro_int(name: str, macros: dict[str, str], depth: int = 0) -> int | None:
    """The integer an object-like macro expands to (through other macros), or None."""
    if name not in macros or depth > 32:
        return None
    text = macros[name]

    def expand(m: re.Match) -> str:
        word = m.group(0)
        if word in macros:
            v = macro_int(word, macros, depth + 1)
            return str(v) if v is not None else word
        return word

    text = re.sub(r"[A-Za-z_]\w*", expand, text)
    try:
        tree = c_parser.CParser().parse(f"int looper_value = ({text});")
    except c_parser.ParseError:
        return None
    return const_int(tree.ext[0].init)


