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
no test.  A delinearized flat array (`double *A` seen as A[i][j]) is indexed on the user's
pointer through rows of its strides (`((double (*)[1000])A)[i][j]`, `CScop.strides`).

A kernel tuned at several sizes gets one block per set of sizes, in one region:

    /* looper: tuned for 2 sets of sizes; other sizes run the original code */
    /* MEDIUM (ni=200, nj=220): looper: ... */
    /* LARGE (ni=1000, nj=1100): looper: ... */
    if (ni == 200 && nj == 220) {
      <the version tuned for MEDIUM>
    } else if (ni == 1000 && nj == 1100) {
      <the version tuned for LARGE>
    } else {
      <the original statements, byte for byte>
    }

Names: the code uses the user's own variables, as declared where the region stands
(`cexpr.verbatim_names`); looper's loop iterators and macros get a prefix that no identifier of
the file starts with (`looper_` unless the file has one), and are declared inside the block.  The
`floord`/`min`/`max` helpers isl's loops use are defined only inside the block, with the user's
own macros of those names (if any) saved and restored around it (`#pragma push_macro`).

A version whose answer is the original schedule (`Version.lowered` None) gets no block: its sizes
take the `else` branch.  A region whose every version is the original is left as it was, byte for
byte, so what compiles is the user's own code, not isl's regeneration of the same loops (which
can be slower: jacobi-2d MEDIUM ran 0.80x gcc rewritten with constant bounds).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Version:
    """One tuned version of a region: the scop as parsed at its sizes, and its schedule."""

    scop: CScop
    lowered: Lowered | None  # None: the original schedule, run as the user wrote it
    comment: str  # `looper: <sequence>`
    label: str = ""  # which sizes, for the region's comment when it holds several versions


def answer_code(schedule) -> Lowered | None:
    """What a region's answer writes: its lowered schedule, or None for the original schedule
    (a `transforms.schedule.Schedule` without steps, not `rewritten`), which runs as the user
    wrote it."""
    return schedule.lowered if schedule.written else None


def region_code(scop: CScop, lowered: Lowered, prefix: str, comment: str, newline: str = "\n") -> str:
    """The text that replaces one region (pragma lines included)."""
    return versions_code([Version(scop, lowered, comment)], prefix, newline)


def versions_code(versions: Sequence[Version], prefix: str, newline: str = "\n") -> str:
    """The text that replaces one region by one block per version, each entered at its own sizes
    (`if (ni == 200 && ...) {...} else if (ni == 1000 && ...) {...}`), and the original
    statements for any other sizes (and for versions whose answer is the original).  Every
    version's scop is the same region of the same file (the same bytes); they differ in the sizes
    they were parsed at.  Without any version to write, the region's own text."""
    scop = versions[0].scop
    notes = _notes(versions)
    versions = [v for v in versions if v.lowered is not None]
    if not versions:
        return scop.text
    ind = scop.indent
    disjoint = f"{prefix}disjoint"
    lines = [f"{ind}{_comment(c)}" for c in notes]
    if scop.may_overlap:
        # elements [alo, ahi) of a and [blo, bhi) of b share no byte (in units of *a and *b)
        lines.append(f"#define {disjoint}(a, alo, ahi, b, blo, bhi) ((const char *)((a) + (ahi)) <= "
                     "(const char *)((b) + (blo)) || (const char *)((b) + (bhi)) <= (const char *)((a) + (alo)))")
    tests: list[str] = []
    for k, v in enumerate(versions):
        tests = _tests(v.scop, disjoint)
        if tests:
            opener = "if (" if k == 0 else "} else if ("
            lines.append(f"{ind}{opener}{tests[0]}" + "".join(f"{newline}{ind}    && {t}" for t in tests[1:]) + ") {")
        else:
            assert len(versions) == 1, "versions need sizes to tell them apart"
            lines.append(f"{ind}{{")
        lines += _block(v, prefix, ind + "  ")
    if tests:
        lines.append(f"{ind}}} else {{")
        out = newline.join(lines) + newline + scop.inner + f"{ind}}}" + newline
    else:
        lines.append(f"{ind}}}")
        out = newline.join(lines) + newline
    if scop.may_overlap:
        out += f"#undef {disjoint}" + newline
    return out


