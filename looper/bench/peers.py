"""The systems `looper bench` compares in its scop mode, each a binary of looper's harness.

Every peer starts from the same `#pragma scop` C that `looper compile` writes (the original
schedule), so all of them are timed by the same `main`, the same timer and the same output check.
(The native mode, where peers compile PolyBench's own C with PolyBench's own harness, is
`bench/native.py`.)

- gcc:      -O3 -march=native (the baseline; always run)
- looper:   looper's chosen schedule, gcc -O3 -march=native -fopenmp
- pluto:    polycc --tile --parallel, then gcc -O3 -march=native -fopenmp
- polly:    clang -O3 -march=native -mllvm -polly -mllvm -polly-parallel -fopenmp
- graphite: gcc -O3 -march=native -floop-nest-optimize -floop-parallelize-all -ftree-parallelize-loops=N -fopenmp
- isl:      isl's own Pluto-style scheduler + tiling + parallel loops, printed by looper's codegen
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import islpy as isl

from ..codegen.ast import PARALLEL_LOOP, kernel_body_from_ast
from ..codegen.harness import KernelCode, program_c
from ..ir.program import Program
from ..errors import LooperError
from ..poly.deps import compute_dependences
from ..poly.legality import innermost_is_parallel
from ..runtime.process import run_tool
from ..runtime.compile import OPT_FLAGS, Binary, CompileError, compile_c
from ..ir.schedule import original
from ..transforms.schedule import Schedule

BASE_FLAGS = ("-O3", "-march=native")
POLLY_CC = ("clang-19", "clang")


@dataclass
class Build:
    """What a peer produced: a binary, or why there is none.  `harness` says how the binary is
    run: "looper" (`binary VARIANT REPEATS MODE`: warm-up and repeats in one process, outputs
    checked inside) or "polybench" (PolyBench's own main: one timed run, dump on stderr)."""

    system: str
    binary: Binary | None = None
    status: str = "ok"  # ok | failed | unavailable
    detail: str = ""
    info: dict = field(default_factory=dict)
    harness: str = "looper"


class PeerUnavailable(LooperError):
    """A requested peer cannot run here at all (not installed)."""


def original_c(program: Program) -> str:
    """looper's C of the untransformed program: the scop every peer of this mode starts from."""
    return program_c(program, [original(program)])


# -- gcc, looper --------------------------------------------------------------------------------------

# Every builder takes `extra` flags appended to the system's own: the output check builds all
# systems with `-ffp-contract=off`, so that a legal reordering gives bit-identical results whatever
# each compiler's FMA contraction would have done (gramschmidt at MINI differs by 6.0 between gcc
# -O3 and gcc -O0 with contraction on: far beyond any tolerance).

def build_gcc(program: Program, defines: tuple[str, ...], extra: tuple[str, ...] = ()) -> Build:
    return _compile("gcc", original_c(program), BASE_FLAGS + extra, "gcc", defines)


def build_looper(program: Program, schedule: Schedule, defines: tuple[str, ...],
                 extra: tuple[str, ...] = ()) -> Build:
    src = program_c(program, [schedule.lowered], comments=[f"looper: {schedule.describe()}"])
    b = _compile("looper", src, OPT_FLAGS + extra, "gcc", defines)
    b.info["sequence"] = schedule.describe()
    return b


def _compile(system: str, source: str, flags: tuple[str, ...], cc: str, defines: tuple[str, ...]) -> Build:
    try:
        return Build(system, compile_c(source, tuple(flags), cc=cc, defines=defines))
    except CompileError as e:
        return Build(system, status="failed", detail=compile_failure(e, cc))


def compile_failure(e: CompileError, cc: str) -> str:
    """One line for the table: the compiler crashed (and where: clang-19's Polly crashes on
    looper's rendering of jacobi-2d in IslNodeBuilder::createForParallel), or its first error."""
    lines = e.message.splitlines()
    name = Path(cc).name
    if any("PLEASE submit a bug report" in line or "Stack dump" in line for line in lines):
        frames = (re.search(r"#\d+ 0x[0-9a-f]+ (polly::[\w:]+)", line) for line in lines)
        where = next((m.group(1) for m in frames if m), None)
        return f"{name} crashed" + (f" in {where}" if where else "")
    error = next((line.strip() for line in lines[1:] if "error:" in line), None)
    return (f"{name}: {error}" if error else lines[0])[:300]


# -- graphite, polly ------------------------------------------------------------------------------------

def graphite_flags(threads: int) -> tuple[str, ...]:
    return BASE_FLAGS + ("-floop-nest-optimize", "-floop-parallelize-all",
                         f"-ftree-parallelize-loops={threads}", "-fopenmp")


def build_graphite(program: Program, threads: int, defines: tuple[str, ...],
                   extra: tuple[str, ...] = ()) -> Build:
    return _compile("graphite", original_c(program), graphite_flags(threads) + extra, "gcc", defines)


POLLY_FLAGS = BASE_FLAGS + ("-mllvm", "-polly", "-mllvm", "-polly-parallel", "-fopenmp")


def find_clang() -> str | None:
    for cc in POLLY_CC:
        path = shutil.which(cc)
        if path and _has_polly(path):
            return path
    return None


def _has_polly(clang: str) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "t.c"
        src.write_text("int main(void){return 0;}\n")
        r = subprocess.run([clang, "-O1", "-mllvm", "-polly", str(src), "-o", str(Path(tmp) / "t")],
                           capture_output=True, text=True)
        return r.returncode == 0


def build_polly(program: Program, defines: tuple[str, ...], clang: str | None = None,
                extra: tuple[str, ...] = ()) -> Build:
    clang = clang or find_clang()
    if clang is None:
        return Build("polly", status="unavailable",
                     detail="no clang with Polly (Debian: apt-get install clang-19 libpolly-19-dev libomp-19-dev)")
    return _compile("polly", original_c(program), POLLY_FLAGS + extra, clang, defines)


# -- pluto ------------------------------------------------------------------------------------------------

def default_polycc() -> Path:
    """Where `build-pluto.sh` installs polycc when given no prefix (looked up after PATH)."""
    return Path.home() / ".cache" / "looper-peers" / "pluto" / "bin" / "polycc"


def pluto_missing() -> str:
    """What to do when polycc is nowhere: the shared offline build script, or upstream's."""
    return ("--compare pluto needs Pluto's polycc, which is neither on PyPI nor in Debian, and none was found "
            f"on PATH or at {default_polycc()}: build Pluto 0.13 offline with the shared script "
            "(`../shared/peers/build-pluto.sh [PREFIX]`, about 2.5 minutes; it installs to "
            "~/.cache/looper-peers/pluto by default), or from https://github.com/bondhugula/pluto "
            "(./configure && make), then put polycc on PATH or pass --polycc /path/to/polycc")


def _executable(path: str | Path) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_polycc(explicit: str | None = None) -> str:
    """polycc's path (--polycc, else PATH, else build-pluto.sh's default prefix), or a
    PeerUnavailable saying how to build it."""
    if explicit:
        if not _executable(explicit):
            raise PeerUnavailable(f"--polycc {explicit}: not an executable file")
        return explicit
    path = shutil.which("polycc")
    if path is not None:
        return path
    if _executable(default_polycc()):
        return str(default_polycc())
    raise PeerUnavailable(pluto_missing())


def pluto_command(polycc: str, source: Path, output: Path) -> list[str]:
    """polycc's command line: tiling and OpenMP parallelization, as the peers table promises."""
    return [polycc, str(source), "--tile", "--parallel", "-o", str(output)]


_TRANSFORM = re.compile(r"^\s*T\((S\d+)\)\s*:\s*(\(.*\))\s*$")


def parse_pluto_output(stdout: str, c_text: str | None = None) -> dict:
    """What Pluto says it did: per-statement transformations (`T(S1): (i, j, k)`), the loops it
    marked parallel, and whether it tiled."""
    schedules = {}
    for line in stdout.splitlines():
        m = _TRANSFORM.match(line)
        if m:
            schedules[m.group(1)] = m.group(2)
    info: dict = {"transformations": schedules}
    if c_text is not None:
        info["parallel_loops"] = len(re.findall(r"#pragma\s+omp\s+parallel\s+for", c_text))
        info["tiled"] = bool(re.search(r"\b(floord|ceild)\s*\(", c_text))
        info["has_kernel"] = "kernel_0" in c_text
    return info


@dataclass(frozen=True)
class PlutoOutput:
    """What one polycc run gave: the transformed C, or why there is none; what Pluto did."""

    text: str | None
    detail: str = ""
    info: dict = field(default_factory=dict)


def run_polycc(polycc: str, source: str, name: str, timeout: float = 600) -> PlutoOutput:
    """polycc --tile --parallel on one C file, in a directory of its own (polycc writes its
    temporary files into its working directory: concurrent runs must not share one)."""
    with tempfile.TemporaryDirectory(prefix="looper-pluto-") as tmp:
        src, out = Path(tmp) / f"{name}.c", Path(tmp) / f"{name}.pluto.c"
        src.write_text(source)
        try:
            r = run_tool(pluto_command(polycc, src, out), timeout, cwd=tmp)
        except subprocess.TimeoutExpired:
            return PlutoOutput(None, f"pluto failed: polycc took over {timeout:.0f} s")
        if r.returncode != 0 or not out.exists():
            msg = (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:] or ["no output"]
            return PlutoOutput(None, f"pluto failed: {msg[0].replace(tmp + '/', '')[:300]}")
        text = out.read_text()
        return PlutoOutput(text, info=parse_pluto_output(r.stdout, text))


def build_pluto(program: Program, defines: tuple[str, ...], polycc: str, timeout: float = 600,
                extra: tuple[str, ...] = ()) -> Build:
    pluto = run_polycc(polycc, original_c(program), program.name, timeout)
    if pluto.text is None:
        return Build("pluto", status="failed", detail=pluto.detail)
    b = _compile("pluto", pluto.text, OPT_FLAGS + extra, "gcc", defines)
    b.info.update(pluto.info)
    return b


# -- isl's own scheduler ----------------------------------------------------------------------------------

def isl_schedule(program: Program, tile: int = 32) -> isl.Schedule:
    """isl's Pluto-style schedule (on the direct dependences) with its outermost permutable bands
    tiled.  Which loops run in parallel is decided later, loop by loop, in `isl_kernel`."""
    deps = compute_dependences(program).direct(program)
    sc = isl.ScheduleConstraints.on_domain(program.domains()) \
        .set_validity(deps).set_coincidence(deps).set_proximity(deps)
    sched = sc.compute_schedule()
    if sched is None:
        raise isl.Error("the scheduler found no schedule")

    def process(node: isl.ScheduleNode) -> isl.ScheduleNode:
        if node.get_type() == isl.schedule_node_type.band:
            n = node.band_n_member()
            if node.band_get_permutable() and n >= 2:
                sizes = isl.MultiVal.zero(node.band_get_space())
                for k in range(n):
                    sizes = sizes.set_val(k, isl.Val.int_from_si(node.get_ctx(), tile))
                node = node.band_tile(sizes)
            return node
        for k in range(node.n_children()):
            node = process(node.child(k)).parent()
        return node

    return process(sched.get_root()).get_schedule()


def isl_kernel(program: Program, tile: int = 32) -> KernelCode:
    """The isl peer's kernel.  Every `for` isl generates is checked against all (memory-based)
    dependences as it is built and annotated parallel when it carries none: exact, whatever
    loops isl drops as degenerate (a mark on a band would land on the wrong loop then)."""
    sched = isl_schedule(program, tile)
    deps = compute_dependences(program).all

    def annotate(build: isl.AstBuild) -> isl.Id:
        par = innermost_is_parallel(deps, build.get_schedule())
        return isl.Id(PARALLEL_LOOP if par else "sequential")

    build, _keep = isl.AstBuild.from_context(isl.Set("{ : }")).set_before_each_for(annotate)
    ast = build.node_from_schedule(sched)
    body, iterators = kernel_body_from_ast(program, ast)
    return KernelCode(program, tuple(body), tuple(iterators))


ISL_TIMEOUT = 60.0  # isl's scheduler can run for many minutes (heat-3d): it gets a wall-clock budget


def build_isl(program: Program, defines: tuple[str, ...], timeout: float = ISL_TIMEOUT,
              extra: tuple[str, ...] = ()) -> Build:
    """isl's scheduler runs in a child process (`python -m looper.bench.islpeer`) that can be
    killed when it exceeds its budget."""
    job = json.dumps({"source": program.source, "path": program.path, "sizes": program.sizes})
    try:
        r = subprocess.run([sys.executable, "-m", "looper.bench.islpeer"], input=job, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Build("isl", status="failed", detail=f"isl scheduler: no schedule within {timeout:.0f} s")
    if r.returncode != 0:
        return Build("isl", status="failed", detail=f"isl scheduler: {r.stderr.strip().splitlines()[-1:]}")
    return _compile("isl", r.stdout, OPT_FLAGS + extra, "gcc", defines)


PEERS = ("pluto", "polly", "graphite", "isl")
