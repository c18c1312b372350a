"""A tool's timeout stops everything the tool started (polycc's pluto outlived its script)."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from looper.runtime.process import run_tool


def test_a_timeout_kills_the_tools_children(tmp_path):
    marker = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {marker}; wait"
    start = time.perf_counter()
    with pytest.raises(subprocess.TimeoutExpired):
        run_tool(["bash", "-c", script], timeout=1.0)
    assert time.perf_counter() - start < 20
    pid = int(marker.read_text())
    time.sleep(0.2)
    status = Path(f"/proc/{pid}/status")
    if status.exists():  # the grandchild is gone, or a zombie nobody reaped yet: not running
        state = next(line for line in status.read_text().splitlines() if line.startswith("State:"))
        assert "Z" in state, state


def test_output_and_status_as_subprocess_run():
    r = run_tool(["bash", "-c", "echo out; echo err >&2; exit 3"], timeout=10)
    assert (r.returncode, r.stdout, r.stderr) == (3, "out\n", "err\n")
