"""Saving and loading model weights with their metadata; nothing in a weights file can run code.

A weights file (`torch.save`'s zip format) holds the state dict and a metadata dict (points,
programs, CPU, flags, metrics, dataset hash, git revision, feature version, architecture).  The
same metadata is written next to it as JSON for people.  Training reads it with
`torch.load(weights_only=True)` (`load_model`); the search reads it without torch (`read_weights`:
a restricted unpickler rebuilding the tensors as numpy arrays, for `inference`), since importing
torch takes 3 s of every `looper optimize`.  A model of an older feature version whose inputs the
current layouts keep is widened to them on load (`costmodel.migrate`: the same predictions, the
new inputs unread); one of any other version is refused.  The shipped model is package data
(`weights/`), found through `importlib.resources`, so an installed wheel carries it.
"""
from __future__ import annotations

import json
import os
import pickle
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from ..errors import LooperError
from ..optional import require
from .batch import ARCHITECTURE
from .features import FEATURE_VERSION
from .migrate import LAYOUTS, WIDENABLE_ARCHITECTURES, widen_state

if TYPE_CHECKING:
    import torch

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
    import torch
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())


def save_model(model: CostModel | Ensemble, path: str | Path, meta: dict) -> None:
    """Write weights (parameters as float16; `model` is rounded to them in place) and metadata."""
    import torch

    from .model import CostModel, Ensemble
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


def existing(path: str | Path | None) -> Path:
    """The weights file to load (None: `default_model_path`), which must exist."""
    path = Path(path) if path else default_model_path()
    if not path.exists():
        raise ModelError(f"no cost model at {path} (train one with `looper train`, or use "
                         f"--evaluator measure)")
    return path


def must_widen(path: Path, meta: dict) -> bool:
    """Whether weights of `meta`'s feature version and architecture are of an older layout or
    network that `costmodel.migrate` widens; weights this looper cannot use are refused."""
    version, architecture = meta.get("feature_version"), meta.get("architecture", 1)
    if architecture != ARCHITECTURE and architecture not in WIDENABLE_ARCHITECTURES:
        raise ModelError(f"cost model {path} has network architecture {architecture}, this "
                         f"looper builds architecture {ARCHITECTURE}: retrain it (scripts/train.sh)")
    if version == FEATURE_VERSION and architecture == ARCHITECTURE:
        return False
    if version not in LAYOUTS:
        raise ModelError(f"cost model {path} was trained on features version {version}, this looper "
                         f"computes version {FEATURE_VERSION}: retrain it (scripts/train.sh)")
    return True


def widened(meta: dict) -> dict:
    """The metadata of a widened model: the current versions, and where it was widened from."""
    return dict(meta, feature_version=FEATURE_VERSION, architecture=ARCHITECTURE,
                widened_from={"feature_version": meta.get("feature_version"),
                              "architecture": meta.get("architecture", 1)})


def load_model(path: str | Path | None = None) -> tuple[Ensemble, dict]:
    """The weights at `path` (None: the default) as a torch `Ensemble`, for training and for what
    needs the module; the search predicts with `inference.load_inference_model`."""
    torch = require("torch", f"loading cost model {path or DEFAULT_MODEL} as a PyTorch network (for training, "
                             f"or to widen an older network's weights)")

    from .model import CostModel, Ensemble
    path = existing(path)
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unreadable file is the same user-facing problem
        raise ModelError(f"cannot load cost model {path}: {e}") from None
    meta = blob.get("meta", {})
    state = blob["state"]
    widen = must_widen(path, meta)
    model = Ensemble([CostModel(hidden=int(meta.get("hidden", 128))) for _ in range(int(meta.get("members", 1)))])
    if widen:
        # an older layout or network whose inputs the current one keeps: the same predictions,
        # the new inputs unread (the terms MLP a seeded fresh one's)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            fresh = Ensemble([CostModel(hidden=model.hidden) for _ in model.members]).state_dict()
        state = widen_state(state, meta["feature_version"], meta.get("architecture", 1), fresh)
        meta = widened(meta)
    try:
        model.load_state_dict(state)
    except RuntimeError as e:
        raise ModelError(f"cost model {path} does not fit this looper's network: {str(e)[:200]}; "
                         f"retrain it (scripts/train.sh)") from None
    model.eval()
    return model, meta


