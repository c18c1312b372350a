"""How the polyhedral IR sees the arrays of a scop whose declaration leaves the first extent open.

A C array declared with every extent is seen as declared.  A parameter `double A[][M]` or
`double x[]` has no first extent: isl finds it from the subscripts, at the sizes looper
specializes to, as one past the largest first subscript any statement instance reaches (`reach`).
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ...ir.program import Statement


# -- reach, with isl --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Reach:
    """The elements a scop's instances reach in one array: per dimension, the first and one past
    the last index (None: no instance reaches the array at these sizes)."""

    bounds: tuple[tuple[int, int], ...] | None

    def fits(self, extents: tuple[int, ...]) -> bool:
        """Whether every dimension but the outermost stays inside [0, extent)."""
        if self.bounds is None:
            return True
        return all(0 <= lo and hi <= e for (lo, hi), e in zip(self.bounds[1:], extents))


def reach(statements: list[Statement], array: str, rank: int, strides: tuple[int, ...] | None = None) -> Reach:
    """What the statements reach in `array` (of logical rank `rank`); with `strides`, the flat
    offsets sum(index * stride) instead (one dimension)."""
    touched = None
    for st in statements:
        for a in st.accesses:
            if a.array == array:
                r = a.relation.range()
                touched = r if touched is None else touched.union(r)
    if touched is None or touched.is_empty():
        return Reach(None)
    if strides is not None:
        names = [f"d{k}" for k in range(rank)]
        flat = " + ".join(f"{s}*{n}" for s, n in zip(strides, names))
        touched = touched.apply(isl.Map(f"{{ {array}[{', '.join(names)}] -> {array}[{flat}] }}"))
        rank = 1
    bounds = tuple((touched.dim_min_val(d).to_python(), touched.dim_max_val(d).to_python() + 1)
                   for d in range(rank))
    return Reach(bounds)


def first_below_zero(statements: list[Statement], array: str):
    """The first statement with an access whose first subscript can be negative, and an example
    of its subscripts there (for the error that names it), or None."""
    for st in statements:
        for a in st.accesses:
            if a.array != array:
                continue
            below = a.relation.range().intersect(isl.Set(f"{{ {array}[{', '.join(f'd{k}' for k in range(len(a.index)))}] : d0 < 0 }}"))
            if not below.is_empty():
                pt = below.sample_point()
                return st, a, [int(pt.get_coordinate_val(isl.dim_type.set, d).to_python()) for d in range(len(a.index))]
    return None
