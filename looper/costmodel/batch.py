"""Candidates as the cost model's network reads them: one batch, each distinct part once.

Torch-free: the network (`model.collate` turns the arrays into tensors) and its numpy forward
pass (`inference`, what the search runs) read the same batch, so what candidates share is found
by one piece of code.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from .features import LOOP, TERMS, TRANSFORM, ProgramFeatures

# the network's layout (`model.CostModel`; `inference` follows it), here so that checking a weights
# file needs no torch.  It changes whenever the module layout does (`costmodel.migrate` widens 3;
# others are refused)
ARCHITECTURE = 4

A = TypeVar("A")  # np.ndarray as collected; torch.Tensor once `model.collate` converts


@dataclass
class Level(Generic[A]):
    """The distinct loops of one height in a batch, with their children as padded index sequences.

    Index 0 is the start token that leads every sequence; distinct computation k is k + 1, distinct
    loop k is k + 1 in the loop table.  Padding is 0 too (an LSTM's last state never reads it)."""

    ids: A  # [n]: distinct loop ids
    comps: A  # [n, Lc + 1]
    comp_len: A  # [n]
    loops: A  # [n, Ll + 1]
    loop_len: A  # [n]

    def map(self, f: Callable[[np.ndarray], A]) -> Level:
        """The same level with every array converted by `f`."""
        return Level(*(f(getattr(self, x.name)) for x in dataclasses.fields(self)))


@dataclass
class Batch(Generic[A]):
    """Candidates of one or more programs, with equal parts shared.

    A transformation changes a few statements and the loops around them; the rest of a candidate
    equals its siblings'.  Each distinct computation (expression, features, transformations) and
    each distinct loop (features and the same distinct children) is embedded once per batch, and
    every candidate refers to those: deriche's 47 computations and 36 nests per candidate shrink to
    a few new ones.  The network's output is the same as without sharing."""

    comp_vec: A  # [NU, COMP.width]: distinct computations only
    expr: A  # [NE, Le, EXPR.width] (padded; distinct expressions only)
    expr_len: A  # [NE]
    expr_index: A  # [NU]: which expression each distinct computation has
    comp_index: A  # [NC]: which distinct computation each computation slot holds
    trans: A  # [NU, Lt, TRANSFORM.width] (padded, with a leading start token)
    trans_len: A
    loop_vec: A  # [NLU, LOOP.width]: distinct loops only
    loop_index: A  # [NL]: which distinct loop each loop slot is
    levels: list[Level[A]]  # bottom-up by height
    roots: A  # [B, Lr + 1]: 0 start, 1..NU distinct computations, NU+1.. distinct loops
    root_len: A  # [B]
    comp_owner: A  # [NC]: the sample each computation slot belongs to
    loop_owner: A  # [NL]: the sample each loop slot belongs to
    terms: A  # [B, TERMS.width]: each sample's cost terms and target

    @property
    def size(self) -> int:
        return len(self.roots)

    def map(self, f: Callable[[np.ndarray], A]) -> Batch:
        """The same batch with every array converted by `f` (`torch.from_numpy`: the network's)."""
        return Batch(**{x.name: [lvl.map(f) for lvl in self.levels] if x.name == "levels"
                        else f(getattr(self, x.name)) for x in dataclasses.fields(self)})


def _indices(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _padded(seqs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Sequences of table indices (already shifted past the start token), each led by 0."""
    longest = max((len(x) for x in seqs), default=0)
    out = np.zeros((len(seqs), longest + 1), dtype=np.int64)
    for row, x in enumerate(seqs):
        out[row, 1:len(x) + 1] = x
    return out, _indices([len(x) + 1 for x in seqs])


def _stacked(seqs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sequences of vectors, padded with zeros to the longest, and their lengths."""
    out = np.zeros((len(seqs), max(len(x) for x in seqs), seqs[0].shape[1]), dtype=np.float32)
    for row, x in enumerate(seqs):
        out[row, :len(x)] = x
    return out, _indices([len(x) for x in seqs])


class _Collector:
    """Distinct computations and loops of a batch's samples, numbered once each: candidates of one
    program share most of them, and equal ones are embedded once."""

    def __init__(self) -> None:
        self.comp_vec: list[np.ndarray] = []
        self.exprs: list[np.ndarray] = []
        self.expr_index: list[int] = []
        self.trans: list[np.ndarray] = []
        # by content, not identity: features that came back from a forked process (`looper.forked`)
        # are copies, and must batch (and so round) exactly as the ones computed here
        self.unique_expr: dict[bytes, int] = {}
        self.unique_comp: dict[tuple, int] = {}
        self.comp_index: list[int] = []
        self.unique_loop: dict[tuple, int] = {}
        self.loop_vec: list[np.ndarray] = []
        self.loop_index: list[int] = []
        self.nodes: list[tuple[int, list[int], list[int]]] = []  # per distinct loop: (height, comps, loops)
        self.roots: list[list[tuple[str, int]]] = []
        self.comp_owner: list[int] = []
        self.loop_owner: list[int] = []
        self.terms: list[np.ndarray] = []

    def add(self, sample: int, f: ProgramFeatures) -> None:
        self.terms.append(f.terms)
        base = len(self.comp_index)
        self.comp_owner += [sample] * len(f.comps)
        for c in f.comps:
            self.comp_index.append(self._comp(c))
        self.roots.append([self._node(r, base, sample) for r in f.roots])

    def _comp(self, c) -> int:
        expression = c.expression.tobytes()
        key = (expression, c.vector.tobytes(), c.transforms.tobytes())
        u = self.unique_comp.get(key)
        if u is None:
            u = self.unique_comp[key] = len(self.comp_vec)
            self.comp_vec.append(c.vector)
            k = self.unique_expr.get(expression)
            if k is None:
                k = self.unique_expr[expression] = len(self.exprs)
                self.exprs.append(c.expression)
            self.expr_index.append(k)
            start = np.zeros((1, TRANSFORM.width), np.float32)
            self.trans.append(np.concatenate([start, c.transforms]) if len(c.transforms) else start)
        return u

    def _node(self, node, base: int, sample: int) -> tuple[str, int]:
        kind, x = node
        if kind == "comp":
            return ("c", self.comp_index[base + x])
        kids = tuple(self._node(ch, base, sample) for ch in x.children)
        key = (x.vector.tobytes(), kids)
        u = self.unique_loop.get(key)
        if u is None:
            u = self.unique_loop[key] = len(self.nodes)
            height = 1 + max([self.nodes[i][0] for k, i in kids if k == "l"], default=-1)
            self.nodes.append((height, [i for k, i in kids if k == "c"], [i for k, i in kids if k == "l"]))
            self.loop_vec.append(x.vector)
        self.loop_index.append(u)
        self.loop_owner.append(sample)
        return ("l", u)

    def levels(self) -> list[Level[np.ndarray]]:
        """The distinct loops grouped by height (leaves first): the recursion's order."""
        out = []
        for h in range(max((n[0] for n in self.nodes), default=-1) + 1):
            ids = [i for i, n in enumerate(self.nodes) if n[0] == h]
            comps, comp_len = _padded([[c + 1 for c in self.nodes[i][1]] for i in ids])
            loops, loop_len = _padded([[c + 1 for c in self.nodes[i][2]] for i in ids])
            out.append(Level(_indices(ids), comps, comp_len, loops, loop_len))
        return out

    def batch(self) -> Batch[np.ndarray]:
        n_comps = len(self.comp_vec)
        root_idx, root_len = _padded([[i + 1 if k == "c" else n_comps + 1 + i for k, i in r] for r in self.roots])
        expr, expr_len = _stacked(self.exprs)
        trans, trans_len = _stacked(self.trans)
        return Batch(
            comp_vec=np.stack(self.comp_vec), expr=expr, expr_len=expr_len,
            expr_index=_indices(self.expr_index), comp_index=_indices(self.comp_index),
            trans=trans, trans_len=trans_len,
            loop_vec=np.stack(self.loop_vec) if self.loop_vec else np.zeros((0, LOOP.width), np.float32),
            loop_index=_indices(self.loop_index), levels=self.levels(), roots=root_idx, root_len=root_len,
            comp_owner=_indices(self.comp_owner), loop_owner=_indices(self.loop_owner),
            terms=np.stack(self.terms) if self.terms else np.zeros((0, TERMS.width), np.float32))


def collect(samples: list[ProgramFeatures]) -> Batch[np.ndarray]:
    """Samples -> one batch of arrays, each distinct computation and loop once."""
    c = _Collector()
    for sample, f in enumerate(samples):
        c.add(sample, f)
    return c.batch()
