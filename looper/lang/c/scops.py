"""Finding the scops of a parsed C file: each `#pragma scop` ... `#pragma endscop` region, the
function around it, the declarations visible in it, and what runs after it.

The region is a list of statements of one block; the text looper replaces is the original file's
lines from the `#pragma scop` line to the `#pragma endscop` line.  What runs after the region
decides which of its variables the replacement must leave as the original leaves them
(`Scop.may_read_after`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from pycparser import c_ast, c_parser

from ...errors import LooperSyntaxError
from .ctype import CType, TypeTable
from .liveness import first_read
from .preprocess import STUBS_FILE, Preprocessed, tokens

_PRAGMA_LINE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+(scop|endscop)[ \t]*(?://.*|/\*.*)?\r?$")


@dataclass(frozen=True)
class Symbol:
    """A declared variable visible at a scop."""

    name: str
    ctype: CType
    kind: str  # "param" | "local" | "global"
    static: bool  # static storage: its value outlives the call
    decl: c_ast.Decl


@dataclass
class ScopSite:
    """One scop region of a function, as parsed."""

    index: int
    function: str
    func: c_ast.FuncDef
    items: list  # the statements between the two pragmas
    begin_line: int  # the `#pragma scop` line (1-based, in the user's file)
    end_line: int  # the `#pragma endscop` line
    symbols: dict[str, Symbol]
    after: list[list]  # what runs after the region: the rest of its block, then of each enclosing one
    after_anything: bool  # the region sits in a loop or the function has labels: anything may follow
    address_taken: set[str] = field(default_factory=set)

    def may_read_after(self, name: str) -> bool:
        return self.read_after(name) is not None

    def is_scratch(self, name: str) -> bool:
        """Whether `name` is a local array of the function that only the region uses (automatic
        storage, no pointer, its address never taken, named nowhere else in the function): nothing can observe
        what the region leaves in it, so it is no output, and the search may expand it."""
        sym = self.symbols.get(name)
        return sym is not None and sym.kind == "local" and not sym.static and not sym.ctype.pointer \
            and name not in self.address_taken and _first_mention(self.func.body, name, self.items) is None

    def read_after(self, name: str):
        """Where code after the region may read `name`'s value as the region left it (a node, or
        the function itself when the variable outlives the call), or None: every path from the
        region assigns it first (`liveness`).  A region in a loop, or in a function with labels,
        may be followed by anything: there any mention outside the region counts."""
        sym = self.symbols.get(name)
        if sym is None or sym.kind == "global" or sym.static or name in self.address_taken:
            return sym.decl if sym is not None else self.func
        if self.after_anything:
            return _first_mention(self.func.body, name, self.items)
        return first_read(self.after, name)


class Locator:
    """Maps pycparser's coordinates to the user's file: lines come from gcc's line markers;
    a column is moved to where the token stands in the original line when a macro expansion
    shifted it (`_PB_NI` -> `ni`)."""

    def __init__(self, pp: Preprocessed):
        self.pp = pp
        self.lines = pp.original.split("\n")

    def error(self, node, message: str, token: str | None = None) -> LooperSyntaxError:
        coord = getattr(node, "coord", None) if node is not None else None
        if coord is None:
            return LooperSyntaxError(message, self.pp.path)
        return LooperSyntaxError(message, coord.file or self.pp.path, coord.line,
                                 self.column(coord, token))

    def column(self, coord, token: str | None) -> int | None:
        col = getattr(coord, "column", None)
        if coord.file != self.pp.path or not coord.line or coord.line > len(self.lines) or not token:
            return col
        text = self.lines[coord.line - 1]
        if col and text[col - 1:col - 1 + len(token)] == token:
            return col
        m = re.search(r"(?<![\w$])" + re.escape(token) + r"(?![\w$])", text)
        return m.start() + 1 if m else col


def parse_unit(pp: Preprocessed) -> c_ast.FileAST:
    """pycparser's tree of the prepared text; a syntax error is the user's, at their line."""
    try:
        return c_parser.CParser().parse(pp.text, pp.path)
    except c_parser.ParseError as e:
        msg = str(e)
        m = re.match(r"^(.*?):(\d+):(?:(\d+):)?\s*(.*)$", msg, re.S)
        if m and m.group(1) != STUBS_FILE:
            where, line, col, what = m.group(1), int(m.group(2)), m.group(3), m.group(4).strip()
            return_col = int(col) if col else None
            raise LooperSyntaxError(f"C syntax error: {_syntax_message(what)}", where, line, return_col) from None
        raise LooperSyntaxError(f"C syntax error: {msg}", pp.path) from None
    except (RecursionError, AssertionError, ValueError, TypeError, IndexError, KeyError) as e:
        # pycparser gave up in an unexpected way (nesting too deep, a construct it mishandles):
        # still the user's input, still one line
        raise LooperSyntaxError(f"the C parser (pycparser) failed: {type(e).__name__}: {e}", pp.path) from None


def _syntax_message(what: str) -> str:
    if what.startswith("before:"):
        return f"unexpected '{what[7:].strip()}'"
    return what


def find_scops(unit: c_ast.FileAST, pp: Preprocessed, loc: Locator) -> tuple[list[ScopSite], TypeTable]:
    """Every scop of the file, in textual order, with what is visible in it."""
    types = TypeTable()
    globals_: dict[str, Symbol] = {}
    sites: list[ScopSite] = []
    for ext in unit.ext:
        if isinstance(ext, c_ast.Typedef):
            types.add(ext)
        elif isinstance(ext, c_ast.Decl) and ext.name and not isinstance(ext.type, c_ast.FuncDecl):
            if "typedef" not in (ext.storage or []):
                globals_[ext.name] = Symbol(ext.name, types.resolve(ext.type), "global",
                                            "static" in (ext.storage or []), ext)
        elif isinstance(ext, c_ast.Pragma) and _pragma_word(ext) in ("scop", "endscop"):
            raise loc.error(ext, f"#pragma {_pragma_word(ext)} outside a function")
        elif isinstance(ext, c_ast.FuncDef):
            _FunctionWalker(ext, types, globals_, sites, loc).walk()
    if not sites:
        raise LooperSyntaxError("no '#pragma scop' region: mark the loop nest to optimize with "
                                "#pragma scop / #pragma endscop", pp.path)
    for s in sites:
        for line, word in ((s.begin_line, "scop"), (s.end_line, "endscop")):
            text = loc.lines[line - 1] if 0 < line <= len(loc.lines) else ""
            m = _PRAGMA_LINE.match(text)
            if not m or m.group(1) != word:
                raise LooperSyntaxError(f"'#pragma {word}' must stand on a line of its own in this file "
                                        "(not come from a macro): looper replaces those lines",
                                        pp.path, line, None)
    return sites, types


def _pragma_word(p: c_ast.Pragma) -> str:
    return (p.string or "").strip().split(" ")[0] if p.string else ""


class _FunctionWalker:
    """Walks one function body, keeping the declarations in scope, to find its scops."""

    def __init__(self, func: c_ast.FuncDef, types: TypeTable, globals_: dict[str, Symbol],
                 sites: list[ScopSite], loc: Locator):
        self.func = func
        self.types = types
        self.loc = loc
        self.sites = sites
        self.name = func.decl.name
        self.scopes: list[dict[str, Symbol]] = [dict(globals_)]
        params: dict[str, Symbol] = {}
        fdecl = func.decl.type
        if isinstance(fdecl, c_ast.FuncDecl) and fdecl.args is not None:
            for p in fdecl.args.params:
                if isinstance(p, c_ast.Decl) and p.name:
                    params[p.name] = Symbol(p.name, types.resolve(p.type), "param", False, p)
        self.scopes.append(params)
        self.address_taken = {n.expr.name for n in _walk(func.body)
                              if isinstance(n, c_ast.UnaryOp) and n.op == "&" and isinstance(n.expr, c_ast.ID)}
        self.has_labels = any(isinstance(n, (c_ast.Label, c_ast.Goto)) for n in _walk(func.body))

    def walk(self) -> None:
        self.block(self.func.body, [], False)

    def visible(self) -> dict[str, Symbol]:
        out: dict[str, Symbol] = {}
        for s in self.scopes:
            out.update(s)
        return out

    def block(self, node, rest: list[list], in_loop: bool) -> None:
        """Visit a statement; `rest` is what runs after it (its enclosing blocks' later items,
        block by block from the innermost)."""
        if isinstance(node, c_ast.Compound):
            self.scopes.append({})
            items = list(node.block_items or [])
            k = 0
            while k < len(items):
                item = items[k]
                if isinstance(item, c_ast.Pragma) and _pragma_word(item) == "scop":
                    end = self.scop(items, k, rest, in_loop)
                    k = end + 1
                    continue
                if isinstance(item, c_ast.Pragma) and _pragma_word(item) == "endscop":
                    raise self.loc.error(item, "'#pragma endscop' without a '#pragma scop' before it "
                                               "in the same block")
                if isinstance(item, c_ast.Decl) and item.name and not isinstance(item.type, c_ast.FuncDecl):
                    self.scopes[-1][item.name] = Symbol(item.name, self.types.resolve(item.type), "local",
                                                        "static" in (item.storage or []), item)
                elif isinstance(item, c_ast.Typedef):
                    self.types.add(item)
                else:
                    self.block(item, [items[k + 1:]] + rest, in_loop)
                k += 1
            self.scopes.pop()
        elif isinstance(node, c_ast.If):
            for b in (node.iftrue, node.iffalse):
                if b is not None:
                    self.block(b, rest, in_loop)
        elif isinstance(node, (c_ast.For, c_ast.While, c_ast.DoWhile)):
            self.scopes.append({})
            if isinstance(node, c_ast.For) and isinstance(node.init, c_ast.DeclList):
                for d in node.init.decls:
                    self.scopes[-1][d.name] = Symbol(d.name, self.types.resolve(d.type), "local", False, d)
            if node.stmt is not None:
                self.block(node.stmt, rest, True)
            self.scopes.pop()
        elif isinstance(node, (c_ast.Switch, c_ast.Case, c_ast.Default, c_ast.Label)):
            for child in _children(node):
                self.block(child, rest, True)  # jumps: anything may run after anything
        elif isinstance(node, c_ast.Pragma) and _pragma_word(node) in ("scop", "endscop"):
            raise self.loc.error(node, f"'#pragma {_pragma_word(node)}' must be an item of a block "
                                       "({ ... })")

    def scop(self, items: list, k: int, rest: list, in_loop: bool) -> int:
        begin = items[k]
        end = None
        for j in range(k + 1, len(items)):
            item = items[j]
            if isinstance(item, c_ast.Pragma) and _pragma_word(item) == "scop":
                raise self.loc.error(item, "'#pragma scop' inside another scop (missing "
                                           "'#pragma endscop' before it)")
            if isinstance(item, c_ast.Pragma) and _pragma_word(item) == "endscop":
                end = j
                break
        if end is None:
            raise self.loc.error(begin, "'#pragma scop' without a matching '#pragma endscop' in the "
                                        "same block")
        if begin.coord.file != self.loc.pp.path:
            raise self.loc.error(begin, f"the scop is in '{begin.coord.file}': looper rewrites "
                                        f"{self.loc.pp.path} only")
        symbols = self.visible()
        body = items[k + 1:end]
        for item in body:  # declarations inside the region: report them where they are
            if isinstance(item, c_ast.Decl):
                raise self.loc.error(item, f"declaration of '{item.name}' inside the scop: declare it "
                                           "before '#pragma scop'", item.name)
        self.sites.append(ScopSite(
            index=len(self.sites), function=self.name, func=self.func, items=body,
            begin_line=begin.coord.line, end_line=items[end].coord.line, symbols=symbols,
            after=[items[end + 1:]] + rest, after_anything=in_loop or self.has_labels,
            address_taken=self.address_taken))
        return end


def _children(node) -> list:
    return [c for _, c in node.children()]


def _walk(node):
    """Every node below `node`, pre-order."""
    if node is None:
        return
    yield node
    for _, child in node.children():
        yield from _walk(child)


def _first_mention(node, name: str, skip=()):
    """The first ID `name` below `node` (outside the nodes in `skip`), or None."""
    skip_ids = {id(s) for s in skip}

    def visit(n):
        if id(n) in skip_ids:
            return None
        if isinstance(n, c_ast.ID) and n.name == name:
            return n
        for _, c in n.children():
            found = visit(c)
            if found is not None:
                return found
        return None

    return visit(node)


def identifiers_of(text: str) -> set[str]:
    return {t.text for t in tokens(text) if t.kind == "ident"}
