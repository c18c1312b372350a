"""Whether the code after a scop may read a variable's value as the scop left it.

looper's code does not leave the scop's loop variables (nor the scalars it privatizes) at the
values the original loops do, so such a variable must be dead when the region ends: every path
from there assigns it before it reads it (or leaves the function).  This is the classic backward
liveness question asked forward on the syntax tree, one statement at a time, in C's evaluation
order; each construct answers with its `Effect` on the variable:

- READ: some path may read the variable's incoming value (the answer names the node);
- KILL: every path that goes on assigns it first (`j = 0`, `for (j = 0; ...)`, a loop that
  provably runs once and assigns it in its body, both branches of an `if`), or returns;
- PASS: no path reads it, and not every path assigns it.

Conservative where C is subtle: operands whose order C leaves unspecified count as READ if any of
them reads; a loop body that can `break`/`continue` does not KILL; a `switch` that names the
variable READs it.  A declaration of the same name shadows it until its block ends.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from pycparser import c_ast

from .constants import const_int


class Effect(enum.Enum):
    PASS = "pass"
    KILL = "kill"
    READ = "read"


@dataclass(frozen=True)
class Flow:
    """What a construct does to the variable: its effect, the reading node (READ), and whether it
    declares a variable of the same name (the rest of its block is about another variable)."""

    effect: Effect
    node: c_ast.Node | None = None
    shadows: bool = False


PASS = Flow(Effect.PASS)
KILL = Flow(Effect.KILL)


def first_read(blocks: list[list], name: str):
    """The node where code after a region may first read `name`'s value as the region left it,
    or None.  `blocks`: the statements that run after the region, the rest of its own block
    first, then the rest of each enclosing block."""
    reads = _Reads(name)
    for items in blocks:
        flow = reads.sequence(items)
        if flow.effect is Effect.READ:
            return flow.node
        if flow.effect is Effect.KILL:
            return None
    return None


class _Reads:
    """The effect of statements and expressions on one variable."""

    def __init__(self, name: str):
        self.name = name

    # -- statements --------------------------------------------------------------------------------
    def sequence(self, items) -> Flow:
        """Items run one after the other; a shadowing declaration ends what concerns us."""
        for item in items:
            flow = self.statement(item)
            if flow.effect is not Effect.PASS:
                return Flow(flow.effect, flow.node)
            if flow.shadows:
                return PASS
        return PASS

    def statement(self, node) -> Flow:
        if node is None or isinstance(node, (c_ast.EmptyStatement, c_ast.Pragma, c_ast.Typedef,
                                             c_ast.Break, c_ast.Continue, c_ast.Goto)):
            return PASS
        if isinstance(node, c_ast.Compound):
            return self.sequence(node.block_items or [])
        if isinstance(node, c_ast.Decl):
            flow = self.expression(node.init) if node.init is not None else PASS
            return Flow(flow.effect, flow.node, node.name == self.name)
        if isinstance(node, c_ast.DeclList):
            flow = self.sequence(node.decls)
            return Flow(flow.effect, flow.node, any(d.name == self.name for d in node.decls))
        if isinstance(node, c_ast.If):
            return self.then(self.expression(node.cond),
                             lambda: self.either(self.statement(node.iftrue), self.statement(node.iffalse)))
        if isinstance(node, c_ast.For):
            return self.for_loop(node)
        if isinstance(node, c_ast.While):
            runs = const_int(node.cond) not in (None, 0)
            return self.then(self.expression(node.cond), lambda: self.body(node.stmt, runs))
        if isinstance(node, c_ast.DoWhile):
            return self.then(self.body(node.stmt, True), lambda: self.expression(node.cond))
        if isinstance(node, c_ast.Return):
            return self.then(self.expression(node.expr) if node.expr is not None else PASS, lambda: KILL)
        if isinstance(node, c_ast.Switch):
            return self.then(self.expression(node.cond), lambda: self.mention(node.stmt))
        if isinstance(node, (c_ast.Label, c_ast.Case, c_ast.Default)):
            return self.mention(node)  # jumps land here: only "no mention" is certain
        return self.expression(node)

    def for_loop(self, node: c_ast.For) -> Flow:
        """`for (init; cond; next) stmt`: init and the first test always run; the body and
        `next` may not (unless the first test is provably true)."""
        init = self.statement(node.init) if isinstance(node.init, c_ast.DeclList) else self.expression(node.init)
        if init.effect is not Effect.PASS:
            return Flow(init.effect, init.node)
        if init.shadows:
            return PASS
        runs = node.cond is None or _first_test_holds(node)
        flow = self.then(self.expression(node.cond), lambda: self.body(node.stmt, runs))
        if flow.effect is Effect.PASS:
            after = self.expression(node.next)  # runs after a body that did not assign it
            if after.effect is Effect.READ:
                return after
        return flow

    def body(self, stmt, runs: bool) -> Flow:
        """A loop body: a READ is a READ; a KILL counts only if the body runs at least once and
        no `break`/`continue` can skip the assignment."""
        flow = self.statement(stmt)
        if flow.effect is Effect.KILL and not (runs and not _jumps(stmt)):
            return PASS
        return Flow(flow.effect, flow.node)

    def mention(self, node) -> Flow:
        found = _first_mention(node, self.name)
        return Flow(Effect.READ, found) if found is not None else PASS

    # -- expressions -------------------------------------------------------------------------------
    def expression(self, node) -> Flow:
        if node is None:
            return PASS
        if isinstance(node, c_ast.ID):
            return Flow(Effect.READ, node) if node.name == self.name else PASS
        if isinstance(node, c_ast.Assignment):
            if isinstance(node.lvalue, c_ast.ID) and node.lvalue.name == self.name:
                if node.op != "=":
                    return Flow(Effect.READ, node.lvalue)
                return self.then(self.expression(node.rvalue), lambda: KILL)
            return self.unsequenced([node.lvalue, node.rvalue])
        if isinstance(node, c_ast.BinaryOp) and node.op in ("&&", "||"):
            return self.then(self.expression(node.left),
                             lambda: self.either(self.expression(node.right), PASS))
        if isinstance(node, c_ast.TernaryOp):
            return self.then(self.expression(node.cond),
                             lambda: self.either(self.expression(node.iftrue), self.expression(node.iffalse)))
        if isinstance(node, c_ast.ExprList):  # the comma operator: left to right
            return self.sequence(node.exprs)
        if isinstance(node, c_ast.FuncCall):
            args = list(node.args.exprs) if node.args is not None else []
            return self.unsequenced([node.name] + args)
        if isinstance(node, c_ast.StructRef):  # `s.j`: the field is no variable
            return self.expression(node.name)
        return self.unsequenced([c for _, c in node.children()])

    # -- combining -----------------------------------------------------------------------------------
    def then(self, first: Flow, rest) -> Flow:
        """`first` runs, then (unless it decided) `rest()`."""
        if first.effect is not Effect.PASS:
            return Flow(first.effect, first.node)
        flow = rest()
        return Flow(flow.effect, flow.node)

    @staticmethod
    def either(a: Flow, b: Flow) -> Flow:
        """One of two paths runs."""
        for f in (a, b):
            if f.effect is Effect.READ:
                return Flow(Effect.READ, f.node)
        return KILL if a.effect is Effect.KILL and b.effect is Effect.KILL else PASS

    def unsequenced(self, parts) -> Flow:
        """Operands in an order C leaves open: any read may come first."""
        flows = [self.expression(p) for p in parts]
        for f in flows:
            if f.effect is Effect.READ:
                return Flow(Effect.READ, f.node)
        return KILL if any(f.effect is Effect.KILL for f in flows) else PASS


def _first_test_holds(node: c_ast.For) -> bool:
    """Whether a loop's first test is true for certain: `for (v = c1; v < c2; ...)` with integer
    constants (after the preprocessor), so that its body runs at least once."""
    init = node.init
    if isinstance(init, c_ast.DeclList) and len(init.decls) == 1 and init.decls[0].init is not None:
        var, start = init.decls[0].name, const_int(init.decls[0].init)
    elif isinstance(init, c_ast.Assignment) and init.op == "=" and isinstance(init.lvalue, c_ast.ID):
        var, start = init.lvalue.name, const_int(init.rvalue)
    else:
        return False
    cond = node.cond
    if start is None or not isinstance(cond, c_ast.BinaryOp) or cond.op not in ("<", "<=", ">", ">=", "!="):
        return False
    if isinstance(cond.left, c_ast.ID) and cond.left.name == var:
        left, right = start, const_int(cond.right)
    elif isinstance(cond.right, c_ast.ID) and cond.right.name == var:
        left, right = const_int(cond.left), start
    else:
        return False
    if left is None or right is None:
        return False
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right,
            "!=": left != right}[cond.op]


def _jumps(node) -> bool:
    """Whether a `break`, `continue` or `goto` stands anywhere in `node`."""
    if isinstance(node, (c_ast.Break, c_ast.Continue, c_ast.Goto)):
        return True
    return any(_jumps(c) for _, c in node.children()) if node is not None else False


def _first_mention(node, name: str):
    if node is None:
        return None
    if isinstance(node, c_ast.ID) and node.name == name:
        return node
    for _, c in node.children():
        found = _first_mention(c, name)
        if found is not None:
            return found
    return None
