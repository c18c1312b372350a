"""Promotion of an array reference to registers for the span of a tile, proved with isl.

A register tile (`transforms.register_tiling`) keeps the elements its statement updates (gemm's
C[i][j]) in vector registers while the reduction loop runs, and writes them back once.  That
computes what the program computes when, within one tile (fixed values of every schedule
dimension outside the reduction loop), no other reference touches an element the promoted
reference writes: otherwise a read would see the element's old value in memory while its new
value sits in a register (trmm: `B[i][j] += A[k][i] * B[k][j]` reads rows of B that a tile of
rows of B is updating).
"""
from __future__ import annotations

import islpy as isl

from ..ir.program import Access
from ..ir.schedule import Lowered


def _tile_prefix(lowered: Lowered, stmt: str, depth: int) -> isl.Map:
    """{ stmt[instance] -> [schedule dims 0 .. depth-1] }: which tile an instance belongs to."""
    full = lowered.instance_map(stmt)
    n = full.dim(isl.dim_type.out)
    return full.project_out(isl.dim_type.out, depth, n - depth)


def promotion_conflict(lowered: Lowered, stmt: str, target: Access, tile_depth: int) -> str | None:
    """Why `target` (a write of `stmt`) cannot be kept in registers across schedule dimensions
    `tile_depth` and beyond, or None when it can: some other reference of the statement (one
    with different subscripts) touches an element it writes within the same tile."""
    st = lowered.program.statement(stmt)
    prefix = _tile_prefix(lowered, stmt, tile_depth)
    written = prefix.reverse().apply_range(target.relation)  # tile -> elements it writes
    for a in st.accesses:
        if a.array != target.array or a.index == target.index:
            continue
        touched = prefix.reverse().apply_range(a.relation)
        if not written.intersect(touched).is_empty():
            kind = "writes" if a.is_write else "reads"
            return f"another reference {kind} {target.array} elements the register tile keeps in registers"
    return None
