"""The scop mode's output check: every system's binary of looper's harness against gcc's.

gcc's build of the original runs first and saves its outputs (`save:F`); every other system
runs once and compares its outputs with them inside the harness (`check:F`, exit status 4 on a
difference).  A system whose outputs differ is WRONG and is never timed.  (The native mode
compares PolyBench's text dumps instead: `native.check_dumps`.)

Every other system's run is limited to `SLOWER` times gcc's (at least `FLOOR` seconds): a peer
that slow at the check size would be a timeout when timed anyway (Pluto's rendering of ludcmp
ran for the whole fixed 600 s at SMALL, in both input modes).
"""
from __future__ import annotations

import tempfile
from pathlib import Path
import time
from typing import Callable

from ..runtime.run import run_binary, status_line
from .peers import Build
from .results import SystemResult

SLOWER = 50.0  # a check run's limit, in multiples of gcc's check run
FLOOR = 30.0  # seconds: the least any check run gets


def check_outputs(builds: dict[str, Build], log: Callable[[str], None] = lambda s: None,
                  threads: int = 2, timeout: float = 600.0) -> dict[str, SystemResult]:
    """Run every build once, gcc first (its outputs are the reference), and compare the others'
    outputs with gcc's inside the harness: `checked`, `WRONG`, `crash`, `timeout` or why it did
    not build."""
    out: dict[str, SystemResult] = {}
    with tempfile.TemporaryDirectory(prefix="looper-check-") as tmp:
        ref = Path(tmp) / "reference.bin"
        limit = timeout
        for system, b in builds.items():
            if b.binary is None:
                out[system] = SystemResult(system, b.status, detail=b.detail)
            elif "gcc" in out and out["gcc"].status != "checked":
                out[system] = SystemResult(system, "unchecked", detail="the original did not run")
            else:
                t0 = time.perf_counter()
                out[system] = _check_one(system, b, ref, threads, limit)
                if system == "gcc":
                    limit = check_limit(time.perf_counter() - t0, timeout)
            log(f"  check {system:9} {out[system].status:8} {out[system].detail}")
    return out


def check_limit(gcc_seconds: float, timeout: float) -> float:
    """The time limit of the other systems' check runs, given gcc's (both input modes)."""
    return min(timeout, max(FLOOR, SLOWER * gcc_seconds))


def _check_one(system: str, b: Build, ref: Path, threads: int, timeout: float) -> SystemResult:
    mode = f"save:{ref}" if system == "gcc" else f"check:{ref}"
    res = run_binary(b.binary.path, 0, 1, timeout=timeout, threads=threads, mode=mode)
    if system != "gcc" and res.returncode == 4:
        bad = status_line(res.stdout, "CHECK")
        return SystemResult(system, "WRONG", detail=f"{bad} output values differ from gcc's")
    if res.timed_out:
        return SystemResult(system, "timeout", detail=f"over {timeout:.0f} s")
    if not res.ok:
        return SystemResult(system, "crash", detail=res.describe_failure())
    return SystemResult(system, "checked", detail=b.detail)
