"""The user's C file with each scop region replaced by looper's code; every other byte unchanged.

A region is the lines from `#pragma scop` through `#pragma endscop`.  Its replacement:

    /* looper: interchange(...) ; parallelize(i) (tuned for ni=1000, nj=1100; other sizes run the original code) */
    if (ni == 1000 && nj == 1100) {
      int looper_c1, looper_c3;
      #pragma omp parallel for ...
      for (looper_c1 = 0; ...) ...
    } else {
      <the original statements, byte for byte>
    }

looper proves legality and array bounds at the concrete sizes it optimized for (the whole IR is
specialized to them), so the code it writes is correct for those sizes; for any others the
function runs the original statements.  The polyhedral model also takes distinct arrays to be
distinct memory; an array parameter is a pointer the caller chooses, and a pointer may point
anywhere, so the test also checks that such an array does not overlap the others where one of the
two is written (`looper_disjoint`, on the declared extents, or on the elements the subscripts
reach for an array whose extent is open, `CScop.reach`).  Without sizes or such arrays there is
no test.  A delinearized flat array (`double *A` seen as A[i][j]) is indexed flat on the user's
pointer again (`A[1000*i + j]`, `CScop.strides`).

Names: the code uses the user's own variables, as declared where the region stands
(`cexpr.verbatim_names`); looper's loop iterators and macros get a prefix that no identifier of
the file starts with (`looper_` unless the file has one), and are declared inside the block.  The
`floord`/`min`/`max` helpers isl's loops use are defined only inside the block, with the user's
own macros of those names (if any) saved and restored around it (`#pragma push_macro`).
"""
from __future__ import annotations

import re
from typing import Sequence

from ..ir.schedule import Lowered
from ..lang.c.cfile import CFile, CScop
from .ast import kernel_body
from .cexpr import verbatim_names
from .storage import temporaries

# The helpers isl's AST uses, as the harness' prelude defines them.
HELPERS = {
    "floord": "#define floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) : (n) / (d))",
    "min": "#define min(x, y) ((x) < (y) ? (x) : (y))",
    "max": "#define max(x, y) ((x) > (y) ? (x) : (y))",
}


def region_code(scop: CScop, lowered: Lowered, prefix: str, comment: str, newline: str = "\n") -> str:
    """The text that replaces one region (pragma lines included)."""
    ind = scop.indent
    # arrays the schedule adds (packed copies, expanded temporaries) take the file's prefix too
    names = {**scop.user_names, **{a.name: prefix + a.name.removeprefix("looper_")
                                   for a in lowered.program.arrays.values() if a.role == "temp"}}
    with verbatim_names(names, scop.strides):
        body, iterators = kernel_body(lowered, rename=lambda it: prefix + it)
    allocate, free = temporaries(lowered.program, lambda n: names[n])
    code = [str(s) for s in body]
    text = "\n".join(code)
    helpers = [h for h in HELPERS if re.search(rf"\b{h}\(", text)]
    lines: list[str] = []
    tuned = ", ".join(f"{k}={v}" for k, v in scop.size_vars.items())
    if tuned:
        note = f"{comment} (tuned for {tuned}; other sizes run the original code)"
    else:
        note = comment
    if scop.may_overlap:
        note += "; arrays that overlap run the original code"
    lines.append(f"{ind}{_comment(note)}")
    tests = [f"{k} == {v}" for k, v in scop.size_vars.items()]
    disjoint = f"{prefix}disjoint"
    if scop.may_overlap:
        # elements [alo, ahi) of a and [blo, bhi) of b share no byte (in units of *a and *b)
        lines.append(f"#define {disjoint}(a, alo, ahi, b, blo, bhi) ((const char *)((a) + (ahi)) <= "
                     "(const char *)((b) + (blo)) || (const char *)((b) + (bhi)) <= (const char *)((a) + (alo)))")
        internal = {user: name for name, user in scop.user_names.items()}
        ref = {u: (f"&{u}" if scop.program.arrays[internal.get(u, u)].rank == 0 else u)
               for pair in scop.may_overlap for u in pair}  # a scalar a pointer may point to
        tests += [f"{disjoint}({ref[x]}, {_span(scop.reach[x])}, {ref[y]}, {_span(scop.reach[y])})"
                  for x, y in scop.may_overlap]
    if tests:
        lines.append(f"{ind}if ({tests[0]}" + "".join(f"{newline}{ind}    && {t}" for t in tests[1:]) + ") {")
    else:
        lines.append(f"{ind}{{")
    for h in helpers:
        lines += [f'#pragma push_macro("{h}")', f"#undef {h}", HELPERS[h]]
    inner = ind + "  "
    if iterators:
        lines.append(f"{inner}int {', '.join(iterators)};")
    lines += [inner + ln for ln in allocate]
    for c in code:
        lines += [(inner + ln if ln and not ln.startswith("#") else _pragma(ln, inner)) for ln in c.split("\n")]
    lines += [inner + ln for ln in free]
    for h in reversed(helpers):
        lines += [f"#undef {h}", f'#pragma pop_macro("{h}")']
    if tests:
        lines.append(f"{ind}}} else {{")
        out = newline.join(lines) + newline + scop.inner + f"{ind}}}" + newline
    else:
        lines.append(f"{ind}}}")
        out = newline.join(lines) + newline
    if scop.may_overlap:
        out += f"#undef {disjoint}" + newline
    return out


def _span(bounds: tuple[int, int]) -> str:
    return f"{bounds[0]}, {bounds[1]}"


def _pragma(line: str, indent: str) -> str:
    return indent + line if line.startswith("#pragma") else line


def _comment(text: str) -> str:
    return "/* " + text.replace("*/", "* /") + " */"


def inplace_source(cfile: CFile, answers: Sequence[Lowered], comments: Sequence[str]) -> str:
    """The file's text with every region replaced (`answers[k]` for scop k)."""
    out: list[str] = []
    pos = 0
    for scop, lowered, comment in zip(cfile.scops, answers, comments):
        out.append(cfile.original[pos:scop.begin])
        line_end = "\r\n" if cfile.original[scop.begin:scop.end].split("\n", 1)[0].endswith("\r") else "\n"
        out.append(region_code(scop, lowered, cfile.prefix, comment, line_end))
        pos = scop.end
    out.append(cfile.original[pos:])
    return "".join(out)


__all__ = ["region_code", "inplace_source"]
