"""Building isl sets and maps from loop bounds, guards and subscripts (sizes already concrete)."""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from .program import Affine, Bound, Condition


@dataclass(frozen=True)
class LoopContext:
    """One enclosing loop as the domain builder needs it."""

    var: str
    lower: Bound
    upper: Bound
    step: int


def loop_constraint(loop: LoopContext, sizes: dict[str, int]) -> str:
    lo = loop.lower.substitute(sizes).render()
    up = loop.upper.substitute(sizes).render()
    if loop.step > 0:
        return f"{loop.var} >= {lo} and {loop.var} < {up}"
    return f"{loop.var} <= {lo} and {loop.var} > {up}"


def statement_domain(name: str, loops: list[LoopContext], guards: list[Condition],
                     sizes: dict[str, int]) -> isl.Set:
    """The iteration domain `{ name[i, j, ...] : loop bounds and guards }`."""
    iters = ", ".join(l.var for l in loops)
    parts = [f"({loop_constraint(l, sizes)})" for l in loops]
    parts += [g.isl(sizes) for g in guards]
    cond = " and ".join(parts) if parts else "true"
    return isl.Set(f"{{ {name}[{iters}] : {cond} }}").coalesce()


def access_relation(stmt: str, iterators: tuple[str, ...], domain: isl.Set, array: str,
                    index: tuple[Affine, ...], sizes: dict[str, int]) -> isl.Map:
    """`{ stmt[iters] -> array[subscripts] }` restricted to the statement's domain."""
    subs = ", ".join(a.substitute(sizes).render() for a in index)
    m = isl.Map(f"{{ {stmt}[{', '.join(iterators)}] -> {array}[{subs}] }}")
    return m.intersect_domain(domain)


def array_extent(array: str, extent: tuple[int, ...]) -> isl.Set:
    names = [f"d{k}" for k in range(len(extent))]
    cons = " and ".join(f"0 <= {n} < {e}" for n, e in zip(names, extent)) or "true"
    return isl.Set(f"{{ {array}[{', '.join(names)}] : {cons} }}")
