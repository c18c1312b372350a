"""Integer constant expressions of C, evaluated: what a loop bound or a size macro folds to."""
from __future__ import annotations

from pycparser import c_ast


def const_int(node) -> int | None:
    """The value of an integer constant expression, or None."""
    if isinstance(node, c_ast.Constant):
        if node.type not in ("int", "long int", "long long int", "unsigned int", "unsigned long int",
                             "unsigned long long int"):
            return None
        t = node.value.rstrip("uUlL")
        try:
            return int(t, 8) if len(t) > 1 and t[0] == "0" and t[1] not in "xXbB" else int(t, 0)
        except ValueError:
            return None
    if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
        v = const_int(node.expr)
        return None if v is None else (-v if node.op == "-" else v)
    if isinstance(node, c_ast.Cast):
        return const_int(node.expr)
    if isinstance(node, c_ast.BinaryOp):
        a, b = const_int(node.left), const_int(node.right)
        if a is None or b is None:
            return None
        if node.op == "+":
            return a + b
        if node.op == "-":
            return a - b
        if node.op == "*":
            return a * b
        if node.op in ("/", "%") and b != 0:
            q = abs(a) // abs(b) * (1 if (a >= 0) == (b > 0) else -1)  # C truncates
            return q if node.op == "/" else a - q * b
        if node.op == "<<" and b >= 0:
            return a << b
        if node.op == ">>" and b >= 0:
            return a >> b
    return None
