"""A lowered scop specialized to its sizes, under names looper's own harness can hold.

Sizes become constants in the syntax tree (`n - 1` -> `39`, `(double)n` -> `(double)40`,
`i*lda + j` -> `1000*i + j`): the code looper writes into the user's file runs only when the size
variables have those values (`codegen.inplace`), so the two are the same there, and the harness
that measures the scop needs
no `#define n 40`, which would clash with any identifier `n` of the harness.  For the same reason
an array or scalar named like a local of the harness's functions that name the program's arrays
(`FILE *f` in save_outputs, `d0` in dump_arrays, ...) gets an internal name; the in-place output
prints the user's name again (`cexpr.verbatim_names`).
"""
from __future__ import annotations

from ...ir.program import (
    Assign, Binary, Bound, Call, Cast, Condition, Const, Expr, Guard, IterRef, Load, Loop,
    MinMax, Node, Select, SizeRef, Unary,
)
from .layout import Delinearized

# Locals of the harness's functions (codegen/harness.py, templates/main.c) that also name the
# program's arrays: data with these names would be shadowed there.
HARNESS_LOCALS = frozenset({"f", "g", "r", "i", "cnt", "bad", "scale", "path", "ts", "variant", "repeats",
                            "mode", "cutoff", "t0", "t1", "argc", "argv"} | {f"d{k}" for k in range(16)})


def internal_names(names, prefix: str) -> dict[str, str]:
    """user name -> the name the program uses (the same, but for harness locals)."""
    return {n: (prefix + n if n in HARNESS_LOCALS else n) for n in names}


class Specializer:
    """The lowered tree at `sizes`, data under internal names, and each delinearized flat array's
    subscript split into its logical dimensions (`layout`; `layouts` by the user's names)."""

    def __init__(self, sizes: dict[str, int], rename: dict[str, str], layouts: dict[str, Delinearized] | None = None):
        self.sizes = sizes
        self.rename = rename
        self.layouts = layouts or {}

    def nodes(self, nodes) -> tuple[Node, ...]:
        return tuple(self.node(n) for n in nodes)

    def node(self, n: Node) -> Node:
        if isinstance(n, Loop):
            return Loop(n.var, self.bound(n.lower), self.bound(n.upper), n.step, self.nodes(n.body), n.line)
        if isinstance(n, Guard):
            return Guard(self.condition(n.cond), self.nodes(n.then), self.nodes(n.orelse), n.line)
        return Assign(self.load(n.target), n.op, self.expr(n.value), n.line)

    def bound(self, b) -> Bound:
        """A bound of the lowering (`Polynomial`s, min/max of them) as affine forms at the sizes."""
        if isinstance(b, MinMax):
            return MinMax(b.op, tuple(self.bound(a) for a in b.args))
        return b.substitute(self.sizes)

    def condition(self, c: Condition) -> Condition:
        if c.op == "cmp":
            return Condition("cmp", tuple(self.bound(a) for a in c.args), c.cmp)
        return Condition(c.op, tuple(self.condition(a) for a in c.args), c.cmp)

    def load(self, ld: Load) -> Load:
        index = ld.index
        if ld.array in self.layouts:
            index = self.layouts[ld.array].split(index[0])
        return Load(self.rename.get(ld.array, ld.array), tuple(self.bound(i) for i in index), ld.dtype)

    def expr(self, e: Expr) -> Expr:
        if isinstance(e, SizeRef):
            return Const(self.sizes[e.name], e.dtype)
        if isinstance(e, (Const, IterRef)):
            return e
        if isinstance(e, Load):
            return self.load(e)
        if isinstance(e, Unary):
            return Unary(e.op, self.expr(e.operand), e.dtype)
        if isinstance(e, Cast):
            return Cast(self.expr(e.operand), e.dtype)
        if isinstance(e, Binary):
            return Binary(e.op, self.expr(e.left), self.expr(e.right), e.dtype)
        if isinstance(e, Select):
            return Select(self.expr(e.cond), self.expr(e.then), self.expr(e.orelse), e.dtype)
        if isinstance(e, Call):
            return Call(e.fn, tuple(self.expr(a) for a in e.args), e.dtype)
        raise TypeError(f"not an expression: {e!r}")
