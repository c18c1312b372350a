"""The `looper` command line (click).  User mistakes exit with status 2 and one clear line."""
from __future__ import annotations

import functools
import os
import statistics
import sys
from pathlib import Path

import click

from . import interrupts
from .errors import LooperError, LooperUsageError
from .fileio import write_text


def _friendly(fn):
    """Turn looper's user-facing errors into `FILE:LINE:COL: error: ...` and an exit status."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with interrupts.remembered():
                result = fn(*args, **kwargs)
                interrupts.raise_pending()  # one that something swallowed still ends the command with 130
            return result
        except LooperError as e:
            click.echo(str(e), err=True)
            sys.exit(e.exit_status)
        except KeyboardInterrupt:
            click.echo("looper: interrupted", err=True)
            sys.exit(130)

    return wrapper


def parse_defines(values: tuple[str, ...]) -> dict[str, int]:
    from .api import parse_defines as parse
    return parse(values)


def size_options(fn):
    fn = click.option("-I", "includes", multiple=True, metavar="DIR",
                      help="C input: an include directory for the preprocessor, as gcc takes it.")(fn)
    fn = click.option("-D", "defines", multiple=True, metavar="NAME=V",
                      help="Set a size (overrides the dataset's value).  C input: a preprocessor "
                           "define as gcc takes it (-DNAME, -DNAME=V); a size n takes the value "
                           "of the macro N.")(fn)
    fn = click.option("--size", "-s", default=None, metavar="DATASET",
                      help="Dataset from the program's SIZES (MINI..EXTRALARGE; default LARGE).  C input: "
                           "-DDATASET_DATASET for the preprocessor.")(fn)
    return fn


def sizes_option(fn):
    """`--sizes`: one version per dataset, in one region or function that dispatches on them."""
    return click.option("--sizes", default=None, metavar="SIZES,...",
                        help="Several sets of sizes, datasets (MEDIUM,LARGE) or -D values joined by + "
                             "(N=500,N=1000; LARGE+NI=500): one version each, in one region (C) or one function "
                             "(--emit function) that dispatches on the sizes at run time; other sizes run the "
                             "original code.  -D values apply to every one.")(fn)


def record_option(fn):
    """`--record`: keep every answer as a tuning record (`looper.tune.records`)."""
    return click.option("--record", default=None, type=click.Path(dir_okay=False), metavar="FILE",
                        help="Append a tuning record per answer to FILE (JSON Lines): the sequence, the kernel "
                             "and its sizes, the machine; `looper apply` writes it again without a search.")(fn)


def omp_env_option(fn):
    """`--omp-env`: what timed runs add to the user's environment (runtime.ompenv)."""
    return click.option("--omp-env", "omp_env", default="default", show_default=True, metavar="ENV",
                        help="OpenMP environment of timed runs: 'default' (as your shell has it), 'tuned' "
                             "(OMP_PROC_BIND=true OMP_PLACES=cores OMP_WAIT_POLICY=active) or 'NAME=V ...'.")(fn)


SEARCH_OPTIONS = ("evaluator", "beam", "max_affine", "max_fusion", "budget", "structure_budget", "step_proxy",
                  "size_proxy", "model_path", "db", "no_memo", "threads", "target_json")


def search_options(fn):
    """The options `optimize` and `bench` share: what searches and on which machine (`tune_options`
    turns them into a `TuneOptions` and a `Target`)."""
    opts = [
        click.option("--evaluator", "-e", type=click.Choice(["hybrid", "model", "measure"]), default=None,
                     help="How candidates are scored.  hybrid (the default where the compiler is installed): "
                          "the cost model and analytic cost terms rank the whole search space, three rounds of 8 "
                          "candidates (two more while a round finds a new fastest loop structure, or one run on threads "
                          "anew) are measured as "
                          "users run programs, the best confirmed.  model: the cost "
                          "model alone, nothing compiled during the search (tune for another machine with "
                          "--target).  measure: every candidate built and timed (minutes a kernel: a ceiling)."),
        click.option("--beam", "-b", default=None, type=click.IntRange(1, 64),
                     help="Beam width: schedules kept per level (default 3)."),
        click.option("--max-affine", default=None, type=click.IntRange(0, 16),
                     help="Levels of interchange / reversal / skew (default: 4 when measuring; with the "
                          "model, as deep as its training data's search went)."),
        click.option("--max-fusion", default=None, type=click.IntRange(0, 8),
                     help="Levels of fusion / distribution (default 2)."),
        click.option("--budget", "--timeout", "--search-budget", "budget", default=None, type=float,
                     metavar="SECONDS", help="Seconds the search may take in all: after it no more candidates "
                                             "are scored and the best so far is the answer (still verified)."),
        click.option("--structure-budget", "structure_budget", default=None, type=float, metavar="SECONDS",
                     help="Seconds the search may spend choosing loop structure (fusion, affine levels); the "
                          "refinement levels (parallel, tile, register, unroll) always run."),
        click.option("--step-proxy", "step_proxy", default=None, type=click.IntRange(2, 1000), metavar="FACTOR",
                     help="Measure candidates with the time steps divided by FACTOR (at least 100 kept; "
                          "Python programs), then time the best again at the real sizes."),
        click.option("--size-proxy", "size_proxy", default=None, type=click.IntRange(2, 1000), metavar="FACTOR",
                     help="Measure candidates with every size divided by FACTOR (at least 64 kept), then "
                          "time the best again at the real sizes.  The default search takes one by "
                          "itself for a program that runs a second or more."),
        click.option("--model", "model_path", default=None, type=click.Path(dir_okay=False),
                     help="Cost model weights (default: $LOOPER_MODEL, else the shipped looper-v10.pt)."),
        click.option("--db", default=None, type=click.Path(dir_okay=False),
                     help="Measurement memo (SQLite; default under the cache directory)."),
        click.option("--no-memo", is_flag=True, help="Measure everything afresh (no SQLite memo)."),
        click.option("--threads", "-t", default=None, type=click.IntRange(1, 1024),
                     help="Threads the answer runs on (default: OMP_NUM_THREADS, else all cores)."),
        click.option("--target", "target_json", default=None, type=click.Path(dir_okay=False, exists=True),
                     help="Tune for the machine this JSON describes (`looper machine --target-json`), not "
                          "this one; with --evaluator model nothing runs here."),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def tune_options(kw: dict, cc: str = "gcc", cflags: str | None = None, **more):
    """(`TuneOptions`, `Target`) from the shared options in `kw` (removed from it) and `more` fields."""
    from .runtime.verify import Toolchain
    from .search.proxy import Proxy
    from .target import Target
    from .tune import Evaluator, TuneOptions
    o = {k: kw.pop(k) for k in SEARCH_OPTIONS}
    toolchain = Toolchain.parse(cc, cflags)
    if o["target_json"]:
        target = Target.load(o["target_json"])
        if o["threads"]:
            target = target.with_threads(o["threads"])
    else:
        target = Target.detect(o["threads"], toolchain.cc, toolchain.cflags)
    evaluator = Evaluator(o["evaluator"]) if o["evaluator"] else Evaluator.default(toolchain.cc)
    options = TuneOptions(evaluator=evaluator, beam=o["beam"], max_affine=o["max_affine"],
                          max_fusion=o["max_fusion"], budget=o["budget"], structure_budget=o["structure_budget"],
                          proxy=Proxy.of(o["step_proxy"], o["size_proxy"]), model=o["model_path"], db=o["db"],
                          memo=not o["no_memo"], **more)
    return options, target


class ProgramFile(click.ParamType):
    """FILE, or `polybench:NAME` for a PolyBench kernel that ships with looper (any directory)."""

    name = "file"

    def convert(self, value, param, ctx):
        from .kernels import resolve_program
        try:
            return resolve_program(value)
        except LooperUsageError as e:
            self.fail(e.message, param, ctx)


PROGRAM = ProgramFile()


def load_program(file: str, size: str | None, defines: tuple[str, ...], includes: tuple[str, ...] = ()):
    """The program of FILE: a Python program, or the one scop of a C file."""
    from .api import load_programs
    loaded = load_programs(file, size, defines, includes)
    scops = getattr(loaded, "scops", None)
    if scops is None:
        return loaded
    if len(scops) != 1:
        raise LooperUsageError(f"{len(scops)} scops in the file: compile and run take a C file with one "
                               "(optimize rewrites any number)", file)
    return scops[0].program


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="looper", prog_name="looper")
def main() -> None:
    """looper: a learned polyhedral autoscheduler for loop-nest programs.

    Programs are written in a small Python subset (docs/manual/python-subset.md) or are C with
    #pragma scop regions; looper parses them (never runs them), optimizes their loop nests with
    isl, and emits OpenMP C.  FILE may also name a PolyBench kernel that ships with looper, from
    any directory: polybench:gemm, polybench:jacobi-2d, ...
    """


