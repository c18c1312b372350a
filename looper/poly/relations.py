"""Union maps taken apart by statement: the one place that sorts a relation's pieces by where
their ends lie (dependences restricted to a loop's statements, value flow through a scalar)."""
from __future__ import annotations

import islpy as isl


def maps_of(u: isl.UnionMap) -> list[isl.Map]:
    """The maps of a union map, one per (source, sink) space pair."""
    out: list[isl.Map] = []
    u.foreach_map(out.append)
    return out


def split_by_statements(u: isl.UnionMap, statements: frozenset[str]) -> tuple[isl.UnionMap, isl.UnionMap]:
    """`u`'s pairs with both ends in `statements`, and those with exactly one end there."""
    inner = isl.UnionMap.empty(u.get_space())
    crossing = isl.UnionMap.empty(u.get_space())
    for m in maps_of(u):
        ends = (m.get_tuple_name(isl.dim_type.in_) in statements, m.get_tuple_name(isl.dim_type.out) in statements)
        if all(ends):
            inner = inner.union(isl.UnionMap.from_map(m))
        elif any(ends):
            crossing = crossing.union(isl.UnionMap.from_map(m))
    return inner, crossing
