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

Trees of any shape batch together (`batch`): nodes are processed by height, each level's
variable-length child sequences packed into one LSTM call.  This module defines the network
(its version: `batch.ARCHITECTURE`); `inference` computes the same forward pass in numpy, for the
search, which then never imports torch.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from .batch import Batch, collect
from .features import COMP, EXPR, LOOP, TERMS, TRANSFORM, ProgramFeatures


def collate(samples: list[ProgramFeatures]) -> Batch[torch.Tensor]:
    """Samples -> one batch of tensors, each distinct computation and loop once."""
    return collect(samples).map(torch.from_numpy)


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
