"""The original program as every candidate is compared with: its outputs and its time.

Outputs that differ only because gcc contracts a*b+c into an FMA in one loop order and not in
another (ill-conditioned kernels such as gramschmidt amplify that rounding) are told apart from
wrong code by a second check with both programs built with -ffp-contract=off, and only in programs
whose original's own outputs change with contraction: otherwise the difference is not rounding
(gcc's AVX-512 miscompile of some fused stencils, see README, is caught this way).
"""
from __future__ import annotations

import time
from pathlib import Path

from ..errors import LooperError
from ..ir.schedule import Lowered, original
from .builder import ProgramBuilder
from .compile import CompileError
from .limits import TimeLimits
from .run import Runner, status_line


class Reference:
    """The original's saved outputs (exact and as built), its FMA sensitivity, its run cost."""

    def __init__(self, builder: ProgramBuilder, runner: Runner, limits: TimeLimits, workdir: Path):
        self.builder = builder
        self.runner = runner
        self.limits = limits
        self.outputs = workdir / "reference.bin"
        self.exact_outputs = workdir / "reference-exact.bin"
        self.has_outputs = False
        self.fma_sensitive: bool | None = None  # do the original's outputs depend on FMA contraction?

    @property
    def original(self) -> Lowered:
        return original(self.builder.program)

    def record(self, repeats: int) -> list[float]:
        """Run the original `repeats` + 1 times, saving its outputs; returns the timed runs' times
        and records the run's cost outside the kernel in the time limits."""
        binary = self.builder.build([self.original])
        t0 = time.perf_counter()
        res = self.runner.run(binary.path, 0, repeats + 1, mode=f"save:{self.outputs}")
        wall = time.perf_counter() - t0
        if not res.ok:
            raise CompileError(f"the original program failed: {res.describe_failure()}")
        self.limits.overhead = max(self.limits.overhead or 0.0, wall - sum(res.times))
        self.has_outputs = True
        return res.times[1:] or res.times

    def same_without_fma(self, candidate: Lowered, timeout: float) -> bool:
        """Whether `candidate` computes what the original does once neither contracts FMAs, in
        a program whose outputs depend on FMA contraction at all."""
        if self.builder.exact_flags == self.builder.flags:
            return False  # the check that failed was already exact
        try:
            if self.fma_sensitive is None:
                self.fma_sensitive = self._original_is_fma_sensitive(timeout)
            if not self.fma_sensitive:
                return False
            cand = self.builder.build([candidate], exact=True)
        except (CompileError, LooperError):
            return False
        res = self.runner.run(cand.path, 0, 1, mode=f"check:{self.exact_outputs}", timeout=timeout)
        return res.ok and status_line(res.stdout, "CHECK") == "0"

    def _original_is_fma_sensitive(self, timeout: float) -> bool:
        ref = self.builder.build([self.original], exact=True)
        saved = self.runner.run(ref.path, 0, 1, mode=f"save:{self.exact_outputs}", timeout=timeout)
        versus = self.runner.run(ref.path, 0, 1, mode=f"check:{self.outputs}", timeout=timeout)
        return saved.ok and versus.returncode == 4
