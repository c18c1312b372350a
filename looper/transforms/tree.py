"""The loop tree of a lowered schedule: which statements share which loop.

In 2d+1 form two statements share the loop at (odd) row k exactly when they agree on every static
(even) row before k.  The tree is rebuilt from the rows whenever it is needed, so it is always the
truth about the schedule that codegen will print.
"""
from __future__ import annotations

from dataclasses import dataclass

from .schedule import Lowered, Row


@dataclass(frozen=True)
class LoopNode:
    """A loop at schedule row `row` enclosing `statements`; children in execution order."""

    row: int
    statements: frozenset[str]
    children: tuple["LoopNode | str", ...]
    parent: "LoopNode | None" = None  # set by `loop_tree`, not part of identity

    @property
    def loops(self) -> list["LoopNode"]:
        return [c for c in self.children if isinstance(c, LoopNode)]

    @property
    def is_innermost(self) -> bool:
        return not self.loops

    def walk(self):
        yield self
        for c in self.loops:
            yield from c.walk()

    def key(self) -> tuple[int, tuple[str, ...]]:
        return self.row, tuple(sorted(self.statements))

    def __hash__(self) -> int:
        return hash(self.key())

    def __eq__(self, other) -> bool:
        return isinstance(other, LoopNode) and self.key() == other.key()


@dataclass(frozen=True)
class LoopTree:
    lowered: Lowered
    roots: tuple["LoopNode | str", ...]  # top level: root loop nests and loop-free statements

    @property
    def nests(self) -> list[LoopNode]:
        return [r for r in self.roots if isinstance(r, LoopNode)]

    def loops(self) -> list[LoopNode]:
        return [l for n in self.nests for l in n.walk()]

    def find(self, row: int, statements) -> LoopNode | None:
        key = (row, tuple(sorted(statements)))
        for l in self.loops():
            if l.key() == key:
                return l
        return None

    def enclosing(self, loop: LoopNode) -> list[LoopNode]:
        """Loops enclosing `loop`, outermost first."""
        out = []
        p = loop.parent
        while p is not None:
            out.append(p)
            p = p.parent
        return out[::-1]

    def chain(self, loop: LoopNode) -> list[LoopNode]:
        """The perfectly nested band starting at `loop`: inner loops with the same statements."""
        out = [loop]
        while len(out[-1].children) == 1 and isinstance(out[-1].children[0], LoopNode) \
                and out[-1].children[0].statements == loop.statements:
            out.append(out[-1].children[0])
        return out


class IllFormed(ValueError):
    """Statements that agree on every static row but not on whether a row is a loop."""


def loop_tree(lowered: Lowered) -> LoopTree:
    """The loop tree of a lowered schedule (built once per schedule: legality, features and code
    generation all ask for it)."""
    cached = lowered.__dict__.get("_loop_tree")
    if cached is not None:
        if isinstance(cached, IllFormed):
            raise cached
        return cached
    try:
        tree = _build_tree(lowered)
    except IllFormed as e:
        lowered.__dict__["_loop_tree"] = e
        raise
    lowered.__dict__["_loop_tree"] = tree
    return tree


def _build_tree(lowered: Lowered) -> LoopTree:
    rows = lowered.rows
    n = lowered.n_rows

    def build(stmts: list[str], row: int) -> list:
        if row >= n:
            return sorted(stmts, key=_stmt_order)
        looping = [s for s in stmts if not rows[s][row].is_constant]
        if row % 2 == 1 and looping:
            if len(looping) != len(stmts):
                raise IllFormed(f"row {row}: {sorted(stmts)} mix loops and constants")
            return [LoopNode(row, frozenset(stmts), tuple(build(stmts, row + 1)))]
        if looping:
            raise IllFormed(f"static row {row} depends on loop iterators")
        groups: dict[int, list[str]] = {}
        for s in stmts:
            groups.setdefault(rows[s][row].const, []).append(s)
        out = []
        for v in sorted(groups):
            out.extend(build(groups[v], row + 1))
        return out

    roots = build([s.name for s in lowered.program.statements], 0)
    return LoopTree(lowered, tuple(_reparent(r, None) if isinstance(r, LoopNode) else r for r in roots))


def _reparent(node: LoopNode, parent: LoopNode | None) -> LoopNode:
    """Rebuild `node` with `parent` set, and its loop children pointing at the new node."""
    fresh = LoopNode(node.row, node.statements, (), parent)
    kids = tuple(_reparent(c, fresh) if isinstance(c, LoopNode) else c for c in node.children)
    object.__setattr__(fresh, "children", kids)
    return fresh


def _stmt_order(name: str) -> int:
    return int(name[1:])


def row_label(row: Row, iterators: tuple[str, ...]) -> str:
    """A readable name for a schedule row of one statement: i, -i, t+i, i_t (tile of i)."""
    terms = []
    for c, n in zip(row.coeffs, iterators):
        if c == 0:
            continue
        if c == 1:
            terms.append(f"+{n}")
        elif c == -1:
            terms.append(f"-{n}")
        else:
            terms.append(f"{c:+d}{n}")
    text = "".join(terms).lstrip("+") or str(row.const)
    if row.div != 1:
        return f"{text}_t" if len(terms) == 1 and text.isidentifier() else f"({text})_t"
    return text


def loop_label(lowered: Lowered, loop: LoopNode) -> str:
    st = min(loop.statements, key=_stmt_order)
    return row_label(lowered.rows[st][loop.row], lowered.program.statement(st).iterators)
