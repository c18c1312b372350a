"""The `looper` command line (click).  User mistakes exit with status 2 and one clear line."""
from __future__ import annotations

import functools
import statistics
import sys
from pathlib import Path

import click

from .lang.errors import LooperError, LooperUsageError


def _friendly(fn):
    """Turn looper's user-facing errors into `FILE:LINE:COL: error: ...` and an exit status."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except LooperError as e:
            click.echo(str(e), err=True)
            sys.exit(e.exit_status)
        except KeyboardInterrupt:
            click.echo("looper: interrupted", err=True)
            sys.exit(130)

    return wrapper


def parse_defines(values: tuple[str, ...]) -> dict[str, int]:
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


def size_options(fn):
    fn = click.option("-D", "defines", multiple=True, metavar="NAME=V",
                      help="Set a size (overrides the dataset's value).")(fn)
    fn = click.option("--size", "-s", default=None, metavar="DATASET",
                      help="Dataset from the program's SIZES (MINI..EXTRALARGE; default LARGE).")(fn)
    return fn


def load_program(file: str, size: str | None, defines: tuple[str, ...]):
    from .lang.parse import parse_file
    return parse_file(file, size, parse_defines(defines))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="looper", prog_name="looper")
def main() -> None:
    """looper: a learned polyhedral autoscheduler for loop-nest programs.

    Programs are written in a small Python subset (see README.md); looper parses them (never runs
    them), optimizes their loop nests with isl, and emits OpenMP C.
    """


@main.command("compile")
@click.argument("file", type=click.Path(dir_okay=False))
@size_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where to write the C program (default: standard output).")
@_friendly
def compile_cmd(file: str, size: str | None, defines: tuple[str, ...], output: str | None) -> None:
    """Write FILE as a complete C program (original schedule, PolyBench harness).

    The kernel sits between #pragma scop / #pragma endscop; build with -DPOLYBENCH_TIME to print
    the kernel time, -DPOLYBENCH_DUMP_ARRAYS to dump OUTPUTS on stderr.
    """
    from .codegen.harness import program_c
    from .transforms.schedule import original

    program = load_program(file, size, defines)
    text = program_c(program, [original(program)])
    if output:
        Path(output).write_text(text)
    else:
        click.echo(text, nl=False)


@main.command("run")
@click.argument("file", type=click.Path(dir_okay=False))
@size_options
@click.option("--dump", is_flag=True, help="Print the OUTPUTS arrays (PolyBench dump format).")
@click.option("--repeat", "-r", default=1, show_default=True, type=click.IntRange(1, 1000),
              help="Timed runs (arrays restored before each); the median is reported.")
@click.option("--threads", "-t", default=None, type=click.IntRange(1, 1024),
              help="OMP_NUM_THREADS for the run.")
@_friendly
def run_cmd(file: str, size: str | None, defines: tuple[str, ...], dump: bool, repeat: int,
            threads: int | None) -> None:
    """Compile FILE with gcc -O3 -march=native -fopenmp, run it, print the kernel time."""
    from .codegen.harness import program_c
    from .runtime.compile import OPT_FLAGS, compile_c
    from .runtime.run import run_binary
    from .transforms.schedule import original

    program = load_program(file, size, defines)
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


if __name__ == "__main__":  # pragma: no cover
    main()
