"""Scalar replacement: the array elements an innermost loop keeps fixed, held in local variables.

    for (c3 = 0; c3 <= 1299; c3++)              c3 = 0;
    {                                           if (c3 <= 1299) {
      tmp[c1] = A[c1][c3] * x[c3] + tmp[c1];      double c3_0 = tmp[c1];
      y[c1] = B[c1][c3] * x[c3] + y[c1];          double c3_1 = y[c1];
    }                                             for (; c3 <= 1299; c3++) { c3_0 = ...; c3_1 = ...; }
                                                  tmp[c1] = c3_0;
                                                  y[c1] = c3_1;
                                                }

Why: in the user's function the arrays are pointer parameters, and gcc must assume that a store
through one may change any other, so it keeps `tmp[c1]` in memory and every iteration waits for
the previous one's store.  The polyhedral model takes distinct arrays to be distinct memory (code
in place checks it before it runs, `codegen.inplace`), so looper may say what gcc cannot prove.
The same operations run in the same order: the results are the same bits.

An element is replaced when the loop is innermost and sequential, its body is statements only (so
each runs in every iteration), the element's subscripts do not use the loop's iterator, and every
other reference of the loop to the same array reaches other elements at the same values of the
loops around (isl proves it), or no reference of the loop writes the array.  The loads happen
only when the loop runs at least once (an element may not exist at an empty loop's outer values).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..ir.program import Access, Load, Statement, walk
from ..ir.schedule import Lowered
from ..poly.promotion import elements_meet


@dataclass(frozen=True)
class Reference:
    """One array reference of a statement call in the loop, as printed."""

    statement: str
    load: Load
    text: str  # its C text at this call (`tmp[c1]`)
    is_write: bool


@dataclass(frozen=True)
class Element:
    """An element the loop keeps in a local variable: loaded before, stored after when written."""

    text: str
    name: str
    ctype: str
    written: bool


def references(statement: Statement, name: str, text_of) -> list[Reference]:
    """The array references of one call of `statement` (`text_of(load)`: its C text there), the
    target first (also read unless it is a plain `=`)."""
    body = statement.body
    target = body.target
    out = [Reference(name, target, text_of(target), True)]
    if body.op != "=":
        out.append(Reference(name, target, text_of(target), False))
    out += [Reference(name, e, text_of(e), False) for e in walk(body.value) if isinstance(e, Load)]
    return out


def invariant_elements(lowered: Lowered, row: int, iterator: str, refs: list[Reference],
                       skip: frozenset[str], name_of) -> list[Element]:
    """The elements of `refs` (the references of an innermost loop at schedule `row` whose C
    iterator is `iterator`) that the loop may keep in local variables, named `name_of(k)`.
    Arrays in `skip` (kept one slice per thread) and scalars are left alone."""
    uses = re.compile(rf"(?<![\w]){re.escape(iterator)}(?![\w])")
    arrays = lowered.program.arrays
    out: list[Element] = []
    seen: set[str] = set()
    for ref in refs:
        a = arrays.get(ref.load.array)
        if a is None or not a.rank or a.name in skip or ref.text in seen or uses.search(ref.text):
            continue
        seen.add(ref.text)
        same = [r for r in refs if r.load.array == a.name]
        mine = [r for r in same if r.text == ref.text]
        others = [r for r in same if r.text != ref.text]
        written = any(r.is_write for r in mine)
        if any(_meet(lowered, row, m, o) for m in mine for o in others if m.is_write or o.is_write):
            continue
        out.append(Element(ref.text, name_of(len(out)), a.dtype.ctype, written))
    return out


def _meet(lowered: Lowered, row: int, a: Reference, b: Reference) -> bool:
    """Whether `a` and `b` may reach the same element at the same values of the loops outside
    schedule row `row` (True when either cannot be found among its statement's accesses)."""
    xa, xb = _access(lowered, a), _access(lowered, b)
    return xa is None or xb is None or elements_meet(lowered, (a.statement, xa), (b.statement, xb), row)


def _access(lowered: Lowered, ref: Reference) -> Access | None:
    st = lowered.program.statement(ref.statement)
    return next((acc for acc in st.accesses
                 if acc.array == ref.load.array and tuple(acc.index) == tuple(ref.load.index)), None)


__all__ = ["Reference", "Element", "references", "invariant_elements"]
