"""Older feature layouts and networks, and a model trained on one widened to the current ones.

A feature version that only adds inputs (new fields, more slots in the one-hot of kinds) keeps
every input an older model read, at another offset.  Such a model is widened rather than refused:
its weights on the inputs it knew move to where those inputs are now, the new inputs get zero
weights (and mean 0, deviation 1 for their standardization).  It then predicts exactly what it
predicted for every schedule its version could describe, and ignores what the new fields add
until it is retrained on data that has them (or is the start of a training: `looper train --init`).

The same holds for architecture 3, whose head read three embeddings: architecture 4's head reads
a fourth (the cost terms', `features.TERMS`), which a widened model weights by zero; its terms
MLP is a fresh one's.

`LAYOUTS[v]` describes version v by its layouts' fields; a version not described here is refused.
Widening works on numpy arrays (`widen_arrays`), so that the search's torch-free loader
(`inference`) widens as `store.load_model` does (`widen_state`, on tensors).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .batch import ARCHITECTURE
from .features import (
    COMP, FEATURE_VERSION, LOOP, MAX_ACCESSES, MAX_CONSTRAINTS, MAX_ITERS, MAX_LOOPS, TRANSFORM, ACCESS,
    DTYPES, Layout,
)

if TYPE_CHECKING:
    import torch

_COMP_V3 = [("dtype", len(DTYPES)), ("depth", 1), ("n_loads", 1), ("n_ops", 1), ("instances", 1),
            ("domain", MAX_CONSTRAINTS * (MAX_ITERS + 2)), ("schedule", MAX_LOOPS * (MAX_ITERS + 2)),
            ("accesses", MAX_ACCESSES * ACCESS.width), ("parallel", MAX_LOOPS), ("tiled", MAX_LOOPS),
            ("unrolled", MAX_LOOPS), ("fused", 1), ("distributed", 1), ("shifted", 1), ("skewed", 1),
            ("interchanged", 1), ("reversed", 1)]
_LOOP_V3 = [("extent", 1), ("level", 1), ("parallel", 1), ("tile", 1), ("point", 1), ("unroll", 1),
            ("innermost", 1), ("n_comps", 1), ("n_loops", 1), ("skewed", 1)]
_TRANSFORM_V3 = [("kind", 9), ("levels", 3), ("matrix", 9), ("sizes", 3), ("factor", 1), ("shift", 3),
                 ("depth", 1), ("cuts", 1)]

# version -> (COMP, LOOP, TRANSFORM) as that version laid them out (version 5 added TERMS, which
# version 4's models do not read; version 6 changed definitions, not layouts: the strides of a
# statement whose rows isl repeats, and the terms' reuse per reference, which a version 5 model
# reads where it read their old values; so did version 7: the terms' operations and sparse flows)
LAYOUTS: dict[int, tuple[Layout, Layout, Layout]] = {
    3: (Layout(_COMP_V3), Layout(_LOOP_V3), Layout(_TRANSFORM_V3)),
    4: (COMP, LOOP, TRANSFORM),
    5: (COMP, LOOP, TRANSFORM),
    6: (COMP, LOOP, TRANSFORM),
    FEATURE_VERSION: (COMP, LOOP, TRANSFORM),
}
# architectures a model can be widened from: 3 had no terms MLP and a head of three embeddings
WIDENABLE_ARCHITECTURES = (3,)


def columns(old: Layout, new: Layout) -> np.ndarray:
    """Where each input of `old` is in `new` (a field keeps its name; a widened field keeps its
    first entries where they were)."""
    out = np.empty(old.width, dtype=np.int64)
    for name, at in old.slices.items():
        width = at.stop - at.start
        there = new[name]
        if there.stop - there.start < width:
            raise ValueError(f"field {name} narrowed from {width} to {there.stop - there.start}: not a widening")
        out[at] = np.arange(there.start, there.start + width)
    return out


def project(x: np.ndarray, old: Layout, new: Layout) -> np.ndarray:
    """A vector (or rows of vectors) of layout `new` as `old` laid it out: the inputs `old` had."""
    return x[..., columns(old, new)]


def widen_arrays(state: dict[str, np.ndarray], version: int, architecture: int = ARCHITECTURE,
                 fresh: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The state of a model (or ensemble) trained on features `version` with network
    `architecture`, widened to the current layouts and network.  `fresh`: the state of a new model
    of the current architecture (same members), whose parameters fill what an older architecture
    lacks (the terms MLP); needed only when `architecture` is older.  Raises KeyError for a version
    `LAYOUTS` does not describe."""
    comp_old, loop_old, trans_old = LAYOUTS[version]
    comp_cols, loop_cols = columns(comp_old, COMP), columns(loop_old, LOOP)
    trans_cols = columns(trans_old, TRANSFORM)
    out = {}
    for key, t in state.items():
        name = key.split(".", 2)[2] if key.startswith("members.") else key  # an ensemble's member
        if name in ("comp_mean", "loop_mean", "comp_std", "loop_std"):
            new_width, cols = (COMP.width, comp_cols) if name.startswith("comp") else (LOOP.width, loop_cols)
            wide = (np.ones if name.endswith("std") else np.zeros)(new_width, dtype=t.dtype)
            wide[cols] = t
            out[key] = wide
        elif name == "trans_lstm.weight_ih_l0":
            out[key] = _widen_inputs(t, trans_cols, TRANSFORM.width)
        elif name == "comp_mlp.0.weight":
            out[key] = _widen_inputs(t, comp_cols, COMP.width)
        elif name == "loop_mlp.0.weight":
            out[key] = _widen_inputs(t, loop_cols, LOOP.width)
        elif name == "head.0.weight" and architecture == 3:  # a fourth embedding read, by zero weights
            out[key] = np.concatenate([t, np.zeros((t.shape[0], t.shape[1] // 3), dtype=t.dtype)], axis=1)
        else:
            out[key] = t
    if architecture == 3:
        if fresh is None:
            raise ValueError("widening architecture 3 needs a fresh model's state for its terms MLP")
        for key, t in fresh.items():
            name = key.split(".", 2)[2] if key.startswith("members.") else key
            if name.startswith("terms_"):
                out[key] = t.astype(next(iter(state.values())).dtype) if name.startswith("terms_mlp") else t
    elif architecture != ARCHITECTURE:
        raise KeyError(f"architecture {architecture}")
    return out


def widen_state(state: dict[str, torch.Tensor], version: int, architecture: int = ARCHITECTURE,
                fresh: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """`widen_arrays` on a torch state dict (what `store.load_model` reads)."""
    import torch
    wide = widen_arrays({k: t.numpy() for k, t in state.items()}, version, architecture,
                        None if fresh is None else {k: t.numpy() for k, t in fresh.items()})
    return {k: torch.from_numpy(t) for k, t in wide.items()}


def _widen_inputs(w: np.ndarray, cols: np.ndarray, new_width: int) -> np.ndarray:
    """A weight matrix whose first inputs are an old layout's (then the hidden states the layer
    also reads, unchanged): the layout's columns moved to `cols` among `new_width` inputs."""
    n_layout = len(cols)
    wide = np.zeros((w.shape[0], new_width), dtype=w.dtype)
    wide[:, cols] = w[:, :n_layout]
    return np.concatenate([wide, w[:, n_layout:]], axis=1)
