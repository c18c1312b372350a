"""Building one program's variants: lowered schedules -> C (PolyBench-style harness) -> binary.

The harness is one translation unit, compiled once per program and flags and cached; the
variants are another, compiled per batch (`runtime.compile.compile_split`).  Every build is
cached by content, so the same candidate is never compiled twice.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..codegen.harness import kernel_function, split_program_c
from ..ir.program import Program
from ..ir.schedule import Lowered
from .compile import EXACT_FLAGS, OPT_FLAGS, Binary, compile_split


@dataclass
class ProgramBuilder:
    """Builds variants of one program with one set of compiler flags."""

    program: Program
    flags: tuple[str, ...] = OPT_FLAGS
    # what gcc was actually given: `flags`, plus the medium code model for programs with more
    # than 2 GB of arrays (runtime.compile)
    build_flags: tuple[str, ...] = field(default=())
    cc: str = "gcc"  # the compiler (`looper optimize --cc`)
    jobs: int = 1  # compilers run at once on a batch's kernels: the host's CPUs (`Target.cores`)

    def __post_init__(self):
        self.flags = tuple(self.flags)
        self.build_flags = self.build_flags or self.flags

    @property
    def exact_flags(self) -> tuple[str, ...]:
        """The flags without FMA contraction: outputs comparable bit for bit."""
        return self.flags + tuple(f for f in EXACT_FLAGS if f not in self.flags)

    def build(self, variants: Sequence[Lowered], exact: bool = False) -> Binary:
        """One binary holding `variants` (variant k runs `kernel_k`), their kernels compiled
        `jobs` at a time."""
        binary = compile_split(*split_program_c(self.program, list(variants), self.jobs),
                               self.exact_flags if exact else self.flags, cc=self.cc)
        if not exact:
            self.build_flags = tuple(f for f in binary.flags if not f.startswith("-D"))
        return binary

    @staticmethod
    def code(lowered: Lowered) -> str:
        """The C of one variant's kernel function (what a measurement is keyed by)."""
        return str(kernel_function(lowered, "kernel"))