@main.command("compile")
@click.argument("file", type=PROGRAM)
@size_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where to write the C program (default: standard output).")
@_friendly
def compile_cmd(file: str, size: str | None, defines: tuple[str, ...], includes: tuple[str, ...],
                output: str | None) -> None:
    """Write FILE as a complete C program (original schedule, PolyBench harness).

    The kernel sits between #pragma scop / #pragma endscop; build with -DPOLYBENCH_TIME to print
    the kernel time, -DPOLYBENCH_DUMP_ARRAYS to dump OUTPUTS on stderr.  A C FILE's scop gets
    looper's own init (the file's is outside the scop).
    """
    from .codegen.harness import program_c
    from .ir.schedule import original

    program = load_program(file, size, defines, includes)
    text = program_c(program, [original(program)])
    if output:
        write_text(output, text)
    else:
        click.echo(text, nl=False)


@main.command("run")
@click.argument("file", type=PROGRAM)
@size_options
@click.option("--dump", is_flag=True, help="Print the OUTPUTS arrays (PolyBench dump format).")
@click.option("--repeat", "-r", default=1, show_default=True, type=click.IntRange(1, 1000),
              help="Timed runs (arrays restored before each); the median is reported.")
@click.option("--threads", "-t", default=None, type=click.IntRange(1, 1024),
              help="OMP_NUM_THREADS for the run.")
@_friendly
def run_cmd(file: str, size: str | None, defines: tuple[str, ...], includes: tuple[str, ...], dump: bool,
            repeat: int, threads: int | None) -> None:
    """Compile FILE with gcc -O3 -march=native -fopenmp, run it, print the kernel time (a C FILE's
    scop runs in looper's harness, on looper's init)."""
    from .codegen.harness import program_c
    from .runtime.compile import OPT_FLAGS, compile_c
    from .runtime.run import run_binary
    from .ir.schedule import original

    program = load_program(file, size, defines, includes)
    dflags = ("POLYBENCH_TIME",) + (("POLYBENCH_DUMP_ARRAYS",) if dump else ())
    binary = compile_c(program_c(program, [original(program)]), OPT_FLAGS, defines=dflags)
    res = run_binary(binary.path, 0, repeat, threads=threads)
    if not res.ok:
        raise LooperError(f"the program failed: {res.describe_failure()}", file)
    if dump:
        click.echo(res.stderr, nl=False)
    t = statistics.median(res.times)
    extra = f" (median of {repeat}; min {min(res.times):.6f})" if repeat > 1 else ""
    click.echo(f"{program.name} [{program.size_label}]: kernel time {t:.6f} s{extra}")


@main.command("optimize")
@click.argument("file", type=PROGRAM)
@size_options
@search_options
@click.option("--verify-top", default=None, type=click.IntRange(1, 100),
              help="The hybrid's candidates measured per round (default 8; three rounds, up to five).")
@click.option("--repeat", "-r", default=None, type=click.IntRange(1, 100),
              help="Fresh runs per measured candidate (default 3; an answer is judged by 8).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the optimized C here.  C input: the file with each scop replaced (default "
                   "FILE.looper.c); Python input: the program (--emit program) or the function "
                   "(--emit function, default FILE.looper.c, with a header .h next to it).")
@click.option("--emit", type=click.Choice(["program", "function"]), default="program", show_default=True,
              help="Python input: a complete benchmark program (harness, main), or a C function "
                   "taking the arrays and scalars, specialized to the sizes, plus its header.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None,
              help="Write a JSON report (sequence, speedups, every candidate).")
@click.option("--explain", is_flag=True, help="Say why each rejected or failed candidate was dropped.")
@omp_env_option
@click.option("--bake-omp-env", is_flag=True,
              help="The written program sets the tuned OpenMP settings (or --omp-env's) for itself, unless "
                   "the user's environment sets them.")
