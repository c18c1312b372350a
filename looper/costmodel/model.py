"""The recursive LSTM cost model (after LOOPer): computation embeddings, loop units, root LSTM.

- computation: an LSTM over its expression (post-order typed operations), an LSTM over the
  transformations applied to it, and an MLP over its fixed-size features -> embedding.
- loop: one LSTM over its child computations, one over its child loops, and an MLP over those
  two summaries and the loop's own features -> embedding (bottom-up, recursively).
- program: an LSTM over the root nests (and loop-free statements) -> regression head predicting
  the log of the speedup over the original; the head also sees the sums of all computation and
  loop embeddings (a shortcut that makes the recursive model trainable on our data) and, since
  architecture 4, an MLP's embedding of the candidate's analytic cost terms and the target's
  limits (`features.TERMS`): the network weights hand-written terms, as Adams2019's does.

Trees of any shape batch together: nodes are processed by height, each level's variable-length
child sequences packed into one LSTM call.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence

from .features import COMP, EXPR, LOOP, TERMS, TRANSFORM, ProgramFeatures


@dataclass
class Level:
    """The distinct loops of one height in a batch, with their children as padded index sequences.

    Index 0 is the start token that leads every sequence; distinct computation k is k + 1, distinct
    loop k is k + 1 in the loop table.  Padding is 0 too (packed sequences never read it)."""

    ids: torch.Tensor  # [n]: distinct loop ids
    comps: torch.Tensor  # [n, Lc + 1]
    comp_len: torch.Tensor  # [n]
    loops: torch.Tensor  # [n, Ll + 1]
    loop_len: torch.Tensor  # [n]


@dataclass
class Batch:
    """Candidates of one or more programs, with equal parts shared.

    A transformation changes a few statements and the loops around them; the rest of a candidate
    equals its siblings'.  Each distinct computation (expression, features, transformations) and
    each distinct loop (features and the same distinct children) is embedded once per batch, and
    every candidate refers to those: deriche's 47 computations and 36 nests per candidate shrink to
    a few new ones.  The network's output is the same as without sharing."""

    comp_vec: torch.Tensor  # [NU, COMP.width]: distinct computations only
    expr: torch.Tensor  # [NE, Le, EXPR.width] (padded; distinct expressions only)
    expr_len: torch.Tensor  # [NE]
    expr_index: torch.Tensor  # [NU]: which expression each distinct computation has
    comp_index: torch.Tensor  # [NC]: which distinct computation each computation slot holds
    trans: torch.Tensor  # [NU, Lt, TRANSFORM.width] (padded, with a leading start token)
    trans_len: torch.Tensor
    loop_vec: torch.Tensor  # [NLU, LOOP.width]: distinct loops only
    loop_index: torch.Tensor  # [NL]: which distinct loop each loop slot is
    levels: list[Level]  # bottom-up by height
    roots: torch.Tensor  # [B, Lr + 1]: 0 start, 1..NU distinct computations, NU+1.. distinct loops
    root_len: torch.Tensor  # [B]
    comp_owner: torch.Tensor  # [NC]: the sample each computation slot belongs to
    loop_owner: torch.Tensor  # [NL]: the sample each loop slot belongs to
    terms: torch.Tensor  # [B, TERMS.width]: each sample's cost terms and target

    @property
    def size(self) -> int:
        return len(self.roots)


