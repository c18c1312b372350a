"""Running a tool with a time limit that also stops what it started.

`subprocess.run(timeout=...)` kills the process it started, not that process's children: polycc
is a shell script whose `pluto` went on for 50 minutes after its parent was killed, taking a core
from every timing that followed.  A tool here runs in a session of its own, and a timeout kills
the whole process group.
"""
from __future__ import annotations

import os
import signal
import subprocess

from ..interrupts import raise_pending


def run_tool(cmd: list[str], timeout: float | None, **kwargs) -> subprocess.CompletedProcess:
    """`subprocess.run(cmd, capture_output=True, text=True, ...)` whose timeout kills every process
    the tool started (`subprocess.TimeoutExpired` is raised as usual)."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                          **kwargs) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            raise
        except BaseException:  # an interrupt: the tool must not outlive looper either
            _kill_group(proc)
            raise
    raise_pending()  # an interrupt dropped while the process started (looper.interrupts)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