@click.option("--cc", default="gcc", show_default=True, metavar="COMPILER",
              help="The compiler you will build the output with: the answer is verified with it.")
@click.option("--cflags", default=" ".join(("-O3", "-march=native", "-fopenmp")), show_default=True,
              metavar="FLAGS", help="The flags you will build the output with: the answer is verified with them.")
@click.option("--no-verify", is_flag=True,
              help="Write the answer without building and running it first (at a small size, at 2 and 4 "
                   "threads, outputs compared exactly with the original's).")
@click.option("--no-speed-guard", is_flag=True,
              help="With the model evaluator: do not time the answer against the original (done when one "
                   "run of the original takes under a second; a slower answer is never written).")
@click.option("--link", multiple=True, metavar="FILE",
              help="C input: another source, object or library (-lNAME) your program is built with.  "
                   "The answer is judged against the original in your own program, built and run as "
                   "you do (default: the .c beside each header the file includes, when it does not "
                   "link alone).")
@click.option("--judge-in", "judge_in", type=click.Choice(["program", "harness"]), default="program",
              show_default=True,
              help="C input: time the finalists against the original in your own program (its main, "
                   "as you run it) or in looper's harness (a diagnostic; Python input always uses it).")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@sizes_option
@record_option
@_friendly
def optimize_cmd(file: str, size: str | None, defines: tuple[str, ...], includes: tuple[str, ...],
                 verify_top: int | None, repeat: int | None, output: str | None, emit: str, json_out: str | None,
                 explain: bool, omp_env: str, bake_omp_env: bool, cc: str, cflags: str, no_verify: bool,
                 no_speed_guard: bool, link: tuple[str, ...], judge_in: str, quiet: bool,
                 sizes: str | None = None, record: str | None = None, **search) -> None:
    """Search for a fast transformation sequence for FILE and emit it as OpenMP C.

    Beam search over fusion/distribution, interchange/reversal/skew, parallelization, tiling and
    unrolling; every candidate is checked for legality with isl before it is scored.  FILE is a
    program in looper's Python subset, C with #pragma scop / #pragma endscop regions
    (preprocessed with gcc -E and the -I/-D flags), which is rewritten in place, or polybench:NAME,
    a PolyBench kernel that ships with looper.
    """
    import dataclasses
    import json

    from .api import is_c_input, optimize
    from .runtime.ompenv import TUNED_ENV, OmpEnv
    from .tune import HybridOptions

    env = OmpEnv.parse(omp_env)
    c_input = is_c_input(file)
    if c_input and emit == "function":
        raise LooperUsageError("--emit function takes a Python program; a C file's scops are rewritten "
                               "in place (-o FILE.looper.c)", file)
    for x in link:
        if not x.startswith("-") and not os.path.isfile(x):
            raise LooperUsageError(f"--link {x}: no such file")
    options, target = tune_options(search, cc, cflags, repeats=repeat, explain=explain, omp_env=env,
                                   report_environment=True, verify=not no_verify, speed_guard=not no_speed_guard,
                                   link=tuple(os.path.abspath(x) if not x.startswith("-") else x for x in link),
                                   judge_in=judge_in,
                                   hybrid=HybridOptions(per_round=verify_top) if verify_top else HybridOptions())
    specs = _size_specs(file, size, sizes, c_input, emit)
    if len(specs) > 1:
        from .tune.versions import optimize_sizes
        run = functools.partial(optimize_sizes, sizes=specs)
    else:
        run = functools.partial(optimize, size=specs[0].size)
        defines = defines + specs[0].defines
    with _Progress(quiet) as progress:
        answer = run(file, defines=defines, includes=includes, options=options, target=target,
                     progress=progress.candidate, level_progress=progress.level)
    if record:  # one set of sizes: as parsed, with the command's -D values (several: `Versions` know theirs)
        _append_records(record, answer, dataclasses.replace(specs[0], defines=tuple(defines)), target.threads, cc,
                        cflags, env)
    for k in _kernels(answer):
        for note in k.notes:
            click.echo(f"note: {note}", err=True)
    for line in answer.summary_lines():
        click.echo(line)
    if explain:
        click.echo("why candidates were dropped:")
        for k in _kernels(answer):
            click.echo(k.explain())
    baked = (env if env.settings else TUNED_ENV).assignments() if bake_omp_env else ""
    _write_answer(answer, file, c_input, emit, output, baked)
    if json_out:
        write_text(json_out, json.dumps(answer.to_json(), indent=1))


def _size_specs(file: str, size: str | None, sizes: str | None, c_input: bool, emit: str) -> list:
    """The sets of sizes to tune for (`tune.versions.SizeSpec`): --sizes, else --size."""
    from .tune.versions import SizeSpec, parse_sizes_option
    if sizes is None:
        return [SizeSpec(size.upper() if size else None)]
    if size is not None:
        raise LooperUsageError("give --size or --sizes, not both")
    if not c_input and emit != "function":
        raise LooperUsageError("--sizes makes one function for several sizes: add --emit function (a benchmark "
                               "program runs at one set of sizes)", file)
    return parse_sizes_option(sizes)


def _kernels(answer) -> list:
    """Every kernel of an answer: a `Kernel`, an `OptimizedFile`'s, or those of `Versions`."""
    if hasattr(answer, "answers"):
        return [k for a in answer.answers for k in _kernels(a)]
    return list(getattr(answer, "kernels", [answer]))


def _append_records(path: str, answer, spec, threads: int | None, cc: str, cflags: str, env) -> None:
    """`--record`: the answers' records, appended (before anything is written: a search's answer
    is kept even when writing its code fails)."""
    import shlex

    from .tune.recording import answer_records
    from .tune.records import append_records, this_machine
    records = answer_records(answer, spec, this_machine(threads, cc, shlex.split(cflags), env.describe()))
    append_records(path, records)
    click.echo(f"recorded {len(records)} answer{'s' if len(records) != 1 else ''} in {path}", err=True)


