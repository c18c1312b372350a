"""The loop tree of a lowered schedule: which statements share which loop.

In the 2d+1 layout two statements share the loop at (odd) row k exactly when they agree on every
static (even) row before k.  The tree is built from the rows (once per schedule,
`Lowered.tree`), so it is always the truth about the schedule that codegen will print.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from .rows import LoopRef, Row, in_order, is_loop_row



@dataclass(frozen=True)
class LoopNode:
    """A loop at schedule row `row` enclosing `statements`; children in execution order."""

    row: int
    statements: frozenset[str]
    children: tuple["LoopNode | str", ...]

    @property
    def loops(self) -> list["LoopNode"]:
        return [c for c in self.children if isinstance(c, LoopNode)]

    @property
    def is_innermost(self) -> bool:
        return not self.loops

    @property
    def ref(self) -> LoopRef:
        """The loop's structural name (statements in textual order, row)."""
        return LoopRef(in_order(self.statements), self.row)

    def walk(self) -> Iterator["LoopNode"]:
        """This loop and every loop inside it, outer before inner."""
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
    """Root nests and loop-free statements, in execution order, with each loop's parent."""

    roots: tuple["LoopNode | str", ...]
    parents: dict[tuple, LoopNode | None] = field(default_factory=dict, repr=False, compare=False)

    @property
    def nests(self) -> list[LoopNode]:
        return [r for r in self.roots if isinstance(r, LoopNode)]

    def loops(self) -> list[LoopNode]:
        """Every loop, nest by nest, outer before inner."""
        return [l for n in self.nests for l in n.walk()]

    def find(self, row: int, statements) -> LoopNode | None:
        """The loop at `row` over exactly `statements`, if there is one."""
        key = (row, tuple(sorted(statements)))
        for l in self.loops():
            if l.key() == key:
                return l
        return None

    def parent(self, loop: LoopNode) -> LoopNode | None:
        """The loop directly around `loop` (None for a root nest)."""
        return self.parents.get(loop.key())

    def enclosing(self, loop: LoopNode) -> list[LoopNode]:
        """Loops enclosing `loop`, outermost first."""
        out = []
        p = self.parent(loop)
        while p is not None:
            out.append(p)
            p = self.parent(p)
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


def build_tree(rows: dict[str, tuple[Row, ...]], statements: list[str]) -> LoopTree:
    """The loop tree of per-statement rows (`statements` in textual order)."""
    n = len(next(iter(rows.values())))

    def alone(s: str, row: int) -> list:
        """`build` of one statement: its loop rows from `row` on, each inside the one before
        (most of a tree's subtrees; the search builds a tree for each of thousands of candidates)."""
        rs = rows[s]
        loops = [k for k in range(row, n) if not rs[k].is_constant]
        for k in loops:
            if not is_loop_row(k):
                raise IllFormed(f"static row {k} depends on loop iterators")
        node: LoopNode | str = s
        for k in reversed(loops):
            node = LoopNode(k, frozenset((s,)), (node,))
        return [node]

    def build(stmts: list[str], row: int) -> list:
        if len(stmts) == 1:
            return alone(stmts[0], row)
        if row >= n:
            return list(in_order(stmts))
        looping = [s for s in stmts if not rows[s][row].is_constant]
        if is_loop_row(row) and looping:
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

    roots = tuple(build(statements, 0))
    parents: dict[tuple, LoopNode | None] = {}
    for r in roots:
        if isinstance(r, LoopNode):
            _record_parents(r, None, parents)
    return LoopTree(roots, parents)


def _record_parents(node: LoopNode, parent: LoopNode | None, out: dict) -> None:
    out[node.key()] = parent
    for c in node.loops:
        _record_parents(c, node, out)
