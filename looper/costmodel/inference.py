"""The cost model's forward pass in numpy: what the search predicts with, torch never imported.

Importing torch took 3.1-3.5 s of every fresh `looper optimize`, which only runs the network
forward on a CPU.  `NumpyModel` holds an ensemble's weights as float32 arrays and computes what
`model.Ensemble.predict` does, step for step after `model.CostModel.forward` (that module defines
the network; training keeps it), in float32 as torch computes: the predictions agree to float32
rounding (the shipped model: 1.3e-6 relative at most over 420 candidates of 2mm, deriche and
adi).  `load_inference_model` reads a weights file without torch (`store.read_weights`).

The matrix products run on one of BLAS's threads unless told otherwise (threadpoolctl), as torch's
inference did: the matrices are a few hundred wide, so a second thread gains nothing idle and
loses much beside a busy core (torch's: 17 s against 49 s for adi's model search).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from threadpoolctl import threadpool_limits

from .batch import ARCHITECTURE, Batch, collect
from .features import COMP, EXPR, LOOP, TRANSFORM, CompFeatures, LoopFeatures, ProgramFeatures
from .migrate import widen_arrays
from .store import ModelError, existing, load_model, must_widen, read_weights, widened

if TYPE_CHECKING:
    from .model import CostModel, Ensemble

Take = Callable[[str], np.ndarray]  # a member's weight by name, each read once


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # the same function as 1 / (1 + e^-x), without overflow


def _elu(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def _standard(x: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """Inputs standardized by the training set's statistics, clamped as the network clamps them."""
    return np.clip((x - mean) / std, -6.0, 6.0)


