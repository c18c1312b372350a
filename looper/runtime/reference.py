"""The original program as every candidate is compared with: its outputs and its time.

Outputs that differ only because gcc contracts a*b+c into an FMA in one loop order and not in
another (ill-conditioned kernels such as gramschmidt amplify that rounding) are told apart from
wrong code by a second check with both programs built with -ffp-contract=off, where a legal
reordering gives the same bits.  That check excuses a difference only in programs whose
original's own outputs change with contraction, or whose candidate's contracted outputs stay
within rounding of the original's (`runtime.exact.within_rounding`): a new loop order can give gcc
an FMA the original's order did not (correlation's and trmm's reductions after an interchange
differ in the last bit), while a miscompile (gcc's AVX-512 one of some fused stencils, see
docs/design/verification.md) is far from the original's values and is never excused.

Two ways to compare: the harness' own check (`check:F`, a relative 1e-7 per value: what the
measuring evaluator has always used), or, with `exact`, every value equal (`runtime.exact`: what
verifying an answer before it is written uses).
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Sequence

from ..errors import LooperError
from ..ir.schedule import Lowered, original
from .builder import ProgramBuilder
from .compile import Binary, CompileError
from .exact import outputs_differ, within_rounding
from .limits import TimeLimits
from .run import Runner, status_line


class Reference:
    """The original's saved outputs (exact and as built), its FMA sensitivity, its run cost."""

    def __init__(self, builder: ProgramBuilder, runner: Runner, limits: TimeLimits, workdir: Path,
                 exact: bool = False):
        self.builder = builder
        self.runner = runner
        self.limits = limits
        self.outputs = workdir / "reference.bin"
        self.exact_outputs = workdir / "reference-exact.bin"
        self.has_outputs = False
        self.fma_sensitive: bool | None = None  # do the original's outputs depend on FMA contraction?
        self.exact = exact  # compare values exactly (runtime.exact), not with the harness' tolerance

    @property
    def original(self) -> Lowered:
        return original(self.builder.program)

    def record(self, repeats: int, binary: Binary | None = None, timeout: float | None = None) -> list[float]:
        """Time the original `repeats` times per the runner's protocol, saving its outputs; returns
        the times and records a process's cost outside the kernel and the runs' jitter in the time
        limits.  `binary`: one already built whose variant 0 is the original (saves a build)."""
        binary = binary or self.builder.build([self.original])
        t0 = time.perf_counter()
        res = self.runner.samples(binary.path, 0, max(1, repeats), mode=f"save:{self.outputs}", timeout=timeout)
        wall = time.perf_counter() - t0
        if not res.ok:
            raise CompileError(f"the original program failed: {res.describe_failure()}")
        processes = max(1, len(res.times)) if self.runner.protocol.cold else 1
        self.limits.overhead = max(self.limits.overhead or 0.0, (wall - sum(res.times)) / processes)
        self.limits.calibrate(res.times)
        self.has_outputs = True
        return res.times

    def same_without_fma(self, candidate: Lowered, timeout: float, threads: Sequence[int] = (),
                         contracted: Path | None = None) -> bool:
        """Whether `candidate` computes what the original does once neither contracts FMAs (at
        each of `threads`, default the runner's), in a program whose outputs depend on FMA
        contraction at all or whose `contracted` outputs (the candidate's, as built with the
        timing flags) are within rounding of the original's."""
        if self.builder.exact_flags == self.builder.flags:
            return False  # the check that failed was already exact
        try:
            if self.fma_sensitive is None:
                self.fma_sensitive = self._original_is_fma_sensitive(timeout)
            close = contracted is not None and within_rounding(self.outputs, contracted, self.builder.program)
            if not (self.fma_sensitive or close):
                return False
            cand = self.builder.build([candidate], exact=True)
        except (CompileError, LooperError):
            return False
        return all(self._agrees(cand.path, self.exact_outputs, timeout, t) is True for t in (threads or (None,)))

    def _original_is_fma_sensitive(self, timeout: float) -> bool:
        ref = self.builder.build([self.original], exact=True)
        saved = self.runner.run(ref.path, 0, 1, mode=f"save:{self.exact_outputs}", timeout=timeout)
        return saved.ok and self._agrees(ref.path, self.outputs, timeout) is False

    def _agrees(self, binary: Path, saved: Path, timeout: float, threads: int | None = None) -> bool | None:
        """Whether one run of `binary` (variant 0) computes the outputs saved in `saved`; None when
        it did not run to completion."""
        runner = self.runner if threads is None else dataclasses.replace(self.runner, threads=threads)
        if not self.exact:
            res = runner.run(binary, 0, 1, mode=f"check:{saved}", timeout=timeout)
            if res.returncode == 4:
                return False
            return True if res.ok and status_line(res.stdout, "CHECK") == "0" else None
        got = saved.with_name(saved.stem + "-run.bin")
        res = runner.run(binary, 0, 1, mode=f"save:{got}", timeout=timeout)
        if not res.ok:
            return None
        return outputs_differ(saved, got, self.builder.program) is None
