"""A C file with `#pragma scop` regions, read into one `Program` per region.

Each program is what the Python front end would build for the same loop nest (the same syntax
tree through `ir.extract`), plus what looper needs to run it on its own: the arrays and scalars the
scop uses, an init looper generates (`initgen`), and OUTPUTS = everything the scop writes that
outlives it.  Next to each program, a `CScop` keeps what the in-place output needs: the byte range
of the region in the original file, its original text, and the size variables the replacement
tests at run time.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pycparser import c_ast, c_generator

from ...errors import LooperSyntaxError, LooperUsageError
from ...ir.extract import extract_statements
from ...ir.program import Affine, Array, Output, Preamble, Program
from .initgen import generated_init
from .lower import ScopLowering, ScopTree
from .preamble import preamble
from .preprocess import Preprocessed, preprocess
from .scops import Locator, ScopSite, find_scops, parse_unit
from .sizes import size_values
from .specialize import internal_names
from .views import ArrayViews, array_views

SIZE_LABELS = ("MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE")
NAME_PREFIX = "looper_"


@dataclass(frozen=True)
class CScop:
    """One scop region: its program, and the text of the file it replaces."""

    program: Program
    function: str
    begin: int  # offset of the start of the `#pragma scop` line in the original text
    end: int  # offset just past the `#pragma endscop` line (its line ending included)
    inner: str  # the original text strictly between the two pragma lines
    text: str  # the region's original text, both pragma lines included
    begin_line: int
    end_line: int
    size_vars: dict[str, int]  # the C variables the replacement tests, with the values tuned for
    indent: str  # the indentation of the region's first line of code
    # pairs of arrays that may overlap in memory (a pointer, or a parameter, and another array,
    # one of them written): the replacement tests that they do not, as the polyhedral model assumes
    may_overlap: tuple[tuple[str, str], ...] = ()
    # the program's internal name -> the user's, where they differ (specialize.HARNESS_LOCALS)
    user_names: dict[str, str] = field(default_factory=dict)
    # user name -> the first and one past the last element of `*A` the scop may reach (the
    # declared extent, or what isl found the subscripts reach): the extent the overlap test checks
    reach: dict[str, tuple[int, int]] = field(default_factory=dict)
    # internal name -> the stride of each logical dimension of a delinearized flat array: its
    # accesses are printed on the user's pointer, through rows of them (`((double (*)[1000])A)[i][j]`)
    strides: dict[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class CFile:
    """A parsed C file."""

    path: str
    original: str
    scops: tuple[CScop, ...]
    prefix: str  # the prefix of looper's own names in the output; no identifier of the file has it
    cpp_flags: tuple[str, ...]
    size_label: str


def cpp_flags_for(size: str | None, defines: tuple[str, ...] = (), includes: tuple[str, ...] = (),
                  undefines: tuple[str, ...] = ()) -> tuple[str, ...]:
    """gcc's preprocessor flags for looper's options: `--size S` is PolyBench's `-DS_DATASET`."""
    flags: list[str] = []
    for d in includes:
        flags.append(f"-I{d}")
    if size is not None:
        label = size.upper()
        if label not in SIZE_LABELS:
            raise LooperUsageError(f"--size {size}: C input takes a PolyBench dataset "
                                   f"({', '.join(SIZE_LABELS)}), passed to gcc as -D{label}_DATASET")
        flags.append(f"-D{label}_DATASET")
    for d in defines:
        flags.append(f"-D{d}")
    for u in undefines:
        flags.append(f"-U{u}")
    return tuple(flags)


def size_label(flags: tuple[str, ...]) -> str:
    """"LARGE" for -DLARGE_DATASET, with the other valued -D flags: "LARGE+NI=500"."""
    label = "default"
    extra = []
    for f in flags:
        m = re.fullmatch(r"-D(MINI|SMALL|MEDIUM|LARGE|EXTRALARGE)_DATASET", f)
        if m:
            label = m.group(1)
        elif f.startswith("-D") and "=" in f:
            extra.append(f[2:])
    return label + ("+" + ",".join(extra) if extra else "")