def _write_answer(answer, file: str, c_input: bool, emit: str, output: str | None, baked: str) -> None:
    """Write an answer as `looper optimize` does (`looper apply` too): a C file rewritten in
    place; a Python program's function and header, or its benchmark program with -o."""
    if c_input:
        from .runtime.compile import openmp_flags
        click.echo(f"wrote {answer.write(output)}")
        if openmp_flags(answer.source) == ("-fopenmp-simd",):
            click.echo("note: its only OpenMP is `omp simd` loops: build it with -fopenmp-simd, not -fopenmp (a "
                       "harness that starts a thread team, as PolyBench's cache flush does with -fopenmp, leaves "
                       "an idle thread spinning beside the sequential kernel)", err=True)
    elif emit == "function":
        out = Path(output) if output else _function_output(file)
        header = out.with_suffix(".h")
        code = answer.function(header_name=header.name)
        write_text(out, code.source)
        write_text(header, code.header)
        click.echo(f"wrote {out} and {header}: {code.signature()}")
    elif output:
        write_text(output, answer.program_c(bake_env=baked))


@main.command("apply")
@click.argument("records", type=click.Path(exists=True, dir_okay=False))
@click.argument("file", type=click.Path(dir_okay=False))
@size_options
@sizes_option
@click.option("--any-machine", is_flag=True,
              help="Apply records made on other hardware too (by default only those made on this CPU model "
                   "with these caches).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where to write the code, as `looper optimize -o` (C input: default FILE.looper.c).")
@click.option("--emit", type=click.Choice(["program", "function"]), default="program", show_default=True,
              help="Python input: a complete benchmark program, or a C function with its header.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None,
              help="Write a JSON report (the records applied, the checks).")
@click.option("--threads", "-t", default=None, type=click.IntRange(1, 1024),
              help="The thread count the answer is checked at (with 4): as `looper optimize --threads`.")
@omp_env_option
@click.option("--bake-omp-env", is_flag=True,
              help="The written program sets the tuned OpenMP settings (or --omp-env's) for itself.")
@click.option("--cc", default="gcc", show_default=True, metavar="COMPILER",
              help="The compiler you will build the output with: the answer is verified with it.")
@click.option("--cflags", default=" ".join(("-O3", "-march=native", "-fopenmp")), show_default=True,
              metavar="FLAGS", help="The flags you will build the output with: the answer is verified with them.")
@click.option("--no-verify", is_flag=True, help="Write the answer without building and running it first.")
@click.option("--no-speed-guard", is_flag=True,
              help="A record the model chose: do not time it against the original.")
@_friendly
def apply_cmd(records: str, file: str, size: str | None, defines: tuple[str, ...], includes: tuple[str, ...],
              sizes: str | None, any_machine: bool, output: str | None, emit: str, json_out: str | None,
              threads: int | None, omp_env: str, bake_omp_env: bool, cc: str, cflags: str, no_verify: bool,
              no_speed_guard: bool) -> None:
    """Write FILE with the answers recorded in RECORDS (`--record`), without searching.

    For each kernel (each scop of a C file) the best record for its kernel and sizes made on this
    machine is replayed, checked again by isl, verified as `looper optimize` verifies its answer,
    and written as `looper optimize` writes it.  Without --size/--sizes/-D, every set of sizes the
    records hold for the program gets a version.  No record, a stale one (the program was edited,
    or isl refuses a step) or one from another machine is an error; nothing is written then.
    """
    import json

    from .api import is_c_input
    from .runtime.ompenv import TUNED_ENV, OmpEnv
    from .tune.apply import apply

    env = OmpEnv.parse(omp_env)
    c_input = is_c_input(file)
    if c_input and emit == "function":
        raise LooperUsageError("--emit function takes a Python program; a C file's scops are rewritten "
                               "in place (-o FILE.looper.c)", file)
    specs = _size_specs(file, size, sizes, c_input, emit) if sizes is not None else None
    answer = apply(records, file, size, sizes=specs, defines=defines, includes=includes, any_machine=any_machine,
                   threads=threads, omp_env=env, cc=cc, cflags=cflags, verify=not no_verify,
                   speed_guard=not no_speed_guard)
    if hasattr(answer, "answers") and not c_input and emit != "function":
        raise LooperUsageError(f"the records hold {len(answer.answers)} sets of sizes for this program: write them "
                               "as one function (--emit function), or choose one with --size", file)
    for line in answer.summary_lines():
        click.echo(line)
    baked = (env if env.settings else TUNED_ENV).assignments() if bake_omp_env else ""
    _write_answer(answer, file, c_input, emit, output, baked)
    if json_out:
        write_text(json_out, json.dumps(answer.to_json(), indent=1))


def _function_output(file: str) -> Path:
    """--emit function's default: FILE.looper.c beside FILE, or here for a shipped kernel."""
    from .kernels import is_shipped
    out = Path(file).with_suffix(".looper.c")
    return Path(out.name) if is_shipped(file) else out


@main.command("datagen")
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--programs", "-n", default=1000, show_default=True, type=click.IntRange(1),
              help="Synthetic programs to generate and search (seeds start..start+n-1).")
@click.option("--start", default=0, show_default=True, type=click.IntRange(0), help="First seed.")
@click.option("--workers", "-j", default=None, type=click.IntRange(1),
              help="Local worker processes (default: cores // threads).")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
              help="Run the tasks on this existing Dask cluster instead of a local pool.")
@click.option("--beam", default=2, show_default=True, type=click.IntRange(1, 64))
@click.option("--max-affine", default=2, show_default=True, type=click.IntRange(0, 16))
@click.option("--per-level", default=5, show_default=True, type=click.IntRange(1),
              help="Candidates sampled per schedule and level (the search's own candidates).")
@click.option("--explore", default=0, show_default=True, type=click.IntRange(0, 64),
              help="Exploration lanes beside the beam: each starts at a schedule the beam drops, walks at "
                   "random through the fusion and affine levels, then takes its best refinement, so poor "
                   "loop orders are refined and measured too (what a model-guided search visits).")
@click.option("--explore-model", default=None, type=click.Path(dir_okay=False, exists=True),
              help="With --explore: the lanes are this cost model's own beam (its favourites, measured), "
                   "instead of a random walk: data where that model errs.")
@click.option("--explore-ranking", is_flag=True,
              help="With --explore: the lanes follow the default search's ranking (the cost model for the loop "
                   "structure, the analytic cost terms for what it never saw; with --explore-model, that "
                   "model): data where the default errs, in the grown space too.")
@click.option("--repeat", "-r", default=3, show_default=True, type=click.IntRange(2, 100))
@click.option("--threads", "-t", default=None, type=click.IntRange(1, 1024),
              help="OMP_NUM_THREADS for every timing (default: all cores).")