def _padded(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Sequences of table indices (already shifted past the start token), each led by 0."""
    longest = max((len(x) for x in seqs), default=0)
    out = torch.zeros(len(seqs), longest + 1, dtype=torch.long)
    for row, x in enumerate(seqs):
        if x:
            out[row, 1:len(x) + 1] = torch.tensor(x)
    return out, torch.tensor([len(x) + 1 for x in seqs])


class _Collector:
    """Distinct computations and loops of a batch's samples, numbered once each: candidates of one
    program share most of them, and equal ones are embedded once."""

    def __init__(self) -> None:
        self.comp_vec: list[np.ndarray] = []
        self.exprs: list[torch.Tensor] = []
        self.expr_index: list[int] = []
        self.trans: list[torch.Tensor] = []
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
                self.exprs.append(torch.from_numpy(c.expression))
            self.expr_index.append(k)
            t = np.concatenate([np.zeros((1, TRANSFORM.width), np.float32), c.transforms]) \
                if len(c.transforms) else np.zeros((1, TRANSFORM.width), np.float32)
            self.trans.append(torch.from_numpy(t))
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

    def levels(self) -> list[Level]:
        """The distinct loops grouped by height (leaves first): the recursion's order."""
        out = []
        for h in range(max((n[0] for n in self.nodes), default=-1) + 1):
            ids = [i for i, n in enumerate(self.nodes) if n[0] == h]
            comps, comp_len = _padded([[c + 1 for c in self.nodes[i][1]] for i in ids])
            loops, loop_len = _padded([[c + 1 for c in self.nodes[i][2]] for i in ids])
            out.append(Level(torch.tensor(ids), comps, comp_len, loops, loop_len))
        return out

    def batch(self) -> Batch:
        n_comps = len(self.comp_vec)
        root_idx, root_len = _padded([[i + 1 if k == "c" else n_comps + 1 + i for k, i in r] for r in self.roots])
        return Batch(
            comp_vec=torch.from_numpy(np.stack(self.comp_vec)),
            expr=pad_sequence(self.exprs, batch_first=True),
            expr_len=torch.tensor([len(e) for e in self.exprs]),
            expr_index=torch.tensor(self.expr_index),
            comp_index=torch.tensor(self.comp_index),
            trans=pad_sequence(self.trans, batch_first=True),
            trans_len=torch.tensor([len(t) for t in self.trans]),
            loop_vec=torch.from_numpy(np.stack(self.loop_vec)) if self.loop_vec else torch.zeros(0, LOOP.width),
            loop_index=torch.tensor(self.loop_index, dtype=torch.long),
            levels=self.levels(), roots=root_idx, root_len=root_len,
            comp_owner=torch.tensor(self.comp_owner), loop_owner=torch.tensor(self.loop_owner, dtype=torch.long),
            terms=torch.from_numpy(np.stack(self.terms)) if self.terms else torch.zeros(0, TERMS.width))


def collate(samples: list[ProgramFeatures]) -> Batch:
    """Samples -> one batch of tensors, each distinct computation and loop once."""
    c = _Collector()
    for sample, f in enumerate(samples):
        c.add(sample, f)
    return c.batch()


def _mlp(n_in: int, hidden: int, n_out: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ELU(), nn.Dropout(dropout),
                         nn.Linear(hidden, hidden), nn.ELU(), nn.Linear(hidden, n_out))


ARCHITECTURE = 4  # changes whenever the module layout does (`costmodel.migrate` widens 3; others are refused)


class CostModel(nn.Module):
    def __init__(self, hidden: int = 128, dropout: float = 0.05):
        super().__init__()
        H = hidden
        self.hidden = hidden
        self.register_buffer("comp_mean", torch.zeros(COMP.width))
        self.register_buffer("comp_std", torch.ones(COMP.width))
        self.register_buffer("loop_mean", torch.zeros(LOOP.width))
        self.register_buffer("loop_std", torch.ones(LOOP.width))
        self.register_buffer("terms_mean", torch.zeros(TERMS.width))
        self.register_buffer("terms_std", torch.ones(TERMS.width))
        self.expr_lstm = nn.LSTM(EXPR.width, H, batch_first=True)
        self.trans_lstm = nn.LSTM(TRANSFORM.width, H, batch_first=True)
        self.comp_mlp = _mlp(COMP.width + 2 * H, 2 * H, H, dropout)
        self.child_comps = nn.LSTM(H, H, batch_first=True)
        self.child_loops = nn.LSTM(H, H, batch_first=True)
        self.start = nn.Parameter(torch.zeros(1, 1, H))  # leads every child/root sequence
        self.loop_mlp = _mlp(LOOP.width + 2 * H, 2 * H, H, dropout)
        self.roots = nn.LSTM(H, H, batch_first=True)
        self.terms_mlp = _mlp(TERMS.width, H, H, dropout)
        # The head sees the root LSTM's state and, as a shortcut, the sums of all computation and
        # all loop embeddings: through the recursion alone gradients reach the computations too
        # weakly (memorizing 15 programs: Spearman 0.67 after 60 epochs without, 0.81 with); and
        # the embedding of the cost terms (architecture 4; last, so a widened model of
        # architecture 3 reads none of it)
        self.head = _mlp(4 * H, H, 1, dropout)

    def set_normalization(self, comp: np.ndarray, loop: np.ndarray, terms: np.ndarray) -> None:
        """Standardize inputs with statistics of the training set (stored with the weights)."""
        for name, x in (("comp", comp), ("loop", loop), ("terms", terms)):
            t = torch.from_numpy(x).float()
            getattr(self, f"{name}_mean").copy_(t.mean(0))
            # a floor on the scale: a feature almost always 0 in training would otherwise turn
            # into a huge input the first time a candidate has it
            getattr(self, f"{name}_std").copy_(t.std(0).clamp_min(0.1))

    @staticmethod
    def _last(lstm: nn.LSTM, seqs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(seqs, lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, (h, _) = lstm(packed)
        return h[-1]

    def forward(self, b: Batch) -> torch.Tensor:
        """Predicted log speedup, one per sample."""
        # clamped: PolyBench at LARGE has extents and footprints far beyond the synthetic
        # programs'; beyond 6 standard deviations the network would only extrapolate
        comp_in = ((b.comp_vec - self.comp_mean) / self.comp_std).clamp(-6.0, 6.0)
        e = self._last(self.expr_lstm, b.expr, b.expr_len)[b.expr_index]
        t = self._last(self.trans_lstm, b.trans, b.trans_len)
        comp = self.comp_mlp(torch.cat([comp_in, e, t], dim=1))  # distinct computations
        start = self.start[0]
        comp_table = torch.cat([start, comp])
        loops = torch.zeros(len(b.loop_vec), self.hidden)  # distinct loops
        loop_in = ((b.loop_vec - self.loop_mean) / self.loop_std).clamp(-6.0, 6.0)
        for lvl in b.levels:  # bottom-up: a level's child loops are all computed already
            hc = self._last(self.child_comps, comp_table[lvl.comps], lvl.comp_len)
            hl = self._last(self.child_loops, torch.cat([start, loops])[lvl.loops], lvl.loop_len)
            out = self.loop_mlp(torch.cat([loop_in[lvl.ids], hc, hl], dim=1))
            loops = loops.index_copy(0, lvl.ids, out)
        table = torch.cat([start, comp, loops])
        h = self._last(self.roots, table[b.roots], b.root_len)
        n = len(b.root_len)
        comp_sum = torch.zeros(n, self.hidden).index_add(0, b.comp_owner, comp[b.comp_index])
        loop_sum = torch.zeros(n, self.hidden).index_add(0, b.loop_owner, loops[b.loop_index])
        terms = self.terms_mlp(((b.terms - self.terms_mean) / self.terms_std).clamp(-6.0, 6.0))
        return self.head(torch.cat([h, comp_sum, loop_sum, terms], dim=1)).squeeze(1)

    @torch.no_grad()
    def predict(self, samples: list[ProgramFeatures], batch_size: int = 256, threads: int | None = 1) -> np.ndarray:
        """Predicted speedups (not logs) for featurized candidates, on `threads` torch threads
        (None: as torch is set; training's evaluation runs on its own)."""
        return _predict(self, samples, batch_size, threads)


@contextmanager
def torch_threads(n: int | None):
    """Run on `n` torch threads (None: as set).  Inference runs on one: the network's matrices
    are a few hundred wide, so a second thread gains nothing on an idle machine (adi MEDIUM's
    model search: 16.2 s on one, 16.3 s on two, two runs each) and loses much when a core is
    busy (17 s on one, 49 s on two, beside a test run)."""
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _predict(model: nn.Module, samples: list[ProgramFeatures], batch_size: int, threads: int | None) -> np.ndarray:
    model.eval()
    out = []
    with torch_threads(threads):
        for k in range(0, len(samples), batch_size):
            out.append(torch.exp(model(collate(samples[k:k + batch_size]))).numpy())
    return np.concatenate(out) if out else np.zeros(0)


class Ensemble(nn.Module):
    """Several cost models trained alike from different seeds; the prediction is the geometric
    mean of theirs.  Two members rank held-out programs better than one (Spearman 0.61 -> 0.65
    validation, 0.60 -> 0.68 test, 180 programs): their errors are partly independent."""

    def __init__(self, members: list[CostModel]):
        super().__init__()
        self.members = nn.ModuleList(members)
        self.hidden = members[0].hidden

    def forward(self, b: Batch) -> torch.Tensor:
        return torch.stack([m(b) for m in self.members]).mean(0)

    @torch.no_grad()
    def predict(self, samples: list[ProgramFeatures], batch_size: int = 256, threads: int | None = 1) -> np.ndarray:
        return _predict(self, samples, batch_size, threads)
