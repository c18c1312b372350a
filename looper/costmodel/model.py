"""The recursive LSTM cost model (after LOOPer): computation embeddings, loop units, root LSTM.

- computation: an LSTM over its expression (post-order typed operations), an LSTM over the
  transformations applied to it, and an MLP over its fixed-size features -> embedding.
- loop: one LSTM over its child computations, one over its child loops, and an MLP over those
  two summaries and the loop's own features -> embedding (bottom-up, recursively).
- program: an LSTM over the root nests (and loop-free statements) -> regression head predicting
  the log of the speedup over the original.

Trees of any shape batch together: nodes are processed by height, each level's variable-length
child sequences packed into one LSTM call.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence

from .features import COMP, EXPR, LOOP, TRANSFORM, ProgramFeatures


@dataclass
class Batch:
    comp_vec: torch.Tensor  # [NC, COMP.width]
    expr: torch.Tensor  # [NC, Le, EXPR.width] (padded)
    expr_len: torch.Tensor  # [NC]
    trans: torch.Tensor  # [NC, Lt, TRANSFORM.width] (padded, with a leading start token)
    trans_len: torch.Tensor
    loop_vec: torch.Tensor  # [NL, LOOP.width]
    levels: list[dict]  # per height: node ids, child comp / loop index lists
    roots: list[list[tuple[str, int]]]  # per sample: ("c", comp) / ("l", node)

    @property
    def size(self) -> int:
        return len(self.roots)


def collate(samples: list[ProgramFeatures]) -> Batch:
    comp_vec, exprs, trans = [], [], []
    loop_vec: list[np.ndarray] = []
    nodes: list[tuple[int, list[int], list[int]]] = []  # (height, comp children, loop children)
    roots = []
    for f in samples:
        base = len(comp_vec)
        for c in f.comps:
            comp_vec.append(c.vector)
            exprs.append(torch.from_numpy(c.expression))
            t = np.concatenate([np.zeros((1, TRANSFORM.width), np.float32), c.transforms]) \
                if len(c.transforms) else np.zeros((1, TRANSFORM.width), np.float32)
            trans.append(torch.from_numpy(t))

        def add(node) -> tuple[str, int]:
            kind, x = node
            if kind == "comp":
                return ("c", base + x)
            kids = [add(ch) for ch in x.children]
            height = 1 + max([nodes[i][0] for k, i in kids if k == "l"], default=-1)
            nodes.append((height, [i for k, i in kids if k == "c"], [i for k, i in kids if k == "l"]))
            loop_vec.append(x.vector)
            return ("l", len(nodes) - 1)

        roots.append([add(r) for r in f.roots])
    levels = []
    for h in range(max((n[0] for n in nodes), default=-1) + 1):
        ids = [i for i, n in enumerate(nodes) if n[0] == h]
        levels.append({"ids": ids, "comps": [nodes[i][1] for i in ids], "loops": [nodes[i][2] for i in ids]})
    return Batch(
        comp_vec=torch.from_numpy(np.stack(comp_vec)),
        expr=pad_sequence(exprs, batch_first=True),
        expr_len=torch.tensor([len(e) for e in exprs]),
        trans=pad_sequence(trans, batch_first=True),
        trans_len=torch.tensor([len(t) for t in trans]),
        loop_vec=torch.from_numpy(np.stack(loop_vec)) if loop_vec else torch.zeros(0, LOOP.width),
        levels=levels, roots=roots)


def _mlp(n_in: int, hidden: int, n_out: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ELU(), nn.Dropout(dropout),
                         nn.Linear(hidden, hidden), nn.ELU(), nn.Linear(hidden, n_out))


class CostModel(nn.Module):
    def __init__(self, hidden: int = 128, dropout: float = 0.05):
        super().__init__()
        H = hidden
        self.hidden = hidden
        self.register_buffer("comp_mean", torch.zeros(COMP.width))
        self.register_buffer("comp_std", torch.ones(COMP.width))
        self.register_buffer("loop_mean", torch.zeros(LOOP.width))
        self.register_buffer("loop_std", torch.ones(LOOP.width))
        self.expr_lstm = nn.LSTM(EXPR.width, H, batch_first=True)
        self.trans_lstm = nn.LSTM(TRANSFORM.width, H, batch_first=True)
        self.comp_mlp = _mlp(COMP.width + 2 * H, 2 * H, H, dropout)
        self.child_comps = nn.LSTM(H, H, batch_first=True)
        self.child_loops = nn.LSTM(H, H, batch_first=True)
        self.start = nn.Parameter(torch.zeros(1, 1, H))  # leads every child/root sequence
        self.loop_mlp = _mlp(LOOP.width + 2 * H, 2 * H, H, dropout)
        self.roots = nn.LSTM(H, H, batch_first=True)
        self.head = _mlp(H, H, 1, dropout)

    def set_normalization(self, comp: np.ndarray, loop: np.ndarray) -> None:
        """Standardize inputs with statistics of the training set (stored with the weights)."""
        for name, x in (("comp", comp), ("loop", loop)):
            t = torch.from_numpy(x).float()
            getattr(self, f"{name}_mean").copy_(t.mean(0))
            getattr(self, f"{name}_std").copy_(t.std(0).clamp_min(1e-3))

    @staticmethod
    def _last(lstm: nn.LSTM, seqs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(seqs, lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, (h, _) = lstm(packed)
        return h[-1]

    def _children(self, lstm: nn.LSTM, emb: torch.Tensor, lists: list[list[int]]) -> torch.Tensor:
        n = len(lists)
        longest = max((len(x) for x in lists), default=0)
        seq = self.start.expand(n, longest + 1, self.hidden).clone()
        for row, idx in enumerate(lists):
            if idx:
                seq[row, 1:len(idx) + 1] = emb[idx]
        lengths = torch.tensor([len(x) + 1 for x in lists])
        return self._last(lstm, seq, lengths)

    def forward(self, b: Batch) -> torch.Tensor:
        """Predicted log speedup, one per sample."""
        comp_in = (b.comp_vec - self.comp_mean) / self.comp_std
        e = self._last(self.expr_lstm, b.expr, b.expr_len)
        t = self._last(self.trans_lstm, b.trans, b.trans_len)
        comp = self.comp_mlp(torch.cat([comp_in, e, t], dim=1))
        loops = torch.zeros(len(b.loop_vec), self.hidden)
        loop_in = (b.loop_vec - self.loop_mean) / self.loop_std
        for lvl in b.levels:
            ids = lvl["ids"]
            hc = self._children(self.child_comps, comp, lvl["comps"])
            hl = self._children(self.child_loops, loops, lvl["loops"])
            out = self.loop_mlp(torch.cat([loop_in[ids], hc, hl], dim=1))
            loops = loops.index_copy(0, torch.tensor(ids), out)
        seqs = []
        for r in b.roots:
            parts = [self.start[0, 0]] + [comp[i] if k == "c" else loops[i] for k, i in r]
            seqs.append(torch.stack(parts))
        lengths = torch.tensor([len(s) for s in seqs])
        h = self._last(self.roots, pad_sequence(seqs, batch_first=True), lengths)
        return self.head(h).squeeze(1)

    @torch.no_grad()
    def predict(self, samples: list[ProgramFeatures], batch_size: int = 256) -> np.ndarray:
        """Predicted speedups (not logs) for featurized candidates."""
        self.eval()
        out = []
        for k in range(0, len(samples), batch_size):
            out.append(torch.exp(self(collate(samples[k:k + batch_size]))).numpy())
        return np.concatenate(out) if out else np.zeros(0)
