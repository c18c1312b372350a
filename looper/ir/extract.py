"""Polyhedral extraction: a checked loop tree (Loop / Guard / Assign nodes) -> statements with
isl domains, access relations, 2d+1 positions, and a proof that no access leaves its array.

Every front end (the Python subset, C with `#pragma scop`) builds the same syntax-level tree and
hands it here, so the polyhedral description of a program never depends on where it came from.
"""
from __future__ import annotations

import islpy as isl

from ..errors import LooperSyntaxError
from .domain import LoopContext, access_relation, array_extent, statement_domain
from .program import (
    Access, Affine, Array, Assign, Condition, Guard, Load, Loop, MinMax, Node, Statement, walk,
)
from .rows import statement_name


def extract_statements(nodes: tuple[Node, ...], arrays: dict[str, Array], sizes: dict[str, int],
                       filename: str, prefix: str = "S", check_bounds: bool = True) -> list[Statement]:
    """Each assignment of `nodes` as a `Statement`, named `{prefix}0, {prefix}1, ...` in textual
    order.  An access that can fall outside its array at `sizes` is a `LooperSyntaxError` at the
    assignment's line (C would silently corrupt memory).  `check_bounds=False`: no such check, for
    a front end that learns extents from what the accesses reach (`lang.c.layout`)."""
    out: list[Statement] = []

    def visit(seq, loops: list[LoopContext], guards: list[Condition], beta: list[int]):
        for node in seq:
            if isinstance(node, Loop):
                visit(node.body, loops + [LoopContext(node.var, node.lower, node.upper, node.step)],
                      guards, beta + [0])
                beta[-1] += 1
            elif isinstance(node, Guard):
                visit(node.then, loops, guards + [node.cond], beta)
                if node.orelse:
                    visit(node.orelse, loops, guards + [Condition("not", (node.cond,))], beta)
            else:
                out.append(make_statement(statement_name(len(out), prefix), node, loops, guards, tuple(beta), arrays,
                                          sizes, filename, check_bounds))
                beta[-1] += 1

    visit(nodes, [], [], [0])
    return out


def make_statement(name: str, node: Assign, loops: list[LoopContext], guards: list[Condition],
                   beta: tuple[int, ...], arrays: dict[str, Array], sizes: dict[str, int],
                   filename: str, check_bounds: bool = True) -> Statement:
    """One assignment's domain and accesses (the write first, then reads in evaluation order)."""
    iters = tuple(l.var for l in loops)
    # isl sees positional iterator names (a user's 'mod' or 'floor' would confuse its parser).
    env = {v: f"i{k}" for k, v in enumerate(iters)}
    renamed = [LoopContext(env[l.var], rename_bound(l.lower, env), rename_bound(l.upper, env), l.step)
               for l in loops]
    conds = [rename_condition(g, env) for g in guards]
    try:
        domain = statement_domain(name, renamed, conds, sizes)
    except isl.Error as e:  # pragma: no cover - the front ends only build valid isl text
        raise LooperSyntaxError(f"isl rejected the iteration domain: {e}", filename, node.line, 1) from None
    loads = [node.target] + [e for e in walk(node.value) if isinstance(e, Load)]
    if node.op != "=":
        loads.insert(1, node.target)
    accesses = [_access(name, env, domain, ld, k == 0, arrays[ld.array], sizes, filename, node.line, check_bounds)
                for k, ld in enumerate(loads)]
    steps = tuple(l.step for l in loops)
    return Statement(name, iters, steps, beta, domain, node, tuple(accesses))


def _access(stmt: str, env: dict[str, str], domain: isl.Set, ld: Load, is_write: bool, arr: Array,
            sizes: dict[str, int], filename: str, line: int, check_bounds: bool = True):
    idx = tuple(rename_bound(a, env) for a in ld.index)
    rel = access_relation(stmt, tuple(env.values()), domain, ld.array, idx, sizes)
    outside = rel.range().subtract(array_extent(ld.array, arr.extent)) if check_bounds else None
    if outside is not None and not outside.is_empty():
        pt = outside.sample_point()
        coords = [int(pt.get_coordinate_val(isl.dim_type.set, d).to_python()) for d in range(arr.rank)]
        sub = ", ".join(a.render() for a in ld.index)
        raise LooperSyntaxError(
            f"access {ld.array}[{sub}] can fall outside the array (extent {list(arr.extent)}; "
            f"e.g. {ld.array}{coords}) at sizes " + ", ".join(f"{k}={v}" for k, v in sizes.items()),
            filename, line, 1)
    return Access(ld.array, ld.index, is_write, rel)


def rename_bound(b, env: dict[str, str]):
    """An affine form or min/max bound with its names replaced through `env`."""
    if isinstance(b, Affine):
        return Affine(tuple(sorted((env.get(n, n), c) for n, c in b.terms)), b.const)
    return MinMax(b.op, tuple(rename_bound(a, env) for a in b.args))


def rename_condition(c: Condition, env: dict[str, str]) -> Condition:
    """A condition with its names replaced through `env`."""
    if c.op == "cmp":
        return Condition("cmp", tuple(rename_bound(a, env) for a in c.args), c.cmp)
    return Condition(c.op, tuple(rename_condition(a, env) for a in c.args), c.cmp)
