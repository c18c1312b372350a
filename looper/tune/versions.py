"""One program tuned at several sizes, written as one piece of code that dispatches on them.

looper specializes a kernel to the sizes it optimizes for, and the code it writes runs the tuned
loops only at those sizes.  A function called at several sizes gets one tuned version per set:

- a C file: each scop region holds one block per set of sizes and the original statements for
  any other (`codegen.inplace.versions_code`);
- a Python program with `--emit function`: one entry point taking the sizes, calling the version
  tuned for them, else the original loops (`codegen.dispatch`).

Each version is an ordinary answer (`looper optimize`'s or `looper apply`'s at that size),
verified at its own small stand-in before it gets here.  The versions must be told apart at run
time: a region whose sizes are fixed by macros (no size variable to test), or two sets the
region sees as the same sizes, is an error.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import LooperUsageError


@dataclass(frozen=True)
class SizeSpec:
    """How the program was parsed at one set of sizes: a dataset (`--size`) and `-D` values."""

    size: str | None = None
    defines: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        parts = ([self.size] if self.size else []) + list(self.defines)
        return "+".join(parts) or "default"


def parse_sizes_option(text: str) -> list[SizeSpec]:
    """`--sizes MEDIUM,LARGE`, `--sizes N=500,N=1000`, `--sizes LARGE,LARGE+NI=500`: sets of sizes
    separated by commas, each a dataset and/or `NAME=V` values joined by `+` (as `SizeSpec.label`
    spells them; the values add to the command's own -D), each given once."""
    specs = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        parts = [p.strip() for p in item.split("+")]
        datasets = [p.upper() for p in parts if p and "=" not in p]
        if len(datasets) > 1 or not all(parts):
            raise LooperUsageError(f"--sizes: '{item}' is not a dataset and NAME=V values joined by +")
        specs.append(SizeSpec(datasets[0] if datasets else None, tuple(p for p in parts if "=" in p)))
    if not specs:
        raise LooperUsageError("--sizes expects sets of sizes separated by commas (MEDIUM,LARGE or N=500,N=1000)")
    labels = [s.label for s in specs]
    twice = sorted({x for x in labels if labels.count(x) > 1})
    if twice:
        raise LooperUsageError(f"--sizes: {', '.join(twice)} given twice")
    return specs


@dataclass
class Versions:
    """One answer per set of sizes (`Kernel`s of a Python program, or `OptimizedFile`s of one C
    file), written as one dispatching function or one rewritten file."""

    answers: list
    specs: list[SizeSpec]

    def __post_init__(self) -> None:
        if self.is_c:
            for k in range(len(self.answers[0].kernels)):
                _check_distinct([a.cfile.scops[k].size_vars for a in self.answers], self.specs,
                                f"the scop at {self.path}:{self.answers[0].cfile.scops[k].begin_line}")
        else:
            _check_distinct([a.program.sizes for a in self.answers], self.specs, self.path)

    @property
    def is_c(self) -> bool:
        return hasattr(self.answers[0], "cfile")

    @property
    def path(self) -> str:
        return self.answers[0].path if self.is_c else self.answers[0].program.path

    @property
    def speedup(self) -> None:
        return None

    def summary_lines(self) -> list[str]:
        lines = [f"{len(self.answers)} sets of sizes, one version each; other sizes run the original code"]
        for spec, answer in zip(self.specs, self.answers):
            lines.append(f"at {spec.label}:")
            lines += ["  " + line for line in answer.summary_lines()]
        return lines

    def describe(self) -> str:
        return "\n".join(self.summary_lines())

    def to_json(self) -> dict:
        return {"versions": [{"size": s.size, "defines": list(s.defines), **a.to_json()}
                             for s, a in zip(self.specs, self.answers)]}

    # -- a C file -----------------------------------------------------------------------------------------
    @property
    def source(self) -> str:
        """The file with each scop region replaced by its versions and the original statements."""
        from ..codegen.inplace import Version, answer_code, inplace_versions_source
        self._only("c", "a C file's source")
        first = self.answers[0].cfile
        regions = [[Version(a.cfile.scops[k], answer_code(a.kernels[k].schedule), f"looper: {a.kernels[k].sequence}",
                            spec.label) for spec, a in zip(self.specs, self.answers)]
                   for k in range(len(first.scops))]
        return inplace_versions_source(first, regions)

    c_source = source

    def default_output(self) -> Path:
        p = Path(self.path)
        return p.with_name(p.stem + ".looper" + p.suffix)

    def write(self, path: str | os.PathLike | None = None) -> Path:
        """Write the rewritten C file (default: FILE.looper.c next to FILE.c), bytes as read."""
        from ..fileio import write_bytes
        out = Path(path) if path is not None else self.default_output()
        return write_bytes(out, self.source.encode("utf-8", "surrogateescape"))

    # -- a Python program ---------------------------------------------------------------------------------
    def function(self, name: str | None = None, header_name: str | None = None):
        """The kernel as one C function taking its sizes (`codegen.dispatch.dispatch_code`)."""
        from ..codegen.dispatch import dispatch_code
        self._only("python", "a function")
        return dispatch_code([k.schedule.lowered for k in self.answers],
                             [f"looper: {k.sequence}" for k in self.answers], name, header_name)

    def program_c(self, bake_env: str = "") -> str:
        raise LooperUsageError("a benchmark program runs at one set of sizes: several sizes make a function "
                               "(--emit function)", self.path)

    def compile(self, *args, **kwargs):
        raise TypeError("a kernel tuned at several sizes is a C function taking its sizes: build "
                        ".function() with your program")

    def _only(self, kind: str, what: str) -> None:
        if self.is_c != (kind == "c"):
            raise TypeError(f"{what} is for {'C files' if kind == 'c' else 'Python programs'}")


def _check_distinct(sizes: Sequence[dict], specs: Sequence[SizeSpec], where: str) -> None:
    """Every version must be entered at its own sizes, tested at run time."""
    if len(sizes) > 1 and not sizes[0]:
        raise LooperUsageError(f"{where} has no size variable to test at run time (its sizes are fixed when it is "
                               "compiled): one file cannot hold a version for each of several sizes")
    seen: dict[tuple, str] = {}
    for values, spec in zip(sizes, specs):
        key = tuple(sorted(values.items()))
        if key in seen:
            shown = ", ".join(f"{k}={v}" for k, v in values.items())
            raise LooperUsageError(f"{seen[key]} and {spec.label} give {where} the same sizes ({shown}): "
                                   "one version would never run")
        seen[key] = spec.label


def optimize_sizes(program, sizes: Sequence[str | SizeSpec], **options) -> Versions:
    """`looper.optimize` at each set of sizes (`sizes`: datasets, or `SizeSpec`s whose defines
    add to `options["defines"]`), as one `Versions`."""
    from ..api import c_defines, optimize
    common = c_defines(options.pop("defines", None))
    specs = [with_defines(s, common) for s in sizes]
    return Versions([optimize(program, s.size, defines=s.defines, **options) for s in specs], specs)


def with_defines(spec: str | SizeSpec, common: tuple[str, ...]) -> SizeSpec:
    """A set of sizes (a dataset name, or a `SizeSpec`) with the command's own -D values first."""
    if isinstance(spec, str):
        return SizeSpec(spec.upper(), common)
    return SizeSpec(spec.size, common + spec.defines)
