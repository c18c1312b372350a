"""The OpenMP environment programs are timed in, stated in every report.

By default nothing is added to the environment the user's shell has: a speed looper reports must
hold when the user runs the program as is.  `tuned` is what looper used to time everything with
(threads pinned one per core, waiting threads spinning): on a small VM, sleeping threads take up
to milliseconds to wake, so per-loop fork/joins cost far more without it.  Reports say which
environment their times were taken in, and how much the tuned one would still add.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from ..errors import LooperUsageError

TUNED_SETTINGS = (("OMP_PROC_BIND", "true"), ("OMP_PLACES", "cores"), ("OMP_WAIT_POLICY", "active"))


@dataclass(frozen=True)
class OmpEnv:
    """Settings added to the user's environment when a program runs (none: the default)."""

    settings: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        if not self.settings:
            return "default"
        return "tuned" if self.settings == TUNED_SETTINGS else "custom"

    def apply(self, env: dict[str, str]) -> dict[str, str]:
        """`env` with the settings added (they override what it had)."""
        out = dict(env)
        out.update(self.settings)
        return out

    def assignments(self) -> str:
        """`K=V K2=V2`, as a shell line or `--omp-env` takes them."""
        return " ".join(f"{k}={shlex.quote(v)}" for k, v in self.settings)

    def describe(self) -> str:
        """For reports: the settings, or what the shell had (its OpenMP variables)."""
        if self.settings:
            return f"{self.name}: {self.assignments()}"
        shell = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith(("OMP_", "GOMP_")))
        return "default: as the shell has it" + (f" ({shell})" if shell else " (no OpenMP variables set)")

    def command(self, program: str) -> str:
        """The command line that runs `program` in this environment."""
        return f"{self.assignments()} {program}".strip()

    @staticmethod
    def parse(text: str) -> "OmpEnv":
        """`default`, `tuned`, or `K=V ...` (OpenMP / libgomp variables)."""
        text = text.strip()
        if text in ("", "default"):
            return DEFAULT_ENV
        if text == "tuned":
            return TUNED_ENV
        out = []
        for item in shlex.split(text):
            key, eq, value = item.partition("=")
            if not eq or not key.replace("_", "").isalnum():
                raise LooperUsageError(f"--omp-env: expected default, tuned or NAME=VALUE ..., got '{item}'")
            if not key.startswith(("OMP_", "GOMP_", "KMP_")):
                raise LooperUsageError(f"--omp-env: {key} is not an OpenMP variable (OMP_*, GOMP_*)")
            out.append((key, value))
        return OmpEnv(tuple(out))


DEFAULT_ENV = OmpEnv()
TUNED_ENV = OmpEnv(TUNED_SETTINGS)
