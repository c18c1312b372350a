"""isl AST -> cgen nodes: loops, guards, OpenMP and unroll pragmas, statement bodies.

isl builds the loop structure from the lowered schedule; this module only prints it.  A `for`
implements the schedule row its iterator is named after (`ir.rows.row_of_iterator`), which is
how annotations find their loops.
"""
from __future__ import annotations

import cgen
import islpy as isl

from ..ir.program import Program, Statement
from ..poly.legality import privatizable
from ..poly.privatize import scalar_flows
from ..ir.rows import row_of_iterator
from ..ir.schedule import Lowered, original
from .balance import cyclic_chunk
from .cexpr import c_access, c_assign, c_name, replaced_elements
from .astwalk import annotation, calls, iterators, schedule_ast, statements
from .islexpr import ATOM, _same, isl_expr, isl_c
from .microkernel import KernelText, full_tiles, roles_of, uses_iterators
from .private import PrivateSlice, last_name, own_name, private_slices, sliced_statement
from .region import RegionPrinter
from .scalars import Element, Reference, invariant_elements, references
from .storage import own_slices, pointer_declarator

PARALLEL_LOOP = "looper_parallel"  # annotation of a `for` node that may run in parallel


class KernelPrinter:
    """Prints one lowered schedule of a program as a list of cgen statements."""

    def __init__(self, lowered: Lowered, balance: bool = True, rename=_same):
        self.lowered = lowered
        self.balance = balance  # deal uneven parallel loops cyclically (`balance.cyclic_chunk`)
        # C name of each loop iterator (`c{row}` is the isl name; code pasted into a user's
        # function gets a prefix no user name has)
        self.rename = rename
        self.program: Program = lowered.program
        self.parallel_dims: dict[str, set[int]] = {}
        for s, k in lowered.parallel:
            self.parallel_dims.setdefault(s, set()).add(k)
        self.in_parallel = 0
        self.iterators: set[str] = set()  # declared once at the top of the kernel function
        self.private = _private_scalars(lowered)
        self.full_tests: dict = {}  # per register tile, its full-tile test (`codegen.microkernel`)
        self.printed: list[int] = []  # rows of the loops around the node being printed
        self.slices = private_slices(lowered)  # temporaries kept one slice per thread
        self.printed_statements: dict[str, Statement] = {}
        # keep loop-invariant elements in locals (`codegen.scalars`), proved on `lowered`'s rows
        # (so not for an AST built from another schedule), and not in the original schedule: it
        # stands for the code as the user wrote it, which looper leaves as written when it
        # answers it and times as the baseline of every measurement (written as an answer of its
        # own, `Lowered.written`, its identity is not the original's)
        self.scalars = lowered.identity != original(lowered.program).identity

    def ast(self) -> isl.AstNode:
        return schedule_ast(self.lowered)

    def statement(self, name: str) -> Statement:
        """The statement as printed (a temporary kept per thread loses its leading index)."""
        if name not in self.printed_statements:
            self.printed_statements[name] = sliced_statement(self.program.statement(name), self.slices)
        return self.printed_statements[name]

    def body(self) -> list[cgen.Generable]:
        root = self.ast()
        if self.lowered.region:
            region = RegionPrinter(self)
            if region.worth(root):
                return region.print(root)
        return self.node(root)

    def is_parallel_node(self, n: isl.AstNode) -> bool:
        """Whether a `for` node runs in parallel: this schedule marks its row for its statements
        (or, for an AST isl's scheduler built, isl annotated it)."""
        it = n.for_get_iterator().get_id().get_name()
        row = row_of_iterator(it)
        return annotation(n) == PARALLEL_LOOP or any(row in self.parallel_dims.get(s, ()) for s in statements(n))

    # -- nodes -----------------------------------------------------------------------------------
    def node(self, n: isl.AstNode) -> list[cgen.Generable]:
        t = n.get_type()
        if t == isl.ast_node_type.block:
            out: list[cgen.Generable] = []
            children = n.block_get_children()
            for k in range(children.n_ast_node()):
                out.extend(self.node(children.get_at(k)))
            return out
        if t == isl.ast_node_type.for_:
            return self.loop(n)
        if t == isl.ast_node_type.if_:
            then = cgen.Block(self.node(n.if_get_then_node()))
            orelse = cgen.Block(self.node(n.if_get_else_node())) if n.if_has_else_node() else None
            return [cgen.If(isl_c(n.if_get_cond(), self.rename), then, orelse)]
        if t == isl.ast_node_type.mark:
            return self.node(n.mark_get_node())
        if t == isl.ast_node_type.user:
            return [self.user(n.user_get_expr())]
        raise NotImplementedError(f"isl AST node {t}")

    def loop(self, n: isl.AstNode, plain: bool = False, worksharing: bool = False,
             first: str | None = None, before: str | None = None) -> list[cgen.Generable]:
        """A `for` with its pragmas (`worksharing`: `omp for` inside a region, not `omp parallel
        for`; `first`, `before`: start no lower than `first`, stop before `before`, the parts of
        a register tile's reduction loop around its full window)."""
        it = n.for_get_iterator().get_id().get_name()
        init = isl_c(n.for_get_init(), self.rename)
        if first is not None:
            init = f"max({init}, ({first}))"
        self.iterators.add(it)
        row = row_of_iterator(it)
        stmts = statements(n)
        if not plain and len(stmts) == 1:
            mk = self.lowered.microkernel(next(iter(stmts)), row)
            kernel = self.microkernel(n, mk) if mk is not None else None
            if kernel is not None:
                return kernel
        if n.for_is_degenerate():
            self.printed.append(row)
            try:
                return [cgen.Statement(f"{self.rename(it)} = {init}")] + self.node(n.for_get_body())
            finally:
                self.printed.pop()
        pragmas: list[cgen.Generable] = []
        # rows name this schedule's loops only (an annotated AST of isl's scheduler has others)
        ours = any(row in self.parallel_dims.get(s, ()) for s in stmts)
        parallel = self.in_parallel == 0 and (annotation(n) == PARALLEL_LOOP or ours)
        factor = max((self.lowered.unroll_factor(s, row) for s in stmts), default=0)
        if factor > 1 and not parallel:  # gcc accepts no unroll pragma on an OpenMP loop
            pragmas.append(cgen.Pragma(f"GCC unroll {factor}"))
        vector = any((s, row) in self.lowered.vector for s in stmts)
        if vector:
            pragmas.append(cgen.Pragma("omp simd"))  # isl proved it carries nothing (`Vectorize`)
        slices = [sl for sl in self.slices.values() if sl.row == row and sl.statements <= stmts] if parallel else []
        kept = self.kept_elements(n, row, it) if self.scalars and not (parallel or vector) else []
        self.in_parallel += parallel
        self.printed.append(row)
        try:
            with replaced_elements({e.text: e.name for e in kept}):
                body = cgen.Block([self.own_slice(sl, self.rename(it)) for sl in slices] + self.node(n.for_get_body()))
        finally:
            self.in_parallel -= parallel
            self.printed.pop()
        if parallel:
            pragmas.insert(0, self.parallel_pragma(n, row, stmts, worksharing=worksharing,
                                                   team=bool(slices) and not worksharing, balance=ours and self.balance))
        inc = isl_c(n.for_get_inc(), self.rename)
        name = self.rename(it)
        step = f"{name}++" if inc == "1" else f"{name} += {inc}"
        cond = isl_c(n.for_get_cond(), self.rename)
        if before is not None:
            cond = f"{cond} && {name} < ({before})"
        if kept:  # `codegen.scalars`: loaded once the loop is known to run, stored after it
            loads = [cgen.Line(f"{e.ctype} {e.name} = {e.text};") for e in kept]
            stores = [cgen.Statement(f"{e.text} = {e.name}") for e in kept if e.written]
            return [cgen.Statement(f"{name} = {init}"),
                    cgen.If(cond, cgen.Block(loads + pragmas + [cgen.For("", cond, step, body)] + stores))]
        loop = pragmas + [cgen.For(f"{name} = {init}", cond, step, body)]
        return _team(slices, loop) if slices and not worksharing else loop

    def kept_elements(self, n: isl.AstNode, row: int, it: str) -> list[Element]:
        """The elements this loop may keep in local variables (`codegen.scalars`): only for an
        innermost loop whose body is statement calls."""
        calls_ = _body_calls(n.for_get_body())
        if not calls_:
            return []
        refs: list[Reference] = []
        for call in calls_:
            name = call.get_op_arg(0).get_id().get_name()
            st = self.statement(name)
            env = dict(zip(st.iterators, _call_args(call, st, self.rename)))
            refs += references(st, name, lambda ld, env=env: c_access(ld, env))
        skip = frozenset(sl.array for sl in self.slices.values())
        return invariant_elements(self.lowered, row, self.rename(it), refs, skip,
                                  lambda k: self.rename(f"{it}_{k}"))

    def parallel_pragma(self, n: isl.AstNode, row: int, stmts: set[str], worksharing: bool, team: bool,
                        balance: bool) -> cgen.Pragma:
        """`omp parallel for` with its private variables and schedule (`omp for` inside a region,
        or in a team of the loop's own, `_team`)."""
        # the iterators printed below it (a micro-kernel prints no point loops where every
        # tile is full: naming those would name undeclared variables)
        inner = [self.rename(x) for x in sorted(iterators(n.for_get_body()), key=row_of_iterator)
                 if x in self.iterators]
        for (r, loop_stmts), scalars in self.private.items():
            if r == row and stmts <= loop_stmts:
                inner += [c_name(x) for x in sorted(scalars)]
        private = f" private({', '.join(inner)})" if inner else ""
        chunk = cyclic_chunk(self.lowered, row, stmts) if balance else None
        cyclic = f" schedule(static, {chunk})" if chunk else ""
        construct = "omp for" if worksharing or team else "omp parallel for"
        nowait = " nowait" if team else ""  # the team's end waits for every thread anyway
        return cgen.Pragma(f"{construct}{cyclic}{private}{nowait}")

    def own_slice(self, sl: PrivateSlice, iterator: str) -> cgen.Generable:
        """At the top of the parallel loop's body: the slice this iteration works in."""
        c = c_name(sl.array)
        where = own_name(c) if sl.last is None else f"{iterator} == {sl.last} ? {last_name(c)} : {own_name(c)}"
        return cgen.Line(f"{sl.ctype} {pointer_declarator('restrict ' + c, [str(e) for e in sl.shape])} = {where};")

    def microkernel(self, n: isl.AstNode, mk) -> list[cgen.Generable] | None:
        """A register tile's reduction loop: the micro-kernel for full tiles, isl's loops for
        the others (`codegen.microkernel`); None where the tile cannot be printed that way."""
        st = self.statement(mk.stmt)
        roles = roles_of(self.lowered, st, mk)
        texts = {tuple(_call_args(c, st, self.rename)) for c in calls(n)}
        if roles is None or len(texts) != 1:
            return None
        args = dict(zip(st.iterators, next(iter(texts))))
        others = {v: t for v, t in args.items() if v not in roles}
        if any(uses_iterators(t, (mk.i, mk.j, mk.k), self.rename) for t in others.values()):
            return None
        key = (mk, tuple(self.printed))
        if key not in self.full_tests:
            self.full_tests[key] = full_tiles(self.lowered, mk, tuple(self.printed), self.rename)
        tiles = self.full_tests[key]
        if tiles is None:
            return None
        it = self.rename(n.for_get_iterator().get_id().get_name())
        init = isl_c(n.for_get_init(), self.rename)
        if n.for_is_degenerate():
            bound, inc = f"{it} <= {init}", "1"
        else:
            bound, inc = isl_c(n.for_get_cond(), self.rename), isl_c(n.for_get_inc(), self.rename)
        text = KernelText(st, mk, others, roles, tiles, self.rename)
        if tiles.k_first is None and tiles.k_last is None:
            kernel = text.block(init, bound, inc)
        elif inc != "1" or n.for_is_degenerate():
            return None
        else:  # full on a window of k: isl's loops before and after it
            parts: list[cgen.Generable] = []
            if tiles.k_first is not None:
                parts += self.loop(n, plain=True, before=tiles.k_first)
                init = f"({tiles.k_first})"
            if tiles.k_last is not None:
                bound = f"{it} <= ({tiles.k_last})"
            parts.append(text.block(init, bound, "1"))
            if tiles.k_last is not None:
                parts += self.loop(n, plain=True, first=f"({tiles.k_last}) + 1")
            kernel = cgen.Block(parts)
        if tiles.condition == "1":
            return [kernel]
        return [cgen.If(tiles.condition, kernel, cgen.Block(self.loop(n, plain=True)))]

    def user(self, call: isl.AstExpr) -> cgen.Generable:
        name = call.get_op_arg(0).get_id().get_name()
        st = self.statement(name)
        env = {}
        for k, var in enumerate(st.iterators):
            text, prec = isl_expr(call.get_op_arg(k + 1), self.rename)
            env[var] = text if prec == ATOM else f"({text})"
        return cgen.Statement(c_assign(st.body, env))