# -- reading weights without torch ---------------------------------------------------------------

# the storage types a state dict's tensors have, as `torch.save` names them
_STORAGES = {"HalfStorage": np.float16, "FloatStorage": np.float32, "DoubleStorage": np.float64,
             "LongStorage": np.int64, "IntStorage": np.int32, "ByteStorage": np.uint8, "BoolStorage": np.bool_}


@dataclass(frozen=True)
class _StorageType:
    """What the pickle's `torch.<X>Storage` stands for: only the element type (not callable)."""

    dtype: np.dtype


class _WeightsUnpickler(pickle.Unpickler):
    """`torch.save`'s pickle with every tensor rebuilt as a numpy array from its raw storage.

    The pickle may name only the tensor rebuilder, storage types and OrderedDict (a tensor's empty
    backward hooks); any other global is refused before it is looked up, so a weights file cannot
    run code."""

    def __init__(self, data: BinaryIO, archive: zipfile.ZipFile, prefix: str, order: str, path: Path):
        super().__init__(data)
        self.archive, self.prefix, self.order, self.path = archive, prefix, order, path
        self.storages: dict[str, np.ndarray] = {}

    def find_class(self, module: str, name: str) -> object:
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return self._rebuild_tensor
        if module == "torch" and name in _STORAGES:
            return _StorageType(np.dtype(_STORAGES[name]).newbyteorder(self.order))
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedDict
        raise ModelError(f"cost model {self.path} names {module}.{name}: a weights file holds tensors "
                         f"and metadata only; refusing to load it")

    def persistent_load(self, pid: object) -> np.ndarray:
        """A storage, as `torch.save` names it: ("storage", type, key, location, elements)."""
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[2], str)):
            raise ModelError(f"cost model {self.path}: unknown persistent object {str(pid)[:80]}")
        _, kind, key, _, numel = pid
        if key not in self.storages:
            raw = self.archive.read(f"{self.prefix}data/{key}")
            self.storages[key] = np.frombuffer(raw, dtype=kind.dtype, count=numel)
        return self.storages[key]

    def _rebuild_tensor(self, storage: np.ndarray, offset: int, size: tuple, stride: tuple, *_) -> np.ndarray:
        """`torch._utils._rebuild_tensor_v2`: the view of `storage` a tensor is, copied."""
        end = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else offset
        if not isinstance(storage, np.ndarray) or offset < 0 or min(stride, default=0) < 0 \
                or len(size) != len(stride) or end > len(storage):
            raise ModelError(f"cost model {self.path}: a tensor lies outside its storage")
        view = np.lib.stride_tricks.as_strided(storage[offset:], tuple(size), [s * storage.itemsize for s in stride])
        return view.copy()


def read_weights(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    """The state dict (as numpy arrays) and metadata of a weights file written by `save_model`,
    without torch."""
    try:
        with zipfile.ZipFile(path) as archive:
            [pkl] = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
            prefix = pkl[:-len("data.pkl")]
            names = set(archive.namelist())
            order = ">" if prefix + "byteorder" in names and archive.read(prefix + "byteorder") == b"big" else "<"
            with archive.open(pkl) as data:
                blob = _WeightsUnpickler(data, archive, prefix, order, path).load()
    except ModelError:
        raise
    except Exception as e:  # noqa: BLE001 - any unreadable file is the same user-facing problem
        raise ModelError(f"cannot load cost model {path}: {e}") from None
    state, meta = (blob.get("state"), blob.get("meta", {})) if isinstance(blob, dict) else (None, None)
    if not isinstance(state, dict) or not isinstance(meta, dict) \
            or not all(isinstance(k, str) and isinstance(v, np.ndarray) for k, v in state.items()):
        raise ModelError(f"cost model {path} holds no state dict of tensors")
    return state, meta
