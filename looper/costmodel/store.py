"""Saving and loading model weights with their metadata; `torch.load(weights_only=True)` only.

A weights file holds the state dict and a metadata dict (points, programs, CPU, flags, metrics,
dataset hash, git revision, feature version, architecture).  The same metadata is written next to
it as JSON for people.  A model of an older feature version whose inputs the current layouts
keep is widened to them on load (`costmodel.migrate`: the same predictions, the new inputs
unread); one of any other version is refused.  The
shipped model is package data (`weights/`), found through `importlib.resources`, so an installed
wheel carries it.
"""
from __future__ import annotations

import json
import os
from importlib.resources import files
from pathlib import Path

import torch

from ..errors import LooperError
from .features import FEATURE_VERSION
from .batch import ARCHITECTURE
from .migrate import LAYOUTS, WIDENABLE_ARCHITECTURES, widen_state
from .model import CostModel, Ensemble

DEFAULT_MODEL = "looper-v10.pt"


class ModelError(LooperError):
    """Missing, unreadable or incompatible weights."""


def weights_dir() -> Path:
    """Where the shipped weights are (a filesystem path: pip never installs a package zipped)."""
    return Path(os.fspath(files(__package__) / "weights"))


def default_model_path() -> Path:
    """$LOOPER_MODEL, else the shipped model."""
    env = os.environ.get("LOOPER_MODEL")
    return Path(env) if env else weights_dir() / DEFAULT_MODEL


def round_to_half(model: torch.nn.Module) -> None:
    """Round the parameters to float16 precision in place: that is how they are stored (a
    two-member ensemble is 5 MB instead of 10), so the model that is evaluated before saving is
    exactly the one that loads."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())


def save_model(model: CostModel | Ensemble, path: str | Path, meta: dict) -> None:
    """Write weights (parameters as float16; `model` is rounded to them in place) and metadata."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(model, CostModel):
        model = Ensemble([model])
    meta = dict(meta, feature_version=FEATURE_VERSION, architecture=ARCHITECTURE, hidden=model.hidden,
                members=len(model.members))
    round_to_half(model)
    params = {name for name, _ in model.named_parameters()}
    state = {k: v.half() if k in params else v for k, v in model.state_dict().items()}
    tmp = path.with_suffix(".tmp")
    torch.save({"state": state, "meta": meta}, tmp)
    os.replace(tmp, path)
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1, sort_keys=True))


def load_model(path: str | Path | None = None) -> tuple[Ensemble, dict]:
    path = Path(path) if path else default_model_path()
    if not path.exists():
        raise ModelError(f"no cost model at {path} (train one with `looper train`, or use "
                         f"--evaluator measure)")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unreadable file is the same user-facing problem
        raise ModelError(f"cannot load cost model {path}: {e}") from None
    meta = blob.get("meta", {})
    state = blob["state"]
    version, architecture = meta.get("feature_version"), meta.get("architecture", 1)
    if architecture != ARCHITECTURE and architecture not in WIDENABLE_ARCHITECTURES:
        raise ModelError(f"cost model {path} has network architecture {architecture}, this "
                         f"looper builds architecture {ARCHITECTURE}: retrain it (scripts/train.sh)")
    model = Ensemble([CostModel(hidden=int(meta.get("hidden", 128))) for _ in range(int(meta.get("members", 1)))])
    if version != FEATURE_VERSION or architecture != ARCHITECTURE:
        if version not in LAYOUTS:
            raise ModelError(f"cost model {path} was trained on features version {version}, this looper "
                             f"computes version {FEATURE_VERSION}: retrain it (scripts/train.sh)")
        # an older layout or network whose inputs the current one keeps: the same predictions,
        # the new inputs unread (the terms MLP a seeded fresh one's)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            fresh = Ensemble([CostModel(hidden=model.hidden) for _ in model.members]).state_dict()
        state = widen_state(state, version, architecture, fresh)
        meta = dict(meta, feature_version=FEATURE_VERSION, architecture=ARCHITECTURE,
                    widened_from={"feature_version": version, "architecture": architecture})
    try:
        model.load_state_dict(state)
    except RuntimeError as e:
        raise ModelError(f"cost model {path} does not fit this looper's network: {str(e)[:200]}; "
                         f"retrain it (scripts/train.sh)") from None
    model.eval()
    return model, meta
