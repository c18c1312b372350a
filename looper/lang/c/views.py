"""The arrays of a scop as the IR sees them, at its sizes: extents, logical dimensions, reach.

Declared extents are evaluated at the sizes.  An array whose first extent is open (a pointer, `A[]`,
`A[][M]`) takes it from what its subscripts reach (`layout.reach`): the scop is extracted once
without bound checks, isl bounds every subscript over the statement instances, and the extent is
one past the largest first subscript.  A flat open array whose subscripts name products of sizes is
delinearized (`layout.delinearize`) when every inner index stays inside its dimension; otherwise,
or when its logical outermost index could be negative, it stays one-dimensional.  A first
subscript that can be negative is an error: the IR's arrays start at 0.

The reach also bounds the overlap test of the in-place code (`codegen.inplace`): two arrays one of
which is written must not share an element of what the scop reaches in them.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import LooperSyntaxError
from ...ir.extract import extract_statements
from ...ir.program import Affine, Array, Assign, Guard, Load, Loop, Node, walk
from .layout import Delinearized, delinearize, first_below_zero, reach
from .lower import ScopTree
from .scops import Locator
from .specialize import Specializer


@dataclass(frozen=True)
class ArrayViews:
    """The specialized tree and how it sees each array (user names)."""

    nodes: tuple[Node, ...]
    extents: dict[str, tuple[int, ...]]  # every array: its extents in the IR, outermost first
    strides: dict[str, tuple[int, ...]]  # delinearized flat arrays: each logical dimension's stride
    # every array: the first and one past the last element of `*A` (a row of `A[][M]`) the scop
    # may reach; the declared extent for an array declared with one
    reach: dict[str, tuple[int, int]]


def array_views(tree: ScopTree, shapes: dict[str, tuple], sizes: dict[str, int], rename: dict[str, str],
                loc: Locator) -> ArrayViews:
    """The specialized tree, every array's extents and reach, the delinearized arrays' strides
    (`shapes`: declared extents by user name, None where open)."""
    declared = _declared(tree, shapes, sizes, loc)
    open_ = [n for n, e in declared.items() if e[0] is None]
    layouts = {}
    for n in open_:
        if len(declared[n]) == 1:
            d = delinearize([ld.index[0] for ld in _loads(tree.nodes) if ld.array == n])
            if d is not None:
                layouts[n] = d
    while True:
        nodes = Specializer(sizes, rename, layouts).nodes(tree.nodes)
        if not open_:
            return ArrayViews(nodes, declared, {}, {n: (0, e[0]) for n, e in declared.items()})
        statements = extract_statements(nodes, _provisional(tree, declared, layouts, rename), {},
                                        loc.pp.path, check_bounds=False)
        reached = {n: reach(statements, rename[n], layouts[n].rank if n in layouts else len(declared[n]))
                   for n in open_}
        misfits = [n for n, d in layouts.items()
                   if not reached[n].fits(d.inner_extents(sizes))
                   or (reached[n].bounds is not None and reached[n].bounds[0][0] < 0)]
        if not misfits:
            break
        for n in misfits:
            del layouts[n]
    extents = dict(declared)
    guard = {n: (0, e[0]) for n, e in declared.items() if e[0] is not None}
    for n in open_:
        r = reached[n]
        if r.bounds is not None and r.bounds[0][0] < 0:
            raise _negative(statements, n, rename[n], sizes, loc)
        inner = layouts[n].inner_extents(sizes) if n in layouts else declared[n][1:]
        extents[n] = (r.bounds[0][1] if r.bounds is not None else 1,) + tuple(inner)
        flat = reach(statements, rename[n], len(extents[n]), layouts[n].stride_values(sizes)) \
            if n in layouts else r
        guard[n] = flat.bounds[0] if flat.bounds is not None else (0, 0)
    strides = {n: d.stride_values(sizes) for n, d in layouts.items()}
    return ArrayViews(nodes, extents, strides, guard)


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


def _provisional(tree: ScopTree, declared, layouts: dict[str, Delinearized], rename) -> dict[str, Array]:
    """The scop's data with any extents: the unchecked extraction only needs names, types, ranks."""
    arrays = {}
    for name, sym in tree.data.items():
        rank = layouts[name].rank if name in layouts else len(declared.get(name, ()))
        arrays[rename[name]] = Array(rename[name], sym.ctype.dtype, (Affine(),) * rank, (1,) * rank, "param")
    return arrays


def _negative(statements, name: str, internal: str, sizes: dict[str, int], loc: Locator) -> LooperSyntaxError:
    st, access, example = first_below_zero(statements, internal)
    sub = ", ".join(a.render() for a in access.index)
    return LooperSyntaxError(
        f"subscript {name}[{sub}] can be negative (e.g. {name}{example}) at sizes {_show(sizes)}: the "
        f"first extent of '{name}' is open (a pointer, or declared {name}[]), and looper takes it from "
        "index 0 up (pass a pointer to the first element the scop reaches)", loc.pp.path, st.line, 1)


def _loads(nodes):
    """Every array access of a lowered tree (targets and reads)."""
    for n in nodes:
        if isinstance(n, Loop):
            yield from _loads(n.body)
        elif isinstance(n, Guard):
            yield from _loads(n.then)
            yield from _loads(n.orelse)
        elif isinstance(n, Assign):
            yield n.target
            yield from (e for e in walk(n.value) if isinstance(e, Load))


def _show(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "(none)"
