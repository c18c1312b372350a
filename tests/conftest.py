"""Shared fixtures: kernel discovery, the shared reference data, a private build cache."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from looper.kernels import polybench_dir

ROOT = Path(__file__).resolve().parent.parent
KERNELS_DIR = polybench_dir()  # package data, wherever looper is installed
SHARED = Path(os.environ.get("LOOPER_SHARED", ROOT.parent / "shared"))
KERNELS = sorted(p.stem for p in KERNELS_DIR.glob("*.py"))


def kernel_path(name: str) -> Path:
    return KERNELS_DIR / f"{name.replace('-', '_')}.py"


def polybench_name(stem: str) -> str:
    """File stem -> PolyBench's own spelling (jacobi_2d -> jacobi-2d)."""
    return stem.replace("_", "-")


# Searches the tests run for other reasons than the default's measurements score with the model
# (nothing compiled while searching); tests of the hybrid, the default, ask for it by name.
os.environ.setdefault("LOOPER_EVALUATOR", "model")


@pytest.fixture(autouse=True, scope="session")
def _cache_dir(tmp_path_factory):
    """Keep test builds out of the user's cache unless LOOPER_CACHE_DIR is set by the caller."""
    if "LOOPER_CACHE_DIR" not in os.environ:
        os.environ["LOOPER_CACHE_DIR"] = str(tmp_path_factory.mktemp("looper-cache"))
    yield
