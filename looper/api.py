"""looper from Python: optimize a program (Python subset or C with `#pragma scop`), inspect the
answer, get its C, and call it on NumPy arrays.

    import looper
    k = looper.optimize("gemm.py", size="LARGE")        # a path, or the program's text
    print(k.describe(), k.speedup)
    f = k.compile()                                      # a ctypes function, cached build
    f(alpha=1.5, beta=1.2, C=C, A=A, B=B)                # NumPy arrays updated in place

The command line (`looper optimize`) is a thin layer over `optimize`.  Every heavy import happens
inside the functions, so `import looper` stays cheap.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

from .errors import LooperUsageError

if TYPE_CHECKING:
    from .target import Target
    from .tune import TuneOptions

C_SUFFIXES = (".c", ".h")


def parse_defines(values: Iterable[str] | Mapping[str, int] | None) -> dict[str, int]:
    """`-D NAME=V` size overrides of a Python program, from "NAME=V" strings or a mapping."""
    if values is None:
        return {}
    if isinstance(values, Mapping):
        values = [f"{k}={v}" for k, v in values.items()]
    out: dict[str, int] = {}
    for v in values:
        name, eq, num = v.partition("=")
        if not eq or not name.isidentifier():
            raise LooperUsageError(f"-D expects NAME=INTEGER, got '{v}'")
        try:
            out[name] = int(num)
        except ValueError:
            raise LooperUsageError(f"-D {name}: '{num}' is not an integer") from None
        if out[name] < 0:
            raise LooperUsageError(f"-D {name}: sizes are non-negative")
    return out


def c_defines(values: Iterable[str] | Mapping[str, object] | None) -> tuple[str, ...]:
    """Preprocessor defines of a C file, as gcc takes them ("NAME" or "NAME=V")."""
    if values is None:
        return ()
    if isinstance(values, Mapping):
        return tuple(f"{k}={v}" if v is not None else str(k) for k, v in values.items())
    return tuple(values)


def is_c_input(program: str | os.PathLike) -> bool:
    if isinstance(program, str) and "\n" in program:
        return "#pragma scop" in program
    return Path(program).suffix in C_SUFFIXES


def load_programs(program: str | os.PathLike, size: str | None = None, defines=None,
                  includes: Iterable[str] = ()):
    """A Python program (`Program`) or a parsed C file (`CFile`, one program per scop), at sizes
    the machine can run (`ir.resources`: memory, C int ranges; a usage error otherwise).
    `polybench:NAME` names a kernel that ships with looper (`looper.kernels`)."""
    from .ir.resources import check_resources
    from .kernels import resolve_program
    loaded = _load(resolve_program(program), size, defines, includes)
    for p, sizes in ([(loaded, None)] if not hasattr(loaded, "scops") else
                     [(s.program, s.size_vars) for s in loaded.scops]):
        check_resources(p, sizes)
    return loaded


def _load(program: str | os.PathLike, size: str | None, defines, includes: Iterable[str]):
    if is_c_input(program):
        from .lang.c.cfile import cpp_flags_for, parse_c_file
        flags = cpp_flags_for(size, c_defines(defines), tuple(includes))
        if isinstance(program, str) and "\n" in program:
            with tempfile.TemporaryDirectory(prefix="looper-src-") as tmp:
                path = Path(tmp) / "kernel.c"
                path.write_text(program)
                return parse_c_file(str(path), flags + (f"-I{os.getcwd()}",))
        return parse_c_file(str(program), flags)
    from .lang.parse import parse_file, parse_source
    if includes:
        raise LooperUsageError("-I applies to C input only")
    if isinstance(program, str) and "\n" in program:
        return parse_source(program, "<string>", size, parse_defines(defines))
    return parse_file(program, size, parse_defines(defines))


@dataclass
class Kernel:
    """One optimized kernel: its program, the tuning run's answer, and its C in every form."""

    answer: object  # tune.Answer

    @property
    def program(self):
        """The program (`ir.program.Program`)."""
        return self.answer.program

    @property
    def result(self):
        """The search's result (`search.beam.SearchResult`), after verification."""
        return self.answer.result

    @property
    def evaluator(self) -> str:
        return self.answer.evaluator.value

    @property
    def verified(self) -> list:
        """The candidates the hybrid measured."""
        return self.answer.verified

    @property
    def notes(self) -> list:
        """What the search did differently from what was asked."""
        return self.answer.notes

    @property
    def omp_env(self):
        """The OpenMP environment measurements were taken in (None: none taken)."""
        return self.answer.omp_env

    @property
    def environment(self) -> list:
        return self.answer.environment

    @property
    def check(self):
        """Verification and the speed guard (`search.verify.AnswerCheck`; None: not run)."""
        return self.answer.check

    @property
    def schedule(self):
        """The transformation sequence found (a `transforms.schedule.Schedule`)."""
        return self.result.best

    @property
    def sequence(self) -> str:
        return self.result.best.describe()

    @property
    def speedup(self) -> float | None:
        """The answer's speedup over the original: measured with measure/hybrid, else predicted."""
        return self.result.best_score.speedup

    @property
    def predicted(self) -> float | None:
        sc = self.result.best_score
        if sc.predicted is not None:
            return sc.predicted
        return sc.speedup if self.evaluator == "model" else None

    @property
    def measured(self) -> float | None:
        sc = self.result.best_score
        return sc.speedup if self.evaluator != "model" and sc.ok and sc.status == "ok" else None

    def summary_lines(self) -> list[str]:
        from .search.report import summary_lines
        lines = summary_lines(self.program, self.result, self.evaluator)
        for v in self.verified:
            got = f"{v.measured.speedup:.2f}x" if v.measured.ok else v.measured.status
            lines.append(f"  verified: predicted {v.predicted:.2f}x, measured {got}: {v.schedule.describe()}")
        if self.omp_env is not None:
            lines.append(f"  times taken in the OpenMP environment {self.omp_env.describe()}")
        if self.check is not None:
            lines += self.check.lines()
        return lines + self.environment

    def describe(self) -> str:
        """The sequence, the speedup and the search's statistics, as `looper optimize` prints them."""
        return "\n".join(self.summary_lines())

    def explain(self) -> str:
        from .search.report import explain_lines
        return "\n".join(explain_lines(self.result))

    def to_json(self) -> dict:
        from .search.report import report_json
        extra = {"verified": [{"sequence": v.schedule.describe(), "predicted": v.predicted,
                               "measured": v.measured.speedup, "status": v.measured.status}
                              for v in self.verified],
                 "omp_env": self.omp_env.describe() if self.omp_env is not None else None,
                 "environment": [line.strip() for line in self.environment], "notes": self.notes}
        if self.check is not None:
            extra["verification"] = self.check.to_json()
            extra["verify_seconds"] = extra["verification"]["verify_seconds"]
            extra["speed_guard"] = extra["verification"]["speed_guard"]
        return report_json(self.program, self.result, self.evaluator, extra)

    def program_c(self, bake_env: str = "") -> str:
        """The complete C program; `bake_env` ("K=V ..."): OpenMP settings its `main` sets itself."""
        from .codegen.harness import program_c
        return program_c(self.program, [self.schedule.lowered], comments=[f"looper: {self.sequence}"],
                         bake_env=bake_env)

    @property
    def c_source(self) -> str:
        """The complete C program (PolyBench-style harness around the optimized kernel)."""
        return self.program_c()

    def function(self, name: str | None = None, original: bool = False, header_name: str | None = None):
        """The kernel as a C function with a header (`codegen.function.FunctionCode`); `original`:
        the program's own schedule, compiled the same way (for comparisons)."""
        from .codegen.function import function_code
        from .ir.schedule import original as original_schedule
        lowered = original_schedule(self.program) if original else self.schedule.lowered
        comment = "the original schedule" if original else self.sequence
        return function_code(lowered, comment, name, header_name)

    def compile(self, original: bool = False, flags: tuple[str, ...] | None = None):
        """A callable running the kernel on NumPy arrays (`runtime.callable.KernelFunction`), built
        as a shared library with `gcc -O3 -march=native -fopenmp` (or `flags`) in looper's cache."""
        from .runtime.callable import KernelFunction
        from .runtime.compile import OPT_FLAGS, compile_shared
        code = self.function(original=original)
        lib = compile_shared(code.source, {code.header_name: code.header}, tuple(flags or OPT_FLAGS))
        return KernelFunction(lib.path, code)