class _Lstm:
    """One `nn.LSTM` layer's weights: gates input, forget, cell, output, in torch's order."""

    def __init__(self, take: Take, name: str):
        self.w_ih = take(f"{name}.weight_ih_l0").T
        self.w_hh = take(f"{name}.weight_hh_l0").T
        self.bias = take(f"{name}.bias_ih_l0") + take(f"{name}.bias_hh_l0")

    def last(self, seqs: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Each sequence's hidden state after its last element (`CostModel._last`).  The sequences
        step together, longest first, each leaving the batch when it ends, as a packed sequence
        runs in torch; padding is never read."""
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
        n, steps, width = seqs.shape
        # every step's input part in one product
        inputs = (seqs[order].reshape(n * steps, width) @ self.w_ih + self.bias).reshape(n, steps, -1)
        h = np.zeros((n, self.w_hh.shape[0]), dtype=np.float32)
        c = np.zeros_like(h)
        for t in range(int(lengths[0]) if n else 0):
            k = int(np.count_nonzero(lengths > t))  # the sequences still running: a prefix
            i, f, g, o = np.split(inputs[:k, t] + h[:k] @ self.w_hh, 4, axis=1)
            c[:k] = _sigmoid(f) * c[:k] + _sigmoid(i) * np.tanh(g)
            h[:k] = _sigmoid(o) * np.tanh(c[:k])
        out = np.empty_like(h)
        out[order] = h
        return out


class _Mlp:
    """`model._mlp`: Linear, ELU, Dropout (inactive in inference), Linear, ELU, Linear."""

    def __init__(self, take: Take, name: str):
        self.layers = [(take(f"{name}.{k}.weight").T, take(f"{name}.{k}.bias")) for k in (0, 3, 5)]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        (w0, b0), (w1, b1), (w2, b2) = self.layers
        return _elu(_elu(x @ w0 + b0) @ w1 + b1) @ w2 + b2


class _Member:
    """One `CostModel`'s weights as float32 arrays, and its forward pass."""

    def __init__(self, state: dict[str, np.ndarray]):
        weights = {k: np.asarray(v, dtype=np.float32) for k, v in state.items()}
        take = weights.pop  # each weight is read once: what remains, the network does not have
        self.comp_norm = take("comp_mean"), take("comp_std")
        self.loop_norm = take("loop_mean"), take("loop_std")
        self.terms_norm = take("terms_mean"), take("terms_std")
        self.expr_lstm, self.trans_lstm = _Lstm(take, "expr_lstm"), _Lstm(take, "trans_lstm")
        self.comp_mlp = _Mlp(take, "comp_mlp")
        self.child_comps, self.child_loops = _Lstm(take, "child_comps"), _Lstm(take, "child_loops")
        self.start = take("start")[0]  # [1, H]: leads every child and root sequence
        self.loop_mlp = _Mlp(take, "loop_mlp")
        self.roots = _Lstm(take, "roots")
        self.terms_mlp, self.head = _Mlp(take, "terms_mlp"), _Mlp(take, "head")
        if weights:
            raise ValueError(f"weights the network does not have: {sorted(weights)[:5]}")
        self.hidden = self.start.shape[1]

    def __call__(self, b: Batch[np.ndarray]) -> np.ndarray:
        """Predicted log speedup, one per sample: `model.CostModel.forward`, step for step."""
        comp_in = _standard(b.comp_vec, *self.comp_norm)
        e = self.expr_lstm.last(b.expr, b.expr_len)[b.expr_index]
        t = self.trans_lstm.last(b.trans, b.trans_len)
        comp = self.comp_mlp(np.concatenate([comp_in, e, t], axis=1))  # distinct computations
        comp_table = np.concatenate([self.start, comp])
        loops = np.zeros((len(b.loop_vec), self.hidden), dtype=np.float32)  # distinct loops
        loop_in = _standard(b.loop_vec, *self.loop_norm)
        for lvl in b.levels:  # bottom-up: a level's child loops are all computed already
            hc = self.child_comps.last(comp_table[lvl.comps], lvl.comp_len)
            hl = self.child_loops.last(np.concatenate([self.start, loops])[lvl.loops], lvl.loop_len)
            loops[lvl.ids] = self.loop_mlp(np.concatenate([loop_in[lvl.ids], hc, hl], axis=1))
        table = np.concatenate([self.start, comp, loops])
        h = self.roots.last(table[b.roots], b.root_len)
        comp_sum = np.zeros((b.size, self.hidden), dtype=np.float32)
        np.add.at(comp_sum, b.comp_owner, comp[b.comp_index])
        loop_sum = np.zeros((b.size, self.hidden), dtype=np.float32)
        np.add.at(loop_sum, b.loop_owner, loops[b.loop_index])
        terms = self.terms_mlp(_standard(b.terms, *self.terms_norm))
        return self.head(np.concatenate([h, comp_sum, loop_sum, terms], axis=1))[:, 0]


class NumpyModel:
    """An ensemble of cost models in numpy; its prediction is the geometric mean of its members'
    (`model.Ensemble`)."""

    def __init__(self, members: list[dict[str, np.ndarray]]):
        """`members`: each member's state dict (a `CostModel`'s names)."""
        self.members = [_Member(m) for m in members]
        self.hidden = self.members[0].hidden

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray]) -> NumpyModel:
        """The model of a state dict: an `Ensemble`'s ("members.K.name") or a `CostModel`'s."""
        if not all(k.startswith("members.") for k in state):
            return cls([state])
        members: dict[int, dict[str, np.ndarray]] = {}
        for key, value in state.items():
            _, k, name = key.split(".", 2)
            members.setdefault(int(k), {})[name] = value
        return cls([members[k] for k in sorted(members)])

    @classmethod
    def of(cls, model: CostModel | Ensemble) -> NumpyModel:
        """The numpy copy of a torch model."""
        return cls.from_state({k: v.numpy() for k, v in model.state_dict().items()})

    def predict(self, samples: list[ProgramFeatures], batch_size: int = 256, threads: int | None = 1) -> np.ndarray:
        """Predicted speedups (not logs) for featurized candidates, `batch_size` at a time (equal
        parts of a batch's candidates are computed once), on `threads` BLAS threads (None: as
        BLAS is set)."""
        out = []
        with threadpool_limits(limits=threads, user_api="blas"):
            for k in range(0, len(samples), batch_size):
                b = collect(samples[k:k + batch_size])
                out.append(np.exp(np.mean([m(b) for m in self.members], axis=0)))
        return np.concatenate(out) if out else np.zeros(0)


def _probe() -> ProgramFeatures:
    """A statement in two nested loops: predicting it runs every weight of the network."""
    comp = CompFeatures(COMP.new(), EXPR.new()[None], TRANSFORM.new()[None])
    inner = LoopFeatures(LOOP.new(), [("comp", 0)])
    return ProgramFeatures([comp], [("loop", LoopFeatures(LOOP.new(), [("loop", inner)]))])


def load_inference_model(path: str | Path | None = None) -> tuple[NumpyModel, dict]:
    """The weights at `path` (None: `store.default_model_path`) for the search, with their
    metadata; refused or widened as `store.load_model` does.  Only weights of architecture 3 need
    torch (their widening draws a fresh terms MLP from torch's generator)."""
    path = existing(path)
    state, meta = read_weights(path)
    if must_widen(path, meta):
        if meta.get("architecture", 1) != ARCHITECTURE:
            model, meta = load_model(path)
            return NumpyModel.of(model), meta
        state, meta = widen_arrays(state, meta["feature_version"]), widened(meta)
    try:
        model = NumpyModel.from_state(state)
        if (len(model.members), model.hidden) != (int(meta.get("members", 1)), int(meta.get("hidden", 128))):
            raise ValueError(f"{len(model.members)} members of width {model.hidden}, not as its metadata says")
        model.predict([_probe()])
    except (KeyError, ValueError) as e:
        raise ModelError(f"cost model {path} does not fit this looper's network: {str(e)[:200]}; "
                         f"retrain it (scripts/train.sh)") from None
    return model, meta
