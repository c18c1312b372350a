"""How the polyhedral IR sees the arrays of a scop whose declaration leaves the first extent open.

A C array declared with every extent is seen as declared.  A pointer (`double *A`, `double
(*A)[M]`) or a parameter `double A[][M]` has no first extent: isl finds it from the subscripts,
at the sizes looper specializes to, as one past the largest first subscript any statement instance
reaches (`reach`).

A flat one (`double *A`, `double A[]`) whose subscripts multiply loop variables by products of
sizes (`A[i*lda + j]`, `A[(i*n + j)*m + k]`) is delinearized into logical dimensions, as Polly
does from the parameters in a subscript's terms: the products of sizes that multiply loop
variables, ordered by divisibility (1 | m | n*m), are the strides of the dimensions, and each
subscript splits into one index per dimension, each term going to the largest stride that divides
it (`Delinearized.split`).  The split names the same element as the flat subscript at any sizes;
two instances name the same element exactly when their split indices are equal if every index but
the outermost stays inside its dimension (0 <= k < m, 0 <= j < n): isl checks that at the sizes
(`fits`), and an array that does not fit stays one-dimensional, its subscripts affine at the sizes.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from math import prod

import islpy as isl

from ...ir.program import Statement
from .polynomial import Monomial, Polynomial


@dataclass(frozen=True)
class Delinearized:
    """The logical dimensions of a flat array: each one's stride as a product of sizes (sorted
    names), outermost first; the last is () (stride 1)."""

    strides: tuple[tuple[str, ...], ...]

    @property
    def rank(self) -> int:
        return len(self.strides)

    def split(self, flat: Polynomial) -> tuple[Polynomial, ...]:
        """The index in each dimension of the flat subscript `flat` (sum of index * stride)."""
        parts: list[dict[Monomial, int]] = [{} for _ in self.strides]
        for (v, sizes), c in flat.terms:
            d = next(d for d, s in enumerate(self.strides) if _divides(s, sizes))
            m = (v, tuple(sorted((Counter(sizes) - Counter(self.strides[d])).elements())))
            parts[d][m] = parts[d].get(m, 0) + c
        return tuple(Polynomial._normal(p) for p in parts)

    def stride_values(self, sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(prod(sizes[n] for n in s) for s in self.strides)

    def inner_extents(self, sizes: dict[str, int]) -> tuple[int, ...]:
        """The extent of every dimension but the outermost: the ratio of consecutive strides."""
        return tuple(prod(sizes[n] for n in (Counter(outer) - Counter(inner)).elements())
                     for outer, inner in zip(self.strides, self.strides[1:]))


def delinearize(subscripts: list[Polynomial]) -> Delinearized | None:
    """The logical dimensions of a flat array from all its subscripts, or None: no product of sizes
    multiplies a loop variable (`x[i]`, `A[1000*i + j]`), or the products do not divide one another
    (`A[i*n + j*m]`)."""
    chain = {sizes for p in subscripts for (v, sizes), _ in p.terms if v is not None} | {()}
    if len(chain) == 1:
        return None
    order = sorted(chain, key=lambda s: (len(s), s))
    if any(not _divides(a, b) for a, b in zip(order, order[1:])):
        return None
    return Delinearized(tuple(reversed(order)))


def _divides(small: tuple[str, ...], big: tuple[str, ...]) -> bool:
    """Whether the product `small` divides the product `big` (as products of size names)."""
    return not (Counter(small) - Counter(big))


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