@click.option("--instances", default="3e6:3e7", show_default=True, metavar="LOW:HIGH",
              help="Statement instances per program, drawn log-uniformly (sets the programs' sizes).")
@click.option("--scalars", is_flag=True,
              help="Programs whose nests keep values in kernel-local scalars (accumulators, filter "
                   "state, temporaries), which parallel loops must privatize.")
@click.option("--patterns", default=None, metavar="NAME,...",
              help="Only these synthetic patterns (elementwise, stencil, reduction, matmul, deep, copy; "
                   "with --scalars also scalar_reduction, scalar_recurrence, scalar_temp; only when "
                   "named: coupled, fields coupled in one time loop as in fdtd-2d).")
@click.option("--scaled-products", is_flag=True,
              help="Matrix and matrix-vector products scaled by a scalar or constant on about half the "
                   "programs (alpha * A[i, k] * B[k, j], as PolyBench's BLAS kernels).")
@click.option("--grown", is_flag=True,
              help="Search the grown space too (register tiles, packs, time tiles, vector loops, cache "
                   "tiles, isl's schedule, one parallel region): points a model needs to rank it.  Pair "
                   "with --patterns matmul,stencil,coupled and --scaled-products, where they pay.")
@omp_env_option
@click.option("--protocol", type=click.Choice(["as-run", "warm"]), default="as-run", show_default=True,
              help="How each candidate is timed: 'as-run' (fresh processes, means, as users run programs) or "
                   "'warm' (one process after a warm-up run, medians: how the committed parts were timed; a "
                   "model trains on one of them only).")
@click.option("--from-memo", "from_memo", default=None, type=click.Path(dir_okay=False), metavar="MEMO",
              help="Measure nothing: add the points of the measuring searches already in MEMO (a "
                   "measurements.sqlite; the default memo is ~/.cache/looper/measurements.sqlite) to OUT_DIR, "
                   "each labelled with the environment it was timed under.  PolyBench, C input and "
                   "programs changed since are left out, and counted.")