def parse_c_file(path: str | Path, cpp_flags: tuple[str, ...] = (), cc: str = "gcc") -> CFile:
    """Preprocess, parse and lower every scop of a C file (errors: `LooperSyntaxError` at the
    user's FILE:LINE:COL)."""
    path = str(path)
    pp = preprocess(path, tuple(cpp_flags), cc)
    loc = Locator(pp)
    unit = parse_unit(pp)
    sites, types = find_scops(unit, pp, loc)
    prefix = fresh_prefix(pp.identifiers)
    label = size_label(tuple(cpp_flags))
    starts = _line_starts(pp.original)
    before = preamble(pp)
    scops = []
    for site in sites:
        tree = ScopLowering(site, types, loc)
        scops.append(_scop(site, tree, len(sites), pp, loc, label, prefix, starts, before))
    return CFile(path, pp.original, tuple(scops), prefix, tuple(cpp_flags), label)


def fresh_prefix(identifiers: frozenset[str]) -> str:
    """`looper_`, or `looper1_`, `looper2_`, ...: the first no identifier of the file starts with."""
    k = 0
    while True:
        p = NAME_PREFIX if k == 0 else f"looper{k}_"
        if not any(i.startswith(p) for i in identifiers):
            return p
        k += 1


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return starts


def _scop(site: ScopSite, lowering: ScopLowering, n_scops: int, pp: Preprocessed, loc: Locator,
          label: str, prefix: str, starts: list[int], before: Preamble | None = None) -> CScop:
    """One scop region as a `Program` (arrays, specialized statements, looper's own init) and the
    byte range of the user's file it replaces."""
    tree: ScopTree = lowering.run()
    shapes = _shapes(tree, lowering)
    sizes = size_values(lowering.sizes, pp.macros, loc)
    _check_iterators_dead(tree, site, pp)
    rename = internal_names(tree.data, prefix)
    declared = sorted(tree.data.items(), key=lambda kv: _declaration_order(kv[1], pp.path))
    views = array_views(tree, shapes, sizes, rename, loc)
    arrays = _arrays(declared, views, rename, tree, site)
    statements = _statements(views.nodes, arrays, rename, sizes, pp)
    nodes = views.nodes
    written = {rename[n] for n in tree.written if n in rename}
    scratch = {rename[n] for n, a in tree.data.items() if n in rename and site.is_scratch(n)}
    outputs = tuple(Output(n) for n, a in arrays.items() if n in written and a.role == "param" and n not in scratch)
    if not outputs:
        raise LooperSyntaxError("the scop writes nothing that outlives it (every variable it writes is a "
                                "local that nothing reads afterwards)", pp.path, site.begin_line, None)
    stem = Path(pp.path).stem
    name = stem if n_scops == 1 else f"{stem}-{site.index + 1}"
    program = Program(
        name=name, path=pp.path, source=_text_for_hash(pp.text) + f"\n/* looper scop {site.index} */\n",
        doc=f"{Path(pp.path).name}: scop {site.index + 1} in {site.function}() (lines "
            f"{site.begin_line}-{site.end_line})",
        size_label=label, sizes={}, arrays=arrays,
        init=generated_init([a for a in arrays.values() if a.role == "param"], prefix), init_locals={},
        kernel=nodes, statements=tuple(statements), outputs=outputs, kernel_text=kernel_text(site),
        passed=frozenset(rename[n] for n, sym in declared
                         if n in views.extents and (sym.kind == "param" or sym.ctype.pointer)),
        preamble=before)
    begin = starts[site.begin_line - 1]
    end = starts[site.end_line] if site.end_line < len(starts) else len(pp.original)
    inner = pp.original[starts[site.begin_line]:starts[site.end_line - 1]]
    users = {internal: user for user, internal in rename.items() if internal != user}
    # scalars a pointer may point to: globals, statics, and those whose address is taken
    reachable = [u for u, sym in declared if u not in shapes
                 and (sym.kind == "global" or sym.static or u in site.address_taken)]
    overlap = _may_overlap(tree, [u for u, _ in declared if u in shapes], reachable)
    reach = {**views.reach, **{u: (0, 1) for u in reachable}}
    return CScop(program, site.function, begin, end, inner, pp.original[begin:end], site.begin_line, site.end_line,
                 dict(sizes), _indent(inner), overlap, users, reach,
                 {rename[n]: s for n, s in views.strides.items()})


def kernel_text(site: ScopSite) -> str:
    """The region's statements as pycparser prints them from the preprocessed text: macros
    expanded, comments and layout gone (`Program.kernel_text`, what tuning records key on)."""
    return c_generator.CGenerator().visit(c_ast.Compound(list(site.items)))