def _notes(versions: Sequence[Version]) -> list[str]:
    """The comment lines above the region: the sequence and the sizes it runs at, or one line
    per version under a line that says how many."""
    scop = versions[0].scop
    overlap = "; arrays that overlap run the original code" if scop.may_overlap else ""
    if len(versions) > 1:
        return [f"looper: tuned for {len(versions)} sets of sizes; other sizes run the original code{overlap}"] + \
               [f"{v.label}{' ' if v.label else ''}({_tuned(v.scop)}): {v.comment}"
                + (" (runs the original code)" if v.lowered is None else "") for v in versions]
    tuned = _tuned(scop)
    note = f"{versions[0].comment} (tuned for {tuned}; other sizes run the original code)" if tuned \
        else versions[0].comment
    return [note + overlap]


def _tuned(scop: CScop) -> str:
    return ", ".join(f"{k}={v}" for k, v in scop.size_vars.items())


def _tests(scop: CScop, disjoint: str) -> list[str]:
    """What enters a version: its sizes, and its arrays not overlapping where they may."""
    tests = [f"{k} == {v}" for k, v in scop.size_vars.items()]
    if scop.may_overlap:
        internal = {user: name for name, user in scop.user_names.items()}
        ref = {u: (f"&{u}" if scop.program.arrays[internal.get(u, u)].rank == 0 else u)
               for pair in scop.may_overlap for u in pair}  # a scalar a pointer may point to
        tests += [f"{disjoint}({ref[x]}, {_span(scop.reach[x])}, {ref[y]}, {_span(scop.reach[y])})"
                  for x, y in scop.may_overlap]
    return tests


def _span(bounds: tuple[int, int]) -> str:
    return f"{bounds[0]}, {bounds[1]}"


def _block(version: Version, prefix: str, inner: str) -> list[str]:
    """The lines of one version's block: its helpers, iterators, temporaries and loops."""
    scop, lowered = version.scop, version.lowered
    # arrays the schedule adds (packed copies, expanded temporaries) take the file's prefix too
    names = {**scop.user_names, **{a.name: prefix + a.name.removeprefix("looper_")
                                   for a in lowered.program.arrays.values() if a.role == "temp"}}
    with verbatim_names(names, scop.strides):
        body, iterators = kernel_body(lowered, rename=lambda it: prefix + it)
    allocate, free = temporaries(lowered, lambda n: names[n])
    code = [str(s) for s in body]
    text = "\n".join(code)
    helpers = [h for h in HELPERS if re.search(rf"\b{h}\(", text)]
    lines: list[str] = []
    for h in helpers:
        lines += [f'#pragma push_macro("{h}")', f"#undef {h}", HELPERS[h]]
    if iterators:
        lines.append(f"{inner}int {', '.join(iterators)};")
    lines += [inner + ln for ln in allocate]
    for c in code:
        lines += [(inner + ln if ln and not ln.startswith("#") else _pragma(ln, inner)) for ln in c.split("\n")]
    lines += [inner + ln for ln in free]
    for h in reversed(helpers):
        lines += [f"#undef {h}", f'#pragma pop_macro("{h}")']
    return lines


def _pragma(line: str, indent: str) -> str:
    return indent + line if line.startswith("#pragma") else line


def _comment(text: str) -> str:
    return "/* " + text.replace("*/", "* /") + " */"


def inplace_source(cfile: CFile, answers: Sequence[Lowered | None], comments: Sequence[str]) -> str:
    """The file's text with every region replaced (`answers[k]` for scop k; None: kept as written)."""
    return inplace_versions_source(cfile, [[Version(scop, lowered, comment)]
                                           for scop, lowered, comment in zip(cfile.scops, answers, comments)])


def inplace_versions_source(cfile: CFile, versions: Sequence[Sequence[Version]]) -> str:
    """The file's text with region k replaced by the blocks of `versions[k]` (`versions_code`)."""
    out: list[str] = []
    pos = 0
    for scop, region in zip(cfile.scops, versions):
        out.append(cfile.original[pos:scop.begin])
        line_end = "\r\n" if scop.text.split("\n", 1)[0].endswith("\r") else "\n"
        out.append(versions_code(region, cfile.prefix, line_end))
        pos = scop.end
    out.append(cfile.original[pos:])
    return "".join(out)


__all__ = ["Version", "answer_code", "region_code", "versions_code", "inplace_source", "inplace_versions_source"]