@click.option("--quiet", "-q", is_flag=True)
@_friendly
def datagen_cmd(out_dir: str, programs: int, start: int, workers: int | None, scheduler: str | None,
                beam: int, max_affine: int, per_level: int, explore: int,
                explore_model: str | None, explore_ranking: bool, repeat: int, threads: int | None,
                instances: str, scalars: bool, patterns: str | None, scaled_products: bool,
                grown: bool, omp_env: str, protocol: str, from_memo: str | None, quiet: bool) -> None:
    """Measure the search's candidates on random synthetic programs into OUT_DIR (Parquet parts).

    Resumable: run the same command again after an interrupt (even kill -9); finished programs
    are skipped and measurements already taken are read back from OUT_DIR/memo.sqlite.
    """
    import dataclasses

    if from_memo is not None:
        from .datagen.from_memo import write_memo_points
        written, found = write_memo_points(out_dir, from_memo)
        click.echo(f"{from_memo}: {len(found.rows)} points of {found.programs} programs; {written} new in {out_dir}")
        for why, n in found.skipped.most_common():
            click.echo(f"  left out: {n} measurements: {why}")
        return

    if scheduler is not None:
        from .optional import require
        require("distributed", "looper datagen --scheduler")  # before OUT_DIR is written
    from .datagen.cluster import run_collection
    from .runtime.ompenv import OmpEnv
    from .datagen.collect import DatasetWriter, config_json
    from .target.host import cores, default_threads

    threads = threads or default_threads()
    if explore_ranking and not explore:
        raise LooperUsageError("--explore-ranking: the lanes it guides need --explore N (N > 0)")
    cfg = _collect_config(out_dir, beam, max_affine, per_level, explore, explore_model, repeat, threads,
                          instances, scalars, patterns, scaled_products)
    if scheduler is None:  # every point records the limits of the machine it was timed on
        from .runtime.peaks import limits_for_bench
        limits_for_bench(threads, lambda s: click.echo(s, err=True))
    cfg = dataclasses.replace(cfg, omp_env=OmpEnv.parse(omp_env).assignments() or "default", grown=grown,
                              protocol=protocol, explore_ranking=explore_ranking)
    click.echo(f"timings in {OmpEnv.parse(omp_env).describe()}, {protocol}", err=True)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / "config.json").write_text(config_json(cfg))
    workers = workers or max(1, cores() // threads)
    already = DatasetWriter(out_dir).n_points()
    with _DatagenBar(quiet, programs, already) as bar:
        stats = run_collection(range(start, start + programs), cfg, workers, scheduler, bar.update)
    click.echo(f"{stats.programs} programs, {stats.points} points ({stats.measured} measured) in "
               f"{stats.seconds:.0f} s: {stats.points_per_second:.2f} measured points/s; "
               f"dataset now {DatasetWriter(out_dir).n_points()} points")
    if stats.wrong:
        click.echo(f"WARNING: {len(stats.wrong)} candidates computed wrong outputs (a looper bug):", err=True)
        for w in stats.wrong[:20]:
            click.echo(f"  {w}", err=True)
    if stats.errors:
        click.echo(f"{len(stats.errors)} programs failed (see {out_dir}/errors.log)", err=True)


def _collect_config(out_dir: str, beam: int, max_affine: int, per_level: int, explore: int,
                    explore_model: str | None, repeat: int, threads: int, instances: str, scalars: bool,
                    patterns: str | None, scaled_products: bool):
    """datagen's options checked and gathered into a `CollectConfig` (usage errors named)."""
    from .datagen.collect import CollectConfig
    try:
        low, high = (float(x) for x in instances.split(":"))
        if not 1 <= low <= high:
            raise ValueError
    except ValueError:
        raise LooperUsageError(f"--instances: expected LOW:HIGH with 1 <= LOW <= HIGH, got '{instances}'") from None
    chosen = None
    if patterns is not None:
        from .datagen.synth import select_patterns
        chosen = tuple(p.strip() for p in patterns.split(",") if p.strip())
        try:
            select_patterns(chosen, scalars)
        except ValueError as e:
            raise LooperUsageError(f"--patterns: {e}") from None
    if explore_model and not explore:
        raise LooperUsageError("--explore-model: the lanes it guides need --explore N (N > 0)")
    return CollectConfig(out_dir=out_dir, beam=beam, max_affine=max_affine, max_per_parent=per_level,
                         explore=explore, explore_model=explore_model, repeats=repeat, threads=threads,
                         target_low=low, target_high=high, scalars=scalars, patterns=chosen,
                         scaled_products=scaled_products)


class _DatagenBar:
    """datagen's progress on stderr: programs done, points, points per second (or nothing)."""

    def __init__(self, quiet: bool, programs: int, already: int):
        self.quiet, self.programs, self.already = quiet, programs, already
        self.bar = None

    def __enter__(self) -> "_DatagenBar":
        if not self.quiet:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
            self.bar = Progress(TextColumn("datagen"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[points]} points, {task.fields[rate]:.1f} points/s"),
                                TimeRemainingColumn(), console=Console(stderr=True))
            self.bar.__enter__()
            self.task = self.bar.add_task("datagen", total=self.programs, points=self.already, rate=0.0)
        return self

    def update(self, stats, total: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, total=total, completed=stats.programs, points=self.already + stats.points,
                            rate=stats.points_per_second)

    def __exit__(self, *exc) -> bool:
        if self.bar is not None:
            self.bar.__exit__(*exc)
        return False


@main.command("train")
@click.argument("data", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Where to write the weights (a .json with the metadata goes next to it).")
@click.option("--epochs", default=40, show_default=True, type=click.IntRange(1))
@click.option("--hidden", default=128, show_default=True, type=click.IntRange(8))
@click.option("--lr", default=1e-3, show_default=True, type=float, help="Peak learning rate (one-cycle schedule).")
@click.option("--dropout", default=0.05, show_default=True, type=click.FloatRange(0, 0.9),
              help="Dropout in the computation, loop and head MLPs.")
@click.option("--weight-decay", default=1e-5, show_default=True, type=click.FloatRange(0),
              help="AdamW weight decay.")
@click.option("--loss", type=click.Choice(["mape", "log"]), default="log", show_default=True,
              help="Regression term: MAPE on the speedup, or |log s' - log s| (symmetric relative error).")
@click.option("--rank-weight", default=1.0, show_default=True, type=float,
              help="Weight of the pairwise ranking term next to the regression term (0: none).")
@click.option("--batch-programs", default=1, show_default=True, type=click.IntRange(1),
              help="Programs per optimizer step (all candidates of a program share a batch).")
@click.option("--members", default=1, show_default=True, type=click.IntRange(1, 16),
              help="Ensemble size: models from seeds SEED, SEED+1, ... (trained in parallel processes); "
                   "their geometric mean is the prediction.")
@click.option("--max-noise", default=0.05, show_default=True, type=float,
              help="Drop points whose two closest repeats differ by more than this (fraction of the median).")
@click.option("--threads", default=2, show_default=True, type=click.IntRange(1))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--compare", "compare_with", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Also report this saved model's metrics on the same held-out programs.")
@click.option("--environment", default=None, metavar="SETTINGS; PROTOCOL",
              help="Train on the points timed this way only, e.g. 'default; as-run' (required when DATA "
                   "mixes environments; parts written before points recorded theirs count as "
                   "'OMP_PROC_BIND=true OMP_PLACES=cores OMP_WAIT_POLICY=active; warm').")
@click.option("--weight", "weights", multiple=True, metavar="DIR=K",
              help="Each program of data directory DIR (its name) is K steps an epoch instead of one: a part "
                   "of few programs weighs more (repeatable).")
@click.option("--init", "init", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Start from these weights (an older layout or network widened first: the inputs it "
                   "never read start at zero weight) instead of a random network.")
@_friendly
def train_cmd(data: tuple[str, ...], output: str, epochs: int, hidden: int, lr: float, dropout: float,
              weight_decay: float, loss: str, rank_weight: float, batch_programs: int, members: int,
              max_noise: float, threads: int, seed: int, compare_with: str | None, environment: str | None,
              init: str | None, weights: tuple[str, ...]) -> None:
    """Train the cost model on DATA (datagen directories or Parquet files).

    Split by program (80/10/10); reports validation and held-out test MAPE, Spearman and nDCG.
    """
    import dataclasses
    import time

    from .optional import require
    require("torch", "looper train")  # the search predicts without it; training needs it
    from .costmodel.store import round_to_half, save_model
    from .costmodel.train import (
        TrainConfig, evaluate, evaluate_by_part, git_revision, load_examples, split_by_program,
        train_ensemble,
    )

    part_weights = _part_weights(weights)
    t0 = time.perf_counter()
    try:
        ds = load_examples(data, max_noise=max_noise, environment=environment)
    except (FileNotFoundError, ValueError) as e:
        raise LooperUsageError(str(e)) from None
    tr, va, te = split_by_program(ds.examples)
    click.echo(f"{ds.points} points from {ds.programs} programs ({len(tr)} train / {len(va)} validation / "
               f"{len(te)} test), featurized in {time.perf_counter() - t0:.0f} s")
    if not tr or not va:
        raise LooperUsageError("not enough programs to split into training and validation sets")
    cfg = TrainConfig(epochs=epochs, hidden=hidden, lr=lr, dropout=dropout, weight_decay=weight_decay, loss=loss,
                      rank_weight=rank_weight, batch_programs=batch_programs, seed=seed, threads=threads,
                      init=init, part_weights=part_weights)
    _check_init(init, hidden)
    model, info = train_ensemble(tr, va, cfg, members, log=click.echo)
    round_to_half(model)  # as it is stored: the metrics are those of the shipped weights
    metrics = {"validation": evaluate(model, va), "test": evaluate(model, te), "train": evaluate(model, tr),
               "test_by_part": evaluate_by_part(model, te)}
    meta = {"points": ds.points, "programs": ds.programs, "dataset_hash": ds.digest, **ds.meta,
            "metrics": metrics, "git_revision": git_revision(), **dataclasses.asdict(cfg), "max_noise": max_noise,
            "train_seconds": round(time.perf_counter() - t0), "history": info["history"]}
    save_model(model, output, meta)
    def show(label: str, m: dict) -> None:
        if m:
            click.echo(f"{label}: MAPE {m['mape']:.3f} (constant predictor {m['mape_constant']:.3f}), "
                       f"Spearman {m['spearman']:.3f}, nDCG {m['ndcg']:.3f} over {m['programs']} programs")

    show("validation", metrics["validation"])
    show("test", metrics["test"])
    for part, m in metrics["test_by_part"].items():
        show(f"  test, {part}", m)
    if compare_with:
        from .costmodel.store import load_model
        other, _ = load_model(compare_with)
        show(f"test, {compare_with}", evaluate(other, te))
        for part, m in evaluate_by_part(other, te).items():
            show(f"  test, {part}, {compare_with}", m)
    click.echo(f"wrote {output}")


def _part_weights(weights: tuple[str, ...]) -> dict[str, int]:
    """`--weight DIR=K` options as {part name: K}."""
    out = {}
    for w in weights:
        name, eq, k = w.partition("=")
        if not eq or not k.isdigit() or int(k) < 1:
            raise LooperUsageError(f"--weight: expected DIR=K with K a positive integer, got '{w}'")
        out[Path(name).name] = int(k)
    return out


def _check_init(init: str | None, hidden: int) -> None:
    """`--init` weights must have the width asked for."""
    if init is not None:
        from .costmodel.store import load_model
        width = load_model(init)[0].hidden
        if width != hidden:
            raise LooperUsageError(f"--init {init}: its hidden width is {width}, not --hidden {hidden}")


@main.group("bench")
def bench_group() -> None:
    """Benchmark suites (looper against its peers)."""


@bench_group.command("polybench")
@click.option("--kernels", default=None, help="Comma-separated PolyBench names (jacobi-2d or jacobi_2d); default all 30.")
@click.option("--sizes", default="LARGE", show_default=True, help="Comma-separated datasets, MINI..EXTRALARGE.")
@click.option("--compare", default="", help="Peers: pluto,polly,graphite,isl (gcc -O3 is always run); openblas: the BLAS rate at a dense product's shapes, timed in the same rounds (a reference, not a peer).")
@click.option("--input", "inputs", type=click.Choice(["scop", "native", "both"]), default="scop", show_default=True,
              help="What the peers compile: looper's #pragma scop C in looper's harness (scop), or PolyBench's "
                   "own C with PolyBench's harness (native: looper optimizes that file in place, as polycc does; "
                   "looper's own harness around the original is a diagnostic column, the harness effect), "
                   "or both, one table each.")
@click.option("--polybench-c", default=None, type=click.Path(file_okay=False),
              help="PolyBench/C 4.2.1's source tree for --input native (default: $LOOPER_SHARED/polybench-c, "
                   "else ../shared/polybench-c next to the repository).")
@search_options
@click.option("--repeat", default=5, show_default=True, type=click.IntRange(1, 100),
              help="Interleaved timing rounds (each runs every system once in a fresh process).")
@click.option("--json", "json_out", default=None, type=click.Path(dir_okay=False))
@click.option("--csv", "csv_out", default=None, type=click.Path(dir_okay=False))
@click.option("--plot", "plot_out", default=None, type=click.Path(dir_okay=False))
@click.option("--roofline", "roofline_out", default=None, type=click.Path(dir_okay=False),
              help="Write a roofline plot (PNG): every kernel's GFLOP/s against its arithmetic intensity, "
                   "for looper and each peer, under the measured peak and bandwidth.")
@click.option("--resume", is_flag=True, help="Continue from --json, keeping the kernels it already holds.")
@click.option("--check-only", is_flag=True,
              help="Search at --sizes, then build every system at MINI and compare outputs; no timing.")
@click.option("--save-baseline", default=None, type=click.Path(dir_okay=False),
              help="Write looper's speedups as a baseline for later regression runs.")
@click.option("--baseline", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Exit 1 naming every kernel that regressed against this baseline.")
@click.option("--tolerance", default=0.10, show_default=True, type=float,
              help="Allowed relative drop of looper's speedup over gcc before it is a regression.")
@click.option("--polycc", default=None, type=click.Path(),
              help="Path of Pluto's polycc (default: on PATH, else ~/.cache/looper-peers/pluto/bin/polycc, "
                   "where ../shared/peers/build-pluto.sh installs it).")
@click.option("--quiet", "-q", is_flag=True)
@click.option("--search-repeat", "search_repeat", default=None, type=click.IntRange(1, 100),
              help="Timed runs per candidate when looper's search measures (default 3; hybrid 1).")
@click.option("--ceiling", is_flag=True,
              help="Also run the measuring search and time its answers in the same rounds, as the column "
                   "looper-measure: a ceiling to compare the default with (minutes a kernel).")
@click.option("--ceiling-budget", default=None, type=float, metavar="SECONDS",
              help="With --ceiling: the measuring search's budget in all, per kernel.")
@click.option("--ceiling-structure-budget", default=None, type=float, metavar="SECONDS",
              help="With --ceiling: the measuring search's budget for choosing loop structure, per kernel.")
@click.option("--variant", "variants", multiple=True, metavar="NAME:KEY=VALUE,...",
              help="Also run looper with these settings changed (keys: evaluator, model, per_round) and time "
                   "its answers in the same rounds, as the column looper-NAME: another cost model, the model "
                   "alone, a smaller budget; or records=FILE: the answers recorded in FILE (`--record`, of "
                   "another commit, say), replayed and verified.  A diagnostic beside the default (repeatable).")
@click.option("--omp-env", "omp_env", default="default", show_default=True, metavar="ENV[,ENV]",
              help="OpenMP environment(s) of the timings: default (as your shell has it), tuned, 'NAME=V ...'; "
                   "two separated by a comma (default,tuned) time every system in both and flag answers whose "
                   "speed depends on it.")
@record_option
@click.option("--records", "records_in", default=None, type=click.Path(exists=True, dir_okay=False),
              metavar="FILE",
              help="Time the answers recorded in FILE (`--record`) instead of searching: each kernel's best "
                   "record for its size, replayed, checked by isl and verified first.  A baseline with records "
                   "(--save-baseline writes them) is replayed the same way.")
@click.option("--any-machine", is_flag=True,
              help="With --records or a baseline's records: apply records made on other hardware too.")
@_friendly
def bench_polybench(kernels, sizes, compare, inputs, polybench_c, repeat, json_out, csv_out, plot_out,
                    roofline_out, resume, check_only, save_baseline, baseline, tolerance, polycc, search_repeat,
                    ceiling, ceiling_budget, ceiling_structure_budget, variants, omp_env, quiet, record=None,
                    records_in=None, any_machine=False, **search) -> None:
    """Run the 30 PolyBench 4.2.1 kernels with looper and its peers; print a table per input mode
    (times, GFLOP/s, fraction of peak, speedups), write JSON/CSV/plots."""
    import json
    import time

    from .bench import records as bench_records
    from .bench import suite
    from .bench.report import progress_line
    from .runtime.ompenv import OmpEnv
    from .tune import Evaluator

    envs = [OmpEnv.parse(e) for e in omp_env.split(",") if e.strip()] or [OmpEnv.parse("default")]
    options, target = tune_options(search, repeats=search_repeat, omp_env=envs[0])
    measure = options.with_(evaluator=Evaluator.MEASURE, budget=ceiling_budget,
                            structure_budget=ceiling_structure_budget) if ceiling else None
    parsed = [suite.parse_variant(v, options) for v in variants]
    replays = {v.name: bench_records.RecordedAnswers.read(v.records, any_machine) for v in parsed if v.records}
    cfg = suite.config_from_options(kernels, sizes, compare, inputs, target.threads, polycc, polybench_c,
                                    tune=options, target=target, repeat=repeat, check_only=check_only,
                                    omp_envs=envs, ceiling=measure, variants={v.name: v.options for v in parsed},
                                    replays=replays)
    say = (lambda s: None) if quiet else (lambda s: click.echo(s, err=True))
    base = json.loads(Path(baseline).read_text()) if baseline else None
    cfg.records = bench_records.replayed(records_in, base, baseline, any_machine, say)
    for replayed in [cfg.records, *cfg.replays.values()]:
        if replayed is not None:
            replayed.check_coverage(cfg)
    store = suite.ResultsFile.open(json_out, resume, csv_out)
    keep = bench_records.Recorder(record, suite.reusable(store.previous, cfg), cfg)
    started = time.perf_counter()

    def on_result(r, n, total):
        store.add(r, cfg)  # after every kernel (JSON and CSV): an interrupted suite resumes from here
        keep.add(r)
        say(progress_line(r, n, total, time.perf_counter() - started))

    results = suite.run_suite(cfg, store.previous, on_result, log=say)
    _print_bench(results, cfg)
    store.write(results, cfg)
    suite.write_outputs(results, cfg, plot_out, roofline_out, save_baseline)
    sys.exit(suite.exit_status(results, check_only, base, tolerance, lambda s: click.echo(s, err=True)))


def _print_bench(results, cfg) -> None:
    """One table per input mode on stdout (wide when it is not a terminal: files keep every column)."""
    from rich.console import Console

    from .bench.report import table
    console = Console(width=None if sys.stdout.isatty() else 260)
    for mode in cfg.inputs:
        rows = [r for r in results if r.input == mode]
        console.print(table(rows, cfg.systems(mode), cfg.check_only, mode, cfg.limits))


@main.command("machine")
@click.option("--threads", "-t", default=None, type=click.IntRange(1, 1024),
              help="Measure 1..N threads (default: all cores).")
@click.option("--json", "json_out", default=None, type=click.Path(dir_okay=False),
              help="Write every number (and the caches) as JSON.")
@click.option("--quick", is_flag=True,
              help="A tiny measurement budget (a few seconds in all): rough numbers, for smoke tests; "
                   "nothing is cached.")
@click.option("--target-json", "target_out", default=None, type=click.Path(dir_okay=False),
              help="Write this machine as a target (`optimize --target FILE`: tune for it elsewhere), with "
                   "the limits measured on N threads.")
@_friendly
def machine_cmd(threads: int | None, json_out: str | None, quick: bool, target_out: str | None) -> None:
    """Measure this machine's limits: FMA peak (double, single) and triad bandwidth for 1..N
    threads, numpy's DGEMM on the same threads as a check on the peak, and the caches (sysfs).

    The numbers are cached (per CPU model, compiler and thread count) for `looper bench`, which
    reports each kernel's fraction of peak and draws the roofline from them.
    """
    import json

    from rich.console import Console

    from .runtime import peaks
    from .target import default_threads, save_limits

    report = peaks.measure_machine(threads or default_threads(), peaks.QUICK if quick else peaks.Budget(),
                                   log=lambda s: click.echo(s, err=True))
    if not quick:
        for limits in report.limits:
            save_limits(limits, report.compiler)
    Console(width=None if sys.stdout.isatty() else 160).print(_machine_table(report))
    if json_out:
        write_text(json_out, json.dumps(report.to_json(), indent=1))
    if target_out:
        from .target import Target
        here = Target.detect(report.limits[-1].threads).with_limits(report.limits[-1])
        write_text(target_out, json.dumps(here.to_json(), indent=1))


def _machine_table(report):
    """`looper machine`'s table: one row per thread count, the caches in the caption."""
    from rich.table import Table

    lanes = report.limits[0].lanes_double if report.limits else 0
    t = Table(title=f"{report.cpu}; {report.compiler}; FMA microkernel on {64 * lanes}-bit vectors",
              caption="caches: " + ", ".join(c.describe() for c in report.caches))
    for name in ("threads", "FMA peak double\n(GFLOP/s)", "FMA peak single\n(GFLOP/s)", "triad\n(GB/s)",
                 "numpy DGEMM\n(GFLOP/s)", "peak / DGEMM", "first parallel\nregion (us)", "later region\n(us)"):
        t.add_column(name, justify="right")
    for x in report.limits:
        dgemm = f"{x.dgemm:.1f}" + (f" ({x.dgemm_core})" if x.dgemm_core else "") if x.dgemm else "-"
        ratio = f"{x.peak_over_dgemm:.2f}" if x.peak_over_dgemm else "-"
        fork = lambda v: f"{v * 1e6:.1f}" if v is not None else "-"  # noqa: E731
        t.add_row(str(x.threads), f"{x.peak_double:.1f}", f"{x.peak_single:.1f}", f"{x.bandwidth:.1f}", dgemm,
                  ratio, fork(x.fork_seconds), fork(x.region_seconds))
    return t


class _Progress:
    """A rich progress display on stderr (levels and candidates measured), or nothing."""

    def __init__(self, quiet: bool):
        self.quiet = quiet or not sys.stderr.isatty()
        self.bar = None
        self.task = None

    def __enter__(self):
        if not self.quiet:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self.bar.__enter__()
            self.task = self.bar.add_task("searching", total=None)
        return self

    def level(self, name: str, depth: int, todo: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, description=f"level {depth + 1} ({name})", total=max(todo, 1),
                            completed=0)

    def candidate(self, done: int, total: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done, total=max(total, 1))

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
        return False


if __name__ == "__main__":  # pragma: no cover
    main()