@dataclass
class OptimizedFile:
    """A C file whose scops were optimized: one `Kernel` per scop, and the file rewritten."""

    cfile: object  # lang.c.cfile.CFile
    kernels: list[Kernel]

    @property
    def path(self) -> str:
        return self.cfile.path

    @property
    def source(self) -> str:
        """The input file with each scop region replaced by looper's code (every other byte as it
        was; a region whose answer is the original schedule too)."""
        from .codegen.inplace import answer_code, inplace_source
        return inplace_source(self.cfile, [answer_code(k.schedule) for k in self.kernels],
                              [f"looper: {k.sequence}" for k in self.kernels])

    c_source = source

    @property
    def speedup(self) -> float | None:
        return self.kernels[0].speedup if len(self.kernels) == 1 else None

    def summary_lines(self) -> list[str]:
        lines = []
        for scop, k in zip(self.cfile.scops, self.kernels):
            lines.append(f"scop at {self.path}:{scop.begin_line} ({scop.function}):")
            lines += ["  " + line for line in k.summary_lines()]
        return lines

    def describe(self) -> str:
        return "\n".join(self.summary_lines())

    def to_json(self) -> dict:
        scops = []
        for scop, k in zip(self.cfile.scops, self.kernels):
            scops.append({"function": scop.function, "lines": [scop.begin_line, scop.end_line],
                          "tuned_for": scop.size_vars, **k.to_json()})
        return {"file": self.path, "cpp_flags": list(self.cfile.cpp_flags), "scops": scops}

    def default_output(self) -> Path:
        p = Path(self.path)
        return p.with_name(p.stem + ".looper" + p.suffix)

    def write(self, path: str | os.PathLike | None = None) -> Path:
        """Write the rewritten file (default: FILE.looper.c next to FILE.c), bytes as read."""
        from .fileio import write_bytes
        out = Path(path) if path is not None else self.default_output()
        return write_bytes(out, self.source.encode("utf-8", "surrogateescape"))

    def compile(self, *args, **kwargs):
        raise TypeError("a C file's scops run inside your own functions: build the rewritten file "
                        "(.source, .write()) with your program")


