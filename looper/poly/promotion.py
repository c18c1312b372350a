"""Promotion of an array reference to registers for the span of a tile, proved with isl.

A register tile (`transforms.register_tiling`) keeps the elements its statement updates (gemm's
C[i][j]) in vector registers while the reduction loop runs: they are loaded when the tile starts
and stored when it ends, and every update in between goes to the register.  Other references
of the statement to the same array still go to memory, so within one tile (fixed values of every
schedule dimension outside the reduction loop):

- another *write* of a promoted element would be overwritten by the tile's final store (or
  overwrite it): never allowed;
- another *read* of a promoted element sees memory, i.e. the element's value from before the
  tile.  That is the value the program reads only if no promoted write of that element comes
  before the read in program order.  trmm's `B[i][j] += A[k][i] * B[k][j]` reads rows k > i of
  B that a tile of rows is updating, but row i reads row k before row k is updated: allowed.
"""
from __future__ import annotations

import islpy as isl

from ..ir.program import Access
from ..ir.schedule import Lowered, original


def tile_prefix(lowered: Lowered, stmt: str, depth: int) -> isl.Map:
    """{ stmt[instance] -> [schedule dims 0 .. depth-1] }: which tile an instance belongs to."""
    full = lowered.instance_map(stmt)
    n = full.dim(isl.dim_type.out)
    return full.project_out(isl.dim_type.out, depth, n - depth)


def promotion_conflict(lowered: Lowered, stmt: str, target: Access, tile_depth: int) -> str | None:
    """Why `target` (the write of `stmt`) cannot be kept in registers across schedule dimensions
    `tile_depth` and beyond, or None when it can (see the module docstring)."""
    st = lowered.program.statement(stmt)
    prefix = tile_prefix(lowered, stmt, tile_depth)
    same_tile = prefix.apply_range(prefix.reverse())  # instance -> instances of its tile
    when = original(lowered.program).instance_map(stmt)
    before = when.lex_lt_map(when)  # instance -> the instances after it in program order
    for a in st.accesses:
        if a.array != target.array or a.index == target.index:
            continue
        pairs = same_tile.intersect(target.relation.apply_range(a.relation.reverse()))
        if a.is_write and not pairs.is_empty():
            return f"another reference writes {target.array} elements the register tile keeps in registers"
        if not pairs.intersect(before).is_empty():
            return (f"another reference reads {target.array} elements the register tile keeps in registers "
                    "after they were updated")
    return None


def elements_meet(lowered: Lowered, a: tuple[str, Access], b: tuple[str, Access], depth: int) -> bool:
    """Whether access `a` of its statement and `b` of its own may reach the same element at the
    same values of schedule dimensions 0 .. `depth`-1 (the loops around a loop at row `depth`):
    what keeping `a`'s element in a local across that loop must rule out (`codegen.scalars`)."""
    (sa, xa), (sb, xb) = a, b
    ra = xa.relation.intersect_domain(lowered.program.statement(sa).domain)
    rb = xb.relation.intersect_domain(lowered.program.statement(sb).domain)
    same_element = ra.apply_range(rb.reverse())  # a's instance -> b's instances on its element
    same_outer = tile_prefix(lowered, sa, depth).apply_range(tile_prefix(lowered, sb, depth).reverse())
    return not same_element.intersect(same_outer).is_empty()
