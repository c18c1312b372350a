"""The arrays of a scop as the IR sees them, at its sizes: extents, logical dimensions, reach.

Declared extents are evaluated at the sizes.  An array whose first extent is open (`A[]`,
`A[][M]`) takes it from what its subscripts reach (`layout.reach`): the scop is extracted once
without bound checks, isl bounds every subscript over the statement instances, and the extent is
one past the largest first subscript.  A first subscript that can be negative is an error: the
IR's arrays start at 0.

The reach also bounds the overlap test of the in-place code (`codegen.inplace`): two arrays one of
which is written must not share an element of what the scop reaches in them.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import LooperSyntaxError
from ...ir.extract import extract_statements
from ...ir.program import Affine, Array, Node
from .layout import first_below_zero, reach
from .lower import ScopTree
from .scops import Locator
from .specialize import Specializer


@dataclass(frozen=True)
class ArrayViews:
    """The specialized tree and how it sees each array (user names)."""

    nodes: tuple[Node, ...]
    extents: dict[str, tuple[int, ...]]  # every array: its extents in the IR, outermost first
    # every array: the first and one past the last element of `*A` (a row of `A[][M]`) the scop
    # may reach; the declared extent for an array declared with one
    reach: dict[str, tuple[int, int]]


def array_views(tree: ScopTree, shapes: dict[str, tuple], sizes: dict[str, int], rename: dict[str, str],
                loc: Locator) -> ArrayViews:
    declared = _declared(tree, shapes, sizes, loc)
    open_ = [n for n, e in declared.items() if e[0] is None]
    nodes = Specializer(sizes, rename).nodes(tree.nodes)
    if not open_:
        return ArrayViews(nodes, declared, {n: (0, e[0]) for n, e in declared.items()})
    statements = extract_statements(nodes, _provisional(tree, declared, rename), {}, loc.pp.path,
                                    check_bounds=False)
    extents = dict(declared)
    guard = {n: (0, e[0]) for n, e in declared.items() if e[0] is not None}
    for n in open_:
        r = reach(statements, rename[n], len(declared[n]))
        if r.bounds is not None and r.bounds[0][0] < 0:
            raise _negative(statements, n, rename[n], sizes, loc)
        extents[n] = (r.bounds[0][1] if r.bounds is not None else 1,) + tuple(declared[n][1:])
        guard[n] = r.bounds[0] if r.bounds is not None else (0, 0)
    return ArrayViews(nodes, extents, guard)


def _declared(tree: ScopTree, shapes: dict[str, tuple], sizes: dict[str, int], loc: Locator
              ) -> dict[str, tuple[int | None, ...]]:
    """Declared extents at the sizes (None where the declaration leaves one open)."""
    out = {}
    for name, shape in shapes.items():
        extent = tuple(None if s is None else s.evaluate(sizes) for s in shape)
        if any(e is not None and e <= 0 for e in extent):
            sym = tree.data[name]
            shown = ["?" if e is None else e for e in extent]
            raise loc.error(sym.decl, f"array '{name}' has an extent {shown} at sizes {_show(sizes)}", name)
        out[name] = extent
    return out


def _provisional(tree: ScopTree, declared, rename) -> dict[str, Array]:
    """The scop's data with any extents: the unchecked extraction only needs names, types, ranks."""
    arrays = {}
    for name, sym in tree.data.items():
        rank = len(declared.get(name, ()))
        arrays[rename[name]] = Array(rename[name], sym.ctype.dtype, (Affine(),) * rank, (1,) * rank, "param")
    return arrays


def _negative(statements, name: str, internal: str, sizes: dict[str, int], loc: Locator) -> LooperSyntaxError:
    st, access, example = first_below_zero(statements, internal)
    sub = ", ".join(a.render() for a in access.index)
    return LooperSyntaxError(
        f"subscript {name}[{sub}] can be negative (e.g. {name}{example}) at sizes {_show(sizes)}: the "
        f"first extent of '{name}' is open (declared {name}[]), and looper takes it from index 0 up "
        "(pass a pointer to the first element the scop reaches)", loc.pp.path, st.line, 1)


def _show(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "(none)"