def _body_calls(body: isl.AstNode) -> list[isl.AstExpr]:
    """The statement calls of a loop body made of calls alone (a call or a block of them), else []."""
    t = body.get_type()
    if t == isl.ast_node_type.user:
        return [body.user_get_expr()]
    if t != isl.ast_node_type.block:
        return []
    children = body.block_get_children()
    nodes = [children.get_at(k) for k in range(children.n_ast_node())]
    if not all(c.get_type() == isl.ast_node_type.user for c in nodes):
        return []
    return [c.user_get_expr() for c in nodes]


def _team(slices: list[PrivateSlice], loop: list[cgen.Generable]) -> list[cgen.Generable]:
    """A parallel loop (printed `omp for ... nowait`) in a team of its own, each thread
    allocating its slices of the loop's temporaries once (`codegen.private`)."""
    allocate, free = own_slices(slices)
    return [cgen.Pragma("omp parallel"), cgen.Block(allocate + loop + free)]


def _private_scalars(lowered: Lowered) -> dict[tuple[int, frozenset[str]], set[str]]:
    """Per parallel loop of the schedule (row, statements), the scalars it privatizes: every
    kernel-local scalar it may (`legality.privatizable`), which is what the legality check
    of the parallel step assumed."""
    if not lowered.parallel:
        return {}
    scalars = scalar_flows(lowered.program)
    if not scalars:
        return {}
    out = {}
    for loop in lowered.tree.loops():
        if any((s, loop.row) in lowered.parallel for s in loop.statements):
            found = privatizable(scalars, lowered, loop.row, loop.statements)
            if found:
                out[(loop.row, loop.statements)] = found
    return out


