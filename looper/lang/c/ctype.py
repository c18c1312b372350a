"""Declared C types, reduced to what the polyhedral IR can hold: an element type and array extents.

`double A[1000 + 0][1100]` (PolyBench's `POLYBENCH_2D` after preprocessing) is an F64 array with
two extent expressions; `double A[][M]` and `double (*A)[M]` leave the first open (None), and so
does `double *x`, a one-dimensional array whose memory the caller chose (`layout` finds the open
extent from the subscripts); `double **p` is no array looper handles; a `typedef char base;` is
followed to `char`.
"""
from __future__ import annotations

from dataclasses import dataclass

from pycparser import c_ast

from ...ir.program import DType

# Plain arithmetic types, by the sorted words that spell them (plain `char` is signed on x86-64).
_ARITHMETIC = {
    ("double",): DType.F64,
    ("float",): DType.F32,
    ("int",): DType.I32, ("signed",): DType.I32, ("int", "signed"): DType.I32,
    ("long",): DType.I64, ("int", "long"): DType.I64, ("long", "signed"): DType.I64,
    ("int", "long", "signed"): DType.I64, ("long", "long"): DType.I64, ("int", "long", "long"): DType.I64,
    ("long", "long", "signed"): DType.I64, ("int", "long", "long", "signed"): DType.I64,
    ("char",): DType.I8, ("char", "signed"): DType.I8,
}


@dataclass(frozen=True)
class CType:
    """What looper needs of a declared type."""

    dtype: DType | None  # None: not an element type looper handles (unsigned, struct, pointer, ...)
    spelling: str  # the element type as written after typedefs, for messages ("unsigned int")
    dims: tuple[c_ast.Node | None, ...] = ()  # array extents, outermost first (None: `[]`, `*`)
    pointer: bool = False  # declared as a pointer: its value, and so its memory, is the code's
    const: bool = False  # the elements are const

    @property
    def is_array(self) -> bool:
        return bool(self.dims)

    @property
    def is_scalar(self) -> bool:
        return not self.dims and not self.pointer

    @property
    def is_integer(self) -> bool:
        return self.is_scalar and self.dtype is not None and not self.dtype.is_float


class TypeTable:
    """The typedefs of a translation unit, in the order they were declared."""

    def __init__(self):
        self.typedefs: dict[str, c_ast.Node] = {}

    def add(self, node: c_ast.Typedef) -> None:
        self.typedefs.setdefault(node.name, node.type)

    def resolve(self, node: c_ast.Node) -> CType:
        """The CType of a declaration's type node (TypeDecl / ArrayDecl / PtrDecl / Typename)."""
        return self._resolve(node, 0)

    def _resolve(self, node: c_ast.Node, depth: int) -> CType:
        if depth > 64:
            return CType(None, "a recursive typedef")
        if isinstance(node, c_ast.Typename):
            return self._resolve(node.type, depth + 1)
        if isinstance(node, c_ast.ArrayDecl):
            inner = self._resolve(node.type, depth + 1)
            if inner.pointer:  # an array of pointers
                return CType(None, f"array of {_spelled(inner)}", (), True)
            return CType(inner.dtype, inner.spelling, (node.dim,) + inner.dims, inner.pointer, inner.const)
        if isinstance(node, c_ast.PtrDecl):
            inner = self._resolve(node.type, depth + 1)
            if inner.pointer or inner.dtype is None:  # to pointers, structs, functions
                return CType(None, f"{_spelled(inner)} *", (), True, inner.const)
            # to elements or to arrays of them: an array with an open first extent
            return CType(inner.dtype, inner.spelling, (None,) + inner.dims, True, inner.const)
        if isinstance(node, c_ast.FuncDecl):
            return CType(None, "function")
        if isinstance(node, c_ast.TypeDecl):
            const = "const" in (node.quals or [])
            t = node.type
            if isinstance(t, c_ast.IdentifierType):
                words = [w for w in t.names if w not in ("const", "volatile", "restrict")]
                if len(words) == 1 and words[0] in self.typedefs:
                    inner = self._resolve(self.typedefs[words[0]], depth + 1)
                    return CType(inner.dtype, inner.spelling, inner.dims, inner.pointer, inner.const or const)
                key = tuple(sorted(words))
                return CType(_ARITHMETIC.get(key), " ".join(words), (), False, const)
            if isinstance(t, (c_ast.Struct, c_ast.Union, c_ast.Enum)):
                kind = type(t).__name__.lower()
                return CType(None, f"{kind} {t.name or ''}".strip(), (), False, const)
        return CType(None, type(node).__name__)


def _spelled(t: CType) -> str:
    """A pointer type as C spells it (`double *`), for messages."""
    return t.spelling + (" *" if t.pointer and t.dtype is not None else "")
