"""The init looper gives a C scop's data when it builds the scop into its own harness (to measure
candidates, or for `looper run`): the user's init lives outside the scop, in code looper does not
read.

The values are deterministic and well-conditioned for the kernels people put in scops:
`(d0*d1 + 3*(d0 + d1) + 7*q) mod 1021` scaled into (0, 1] (products of neighbouring subscripts,
so that rows and columns are not shifted copies of each other and matrices have full rank), the
same for `A[i][j]` and `A[j][i]` (symmetric), and `n` added on the diagonal of square matrices:
symmetric and strictly diagonally dominant, so Cholesky, LU and triangular solves stay finite.
Integers get small values (`mod 4`); scalars 1.5, 1.75, ... (nonzero: kernels divide by them).
"""
from __future__ import annotations

from ...ir.program import (
    Affine, Array, Assign, Binary, Cast, Const, DType, Expr, IterRef, Load, Loop, Node, Select,
)

MODULUS = 1021


def generated_init(arrays: list[Array], prefix: str) -> tuple[Node, ...]:
    """Assignments filling every array and scalar of `arrays`, in order (q: its position)."""
    nodes: list[Node] = []
    for q, a in enumerate(arrays):
        if a.rank == 0:
            value = Const(1.5 + 0.25 * (q % 4), DType.F64) if a.dtype.is_float else Const(2 + q % 3, DType.I32)
            nodes.append(Assign(Load(a.name, (), a.dtype), "=", value, 0))
            continue
        names = [f"{prefix}i{k}" for k in range(a.rank)]
        body: Node = Assign(Load(a.name, tuple(Affine.of(n) for n in names), a.dtype), "=",
                            _pattern(a, names, q), 0)
        for k in reversed(range(a.rank)):
            body = Loop(names[k], Affine.constant(0), a.shape[k], 1, (body,), 0)
        nodes.append(body)
    return tuple(nodes)


def _pattern(a: Array, names: list[str], q: int) -> Expr:
    d = [Cast(IterRef(n), DType.I64) for n in names]
    i64 = DType.I64
    if len(d) == 1:
        prod: Expr = Binary("*", d[0], d[0], i64)
    else:
        prod = Binary("*", d[0], d[1], i64)
        for k in range(1, len(d) - 1):
            prod = Binary("+", prod, Binary("*", d[k], d[k + 1], i64), i64)
    total: Expr = d[0]
    for x in d[1:]:
        total = Binary("+", total, x, i64)
    t = Binary("+", Binary("+", prod, Binary("*", Const(3, i64), total, i64), i64), Const(7 * q, i64), i64)
    t = Binary("%", t, Const(MODULUS, i64), i64)
    if not a.dtype.is_float:
        return Binary("%", t, Const(4, i64), i64)
    value: Expr = Binary("/", Cast(Binary("+", t, Const(1, i64), i64), DType.F64),
                         Const(float(MODULUS), DType.F64), DType.F64)
    if a.rank == 2 and a.extent[0] == a.extent[1]:
        diagonal = Select(Binary("==", IterRef(names[0]), IterRef(names[1]), DType.I32),
                          Const(float(a.extent[0]), DType.F64), Const(0.0, DType.F64), DType.F64)
        value = Binary("+", value, diagonal, DType.F64)
    return value