def _call_args(call: isl.AstExpr, st, rename=_same) -> list[str]:
    """C text of each iterator's value in a statement call, parenthesized unless atomic."""
    out = []
    for k in range(st.depth):
        text, prec = isl_expr(call.get_op_arg(k + 1), rename)
        out.append(text if prec == ATOM else f"({text})")
    return out


def kernel_body_from_ast(program: Program, ast: isl.AstNode) -> tuple[list[cgen.Generable], list[str]]:
    """Print an AST that isl built from a schedule tree (`for` nodes annotated `PARALLEL_LOOP` get
    `omp parallel for`, unless inside another parallel loop); used for isl's scheduler as a peer."""
    p = KernelPrinter(original(program))
    p.scalars = False  # the AST's rows are isl's schedule's, not the printer's
    body = p.node(ast)
    return body, sorted(p.iterators, key=row_of_iterator)


def kernel_body(lowered: Lowered, balance: bool = True, rename=_same) -> tuple[list[cgen.Generable], list[str]]:
    """The kernel's loop nest and the loop iterators it needs declared (`balance=False`: every
    parallel loop with plain `static`, for measuring what balancing gains; `rename`: the C name
    of each iterator, which the returned list uses too)."""
    p = KernelPrinter(lowered, balance, rename)
    body = p.body()
    return body, [rename(it) for it in sorted(p.iterators, key=row_of_iterator)]