def _shapes(tree: ScopTree, lowering: ScopLowering) -> dict[str, tuple]:
    """Each array's declared extents as forms in the sizes (None: left open, `A[]`, `*A`)."""
    shapes = {}
    for name, sym in tree.data.items():
        if sym.ctype.is_array:
            shapes[name] = tuple(None if d is None else lowering.affine(d, f"extent of array '{name}'")
                                 for d in sym.ctype.dims)
    return shapes


def _check_iterators_dead(tree: ScopTree, site: ScopSite, pp: Preprocessed) -> None:
    """A loop variable read after the scop is an error: looper's loops leave it elsewhere."""
    for name, sym in tree.iterators.items():
        where = site.read_after(name) if sym is not None else None
        if where is not None:
            what = "is a global" if sym.kind == "global" or sym.static else \
                "may be read after the scop" + (f" (line {where.coord.line})" if isinstance(where, c_ast.ID) else "")
            raise LooperSyntaxError(
                f"'{name}', a loop variable of the scop, {what}: looper's code does not leave it at the "
                f"value the original loops do (use a local, assigned before it is read again)",
                pp.path, site.end_line, 1)


def _arrays(declared, views: ArrayViews, rename, tree: ScopTree, site: ScopSite) -> dict[str, Array]:
    """The scop's data as IR arrays and scalars, in declaration order."""
    arrays: dict[str, Array] = {}
    for name, sym in declared:
        if name in views.extents:
            extent = views.extents[name]
            shape = tuple(Affine.constant(e) for e in extent)  # sizes are constants (specialize.py)
            arrays[rename[name]] = Array(rename[name], sym.ctype.dtype, shape, extent, "param")
        else:
            # a scalar the scop writes and nothing reads after it is the kernel's own: the
            # search may privatize it; any other scalar is state the caller sees
            private = name in tree.written and sym.kind in ("local", "param") and not sym.static \
                and not site.may_read_after(name)
            arrays[rename[name]] = Array(rename[name], sym.ctype.dtype, (), (), "local" if private else "param")
    return arrays


def _statements(nodes, arrays, rename, sizes, pp: Preprocessed):
    """The polyhedral statements, errors said in the user's names and sizes."""
    try:
        return extract_statements(nodes, arrays, {}, pp.path)
    except LooperSyntaxError as e:
        for user, internal in rename.items():
            e.message = e.message.replace(f"{internal}[", f"{user}[")
        if e.message.endswith("at sizes "):
            e.message += _show(sizes)
        raise


def _may_overlap(tree: ScopTree, names: list[str], scalars: list[str] = ()) -> tuple[tuple[str, str], ...]:
    """Array pairs (user names) whose storage the code decides, at least one of them written: an
    array parameter is a pointer the caller chose (it may point into another parameter or a
    global); a pointer may point anywhere, into the function's own arrays too, and at one of the
    `scalars` (globals, statics, locals whose address is taken)."""
    def kind(n: str) -> str:
        sym = tree.data[n]
        if sym.ctype.pointer:
            return "pointer"
        return "param" if sym.kind == "param" else "shared" if sym.kind == "global" or sym.static else "own"

    kinds = {n: kind(n) for n in names}
    pairs = []
    for k, x in enumerate(names):
        for y in names[k + 1:]:
            pair = {kinds[x], kinds[y]}
            if ("pointer" in pair or ("param" in pair and "own" not in pair)) \
                    and (x in tree.written or y in tree.written):
                pairs.append((x, y))
    for x in names:
        if kinds[x] == "pointer":
            pairs += [(x, s) for s in scalars if x in tree.written or s in tree.written]
    return tuple(pairs)


def _declaration_order(sym, path: str) -> tuple:
    """Parameters in signature order, then locals, then globals, each as declared."""
    c = sym.decl.coord
    rank = {"param": 0, "local": 1, "global": 2}[sym.kind]
    return (rank, c is None or c.file != path, c.line if c else 0, c.column if c else 0)


def _indent(text: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return line[:len(line) - len(line.lstrip())]
    return "  "


def _show(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "(none)"


def _text_for_hash(text: str) -> str:
    """The text with undecodable bytes replaced: a program's source is hashed as UTF-8."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
