"""Optional dependencies: what only training or a cluster needs, asked for by name.

`looper optimize` needs neither PyTorch nor Dask (the search predicts in numpy,
`costmodel.inference`), so a plain install leaves them out: PyTorch from a range on PyPI is a
CUDA build of several GB.  A command that needs one says which and how to install it, as any
other user error: one line, exit status 2.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from .errors import LooperError

#: how to install each optional dependency (PyTorch first and pinned: a range pulls CUDA)
INSTALL = {
    "torch": "pip install torch==2.13.0 (the CPU build; then `pip install 'looper[train]'` adds nothing more)",
    "distributed": "pip install 'looper[dask]'",
}


class MissingDependency(LooperError):
    """A command needs an optional dependency that is not installed."""


def require(module: str, purpose: str) -> ModuleType:
    """`module` imported, or a `MissingDependency` saying that `purpose` needs it and how to get it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.partition(".")[0]
        raise MissingDependency(f"{purpose} needs {top}, which is not installed: "
                                f"{INSTALL.get(top, f'pip install {top}')}") from None