def optimize(program: str | os.PathLike, size: str | None = None, *, defines=None, includes: Iterable[str] = (),
             options: "TuneOptions | None" = None, target: "Target | None" = None, model=None,
             threads: int | None = None, cc: str = "gcc", cflags: str | Iterable[str] | None = None,
             progress: Callable[[int, int], None] | None = None,
             level_progress: Callable[[str, int, int], None] | None = None, **changes) -> Kernel | OptimizedFile:
    """Search for a fast transformation sequence of a program; what `looper optimize` does.

    `program`: a path (`.py`: looper's Python subset; `.c`: C with `#pragma scop` regions), the
    program's text, or `polybench:NAME` (a kernel that ships with looper).
    `size`: a dataset (Python: from SIZES; C: adds `-DSIZE_DATASET`).  `defines`:
    size overrides {"N": 500} for Python; preprocessor defines ["LARGE_DATASET", "N=500"] for C,
    with `includes` (-I directories).  `options`: a `tune.TuneOptions` (default: the default
    search, the hybrid where a compiler is present), with `changes` to its fields given as
    keywords (`evaluator="measure"`, `beam=2`, `omp_env="tuned"`, `budget=60`, ...).  `target`:
    the machine to tune for (default: this one, with `threads`, `cc` and `cflags`: what the answer
    will be built with and run on; it is verified with them before it is returned).  `model`:
    weights to load or a loaded (network, metadata) pair.  Returns a `Kernel` (Python) or an
    `OptimizedFile` (C)."""
    from .tune import tune
    options, target = _tune_setup(options, target, threads, cc, cflags, changes)
    loaded = load_programs(program, size, defines, includes)
    from .ir.program import Program
    programs = [loaded] if isinstance(loaded, Program) else [s.program for s in loaded.scops]
    resized = _resized(loaded, options.verify)
    store = None
    if options.memo and options.evaluator.measures:
        from .runtime.measurements import MeasurementStore
        store = MeasurementStore(options.db)
    net = None
    if options.evaluator.predicts:
        if isinstance(model, tuple):  # already loaded: (network, metadata)
            net = model
        else:
            from .costmodel.inference import load_inference_model
            net = load_inference_model(model or options.model)
    from .lang.resize import Origin
    origins = [Origin()] if isinstance(loaded, Program) else [Origin(loaded, k) for k in range(len(programs))]
    kernels = [Kernel(tune(p, options, target, model=net, store=store, resized=resized, index=k, progress=progress,
                           level_progress=level_progress, origin=origins[k])) for k, p in enumerate(programs)]
    if isinstance(loaded, Program):
        return kernels[0]
    return OptimizedFile(loaded, kernels)


def _tune_setup(options, target, threads: int | None, cc: str, cflags, changes: dict):
    """The run's `TuneOptions` (`changes` applied; strings parsed) and `Target` (this machine with
    `threads`, `cc`, `cflags`, unless one is given); the compiler must exist where it is used."""
    from .runtime.ompenv import OmpEnv
    from .runtime.verify import Toolchain
    from .target import Target
    from .target.isa import compiler_id
    from .tune import Evaluator, TuneOptions
    changes = _spelled(dict(changes))
    unknown = set(changes) - set(TuneOptions.__dataclass_fields__)
    if unknown:
        raise TypeError(f"optimize() got unexpected options: {', '.join(sorted(unknown))}")
    if "evaluator" in changes:
        changes["evaluator"] = Evaluator.parse(changes["evaluator"])
    if "omp_env" in changes and not isinstance(changes["omp_env"], OmpEnv):
        changes["omp_env"] = OmpEnv.parse(changes["omp_env"] or "default")
    base = options or TuneOptions(evaluator=Evaluator.default(cc))
    options = base.with_(**changes) if changes else base
    if target is None:
        toolchain = Toolchain.parse(cc, cflags)
        target = Target.detect(threads, toolchain.cc, toolchain.cflags)
    if options.evaluator.measures or options.verify or options.speed_guard:
        compiler_id(target.cc)  # a LooperError naming it when it is not installed
    if options.evaluator.measures and target.cpu == Target.detect(target.threads).cpu:
        from .runtime.peaks import measured_target
        target = measured_target(target)  # the restraint and the cost terms need its limits
    return options, target


def _spelled(changes: dict) -> dict:
    """The keywords `looper optimize`'s options are also known by (`timeout`, `repeat`,
    `step_proxy`/`size_proxy`, `verify_top`), as `TuneOptions` fields."""
    from .search.proxy import Proxy
    from .tune import HybridOptions
    if "timeout" in changes:
        changes["budget"] = changes.pop("timeout")
    if "repeat" in changes:
        changes["repeats"] = changes.pop("repeat")
    if "step_proxy" in changes or "size_proxy" in changes:
        changes["proxy"] = Proxy.of(changes.pop("step_proxy", None), changes.pop("size_proxy", None))
    if "verify_top" in changes:
        changes["hybrid"] = HybridOptions(per_round=changes.pop("verify_top"))
    return changes


def _resized(loaded, verify: bool):
    """The programs at the verification size (`lang.resize`), when answers are verified."""
    from .ir.program import Program
    from .lang.resize import Resized, smaller_c, smaller_python
    programs = (loaded,) if isinstance(loaded, Program) else tuple(s.program for s in loaded.scops)
    if not verify:
        return Resized(programs, "")
    return smaller_python(loaded) if isinstance(loaded, Program) else smaller_c(loaded)
