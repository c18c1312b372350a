"""`looper bench polybench`: looper against its peers on the PolyBench kernels, measured fairly.

Per (kernel, size): looper searches (with the chosen evaluator); every system is built from the
same `#pragma scop` C and checked (one run whose outputs are compared with the original's: a
mismatch is WRONG and never timed); then, with nothing compiling, the systems are timed
interleaved: `repeat` rounds, each running every system once in a fresh process (a warm-up, then
timed runs), median over the rounds, min/max reported, the OpenMP runtime started before the
timer and OMP_NUM_THREADS = threads.

Results go to a table, JSON, CSV and a bar chart; `--resume` continues from the JSON; a baseline
file turns the run into a regression check for CI.
"""
from __future__ import annotations

import math
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from ..ir.program import Program
from ..lang.parse import parse_file
from ..poly.deps import compute_dependences
from ..poly.legality import check_schedule
from ..runtime.compile import EXACT_FLAGS
from ..runtime.machine import cpu_model, load_average
from ..runtime.run import Interleaved, run_binary, status_line, time_interleaved
from ..transforms.schedule import Schedule
from . import peers

KERNEL_DIR = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "polybench"
SIZES = ("MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE")
ALL_KERNELS = sorted(p.stem.replace("_", "-") for p in KERNEL_DIR.glob("*.py"))


@dataclass
class SystemResult:
    system: str
    status: str  # ok | checked | WRONG | crash | timeout | failed | unavailable
    median: float | None = None
    min: float | None = None
    max: float | None = None
    times: list[float] = field(default_factory=list)
    detail: str = ""


@dataclass
class KernelResult:
    kernel: str
    size: str
    sequence: str
    evaluator: str
    search_seconds: float
    systems: dict[str, SystemResult]

    def speedup(self, system: str, over: str = "gcc") -> float | None:
        a, b = self.systems.get(over), self.systems.get(system)
        if a and b and a.status == "ok" and b.status == "ok" and a.median and b.median:
            return a.median / b.median
        return None


@dataclass
class BenchConfig:
    kernels: list[str]
    sizes: list[str]
    compare: list[str]
    evaluator: str = "model"
    beam: int = 3
    repeat: int = 5
    threads: int = 2
    check_only: bool = False
    polycc: str | None = None
    timeout_factor: float = 20.0  # a peer 20x slower than gcc is reported as a timeout
    min_timeout: float = 60.0
    baseline_timeout: float = 900.0  # per gcc run: LARGE floyd-warshall/lu/seidel-2d take seconds each


def kernel_file(name: str) -> Path:
    path = KERNEL_DIR / f"{name.replace('-', '_')}.py"
    if not path.exists():
        from ..errors import LooperUsageError
        raise LooperUsageError(f"no PolyBench kernel '{name}' (known: {', '.join(ALL_KERNELS)})")
    return path


def choose_schedule(program: Program, evaluator: str, beam: int, threads: int) -> tuple[Schedule, float]:
    """looper's answer for one program: the search with the requested evaluator.  Hybrid only
    has to rank the model's 5 best (the bench times the winner itself, with --repeat runs): one
    timed run after the checked warm-up halves its cost at LARGE."""
    from ..search.factory import search_from_options
    deps = compute_dependences(program)
    t0 = time.perf_counter()
    search = search_from_options(program, evaluator, beam=beam, threads=threads,
                                 repeats=1 if evaluator == "hybrid" else 3)
    result = search.run(deps)
    return result.best, time.perf_counter() - t0


def check_size(size: str, check_only: bool) -> str:
    """Where outputs are compared: MINI for --check-only, else the run's size up to SMALL."""
    if check_only:
        return "MINI"
    return size if SIZES.index(size) <= SIZES.index("SMALL") else "SMALL"


def build_system(system: str, program: Program, schedule: Schedule, cfg: BenchConfig,
                 defines: tuple[str, ...], extra: tuple[str, ...] = ()) -> peers.Build:
    if system == "gcc":
        return peers.build_gcc(program, defines, extra)
    if system == "looper":
        return peers.build_looper(program, schedule, defines, extra)
    if system == "pluto":
        return peers.build_pluto(program, defines, peers.find_polycc(cfg.polycc), extra=extra)
    if system == "polly":
        return peers.build_polly(program, defines, extra=extra)
    if system == "graphite":
        return peers.build_graphite(program, cfg.threads, defines, extra)
    if system == "isl":
        return peers.build_isl(program, defines, timeout=20.0 if cfg.check_only else peers.ISL_TIMEOUT,
                               extra=extra)
    raise ValueError(f"unknown system {system}")


def _at_size(name: str, size: str, program: Program, schedule: Schedule, cfg: BenchConfig
             ) -> tuple[Program, Schedule]:
    """The kernel at `size` with looper's sequence replayed on it.  Legality can depend on sizes
    (a shift, a skew): when the sequence is illegal there, a timed run checks at its own size,
    and --check-only searches again at the check size."""
    if size == program.size_label:
        return program, schedule
    small = parse_file(kernel_file(name), size)
    replayed = Schedule.from_json(small, schedule.to_json())
    if check_schedule(compute_dependences(small), replayed) is None:
        return small, replayed
    if cfg.check_only:
        return small, choose_schedule(small, cfg.evaluator, cfg.beam, cfg.threads)[0]
    return program, schedule


def run_kernel(name: str, size: str, cfg: BenchConfig, log: Callable[[str], None] = lambda s: None
               ) -> KernelResult:
    """Search, then check every system's outputs (exact arithmetic, small size), then time the
    systems that computed the right thing at the run's size."""
    program = parse_file(kernel_file(name), size)
    schedule, search_s = choose_schedule(program, cfg.evaluator, cfg.beam, cfg.threads)
    systems = ["gcc", "looper"] + list(cfg.compare)
    cprog, csched = _at_size(name, check_size(size, cfg.check_only), program, schedule, cfg)
    checks = {s: build_system(s, cprog, csched, cfg, (), EXACT_FLAGS) for s in systems}
    results = check_outputs(checks, log)
    for r in results.values():
        if r.status in ("checked", "WRONG"):
            r.detail = (r.detail + f" (at {cprog.size_label})").strip()
    if not cfg.check_only:
        timed = {s: build_system(s, program, schedule, cfg, ("POLYBENCH_TIME",))
                 for s in systems if results[s].status == "checked"}
        results.update(time_systems(timed, cfg, log))
    return KernelResult(name, size, schedule.describe(), cfg.evaluator, search_s, results)


def check_outputs(builds: dict[str, peers.Build], log: Callable[[str], None] = lambda s: None,
                  threads: int = 2, timeout: float = 600.0) -> dict[str, SystemResult]:
    """Run every build once, gcc first (its outputs are the reference), and compare the others'
    outputs with gcc's inside the harness: `checked`, `WRONG`, `crash`, `timeout` or why it did
    not build."""
    out: dict[str, SystemResult] = {}
    with tempfile.TemporaryDirectory(prefix="looper-check-") as tmp:
        ref = Path(tmp) / "reference.bin"
        for system, b in builds.items():
            if b.binary is None:
                out[system] = SystemResult(system, b.status, detail=b.detail)
            elif "gcc" in out and out["gcc"].status != "checked":
                out[system] = SystemResult(system, "unchecked", detail="the original did not run")
            else:
                mode = f"save:{ref}" if system == "gcc" else f"check:{ref}"
                res = run_binary(b.binary.path, 0, 1, timeout=timeout, threads=threads, mode=mode)
                if system != "gcc" and res.returncode == 4:
                    bad = status_line(res.stdout, "CHECK")
                    out[system] = SystemResult(system, "WRONG", detail=f"{bad} output values differ from gcc's")
                elif res.timed_out:
                    out[system] = SystemResult(system, "timeout", detail=f"over {timeout:.0f} s")
                elif not res.ok:
                    out[system] = SystemResult(system, "crash", detail=res.describe_failure())
                else:
                    out[system] = SystemResult(system, "checked", detail=b.detail)
            log(f"  check {system:9} {out[system].status:8} {out[system].detail}")
    return out


def time_systems(builds: dict[str, peers.Build], cfg: BenchConfig, log: Callable[[str], None] = lambda s: None
                 ) -> dict[str, SystemResult]:
    """Time the builds interleaved: `repeat` rounds, each running every system once in a fresh
    process (a warm-up, then timed runs: one, or enough for about 0.1 s when a run is shorter),
    in alternating order; a system's time is the median of its rounds.  This VM's speed drifts for
    minutes at a time (runtime.run.time_interleaved): systems timed one after the other landed in
    different phases and their ratios carried it.  gcc runs first with a generous time limit;
    every other system gets `timeout_factor` times gcc's time per run."""
    out: dict[str, SystemResult] = {}
    runnable = sorted((s for s, b in builds.items() if b.binary is not None), key=lambda s: s != "gcc")
    for system, b in builds.items():
        if b.binary is None:
            out[system] = SystemResult(system, b.status, detail=b.detail)

    def limit(k: int, n: int, so_far: list[Interleaved]) -> float:
        gcc = so_far[0].times if runnable[0] == "gcc" else []
        per_run = cfg.baseline_timeout if k == 0 or not gcc else cfg.timeout_factor * gcc[0]
        return max(cfg.min_timeout, per_run * (1 + n))

    timed = time_interleaved([(builds[s].binary.path, 0) for s in runnable], cfg.repeat,
                             threads=cfg.threads, timeout=limit, per_process=None)
    for system, t in zip(runnable, timed):
        if t.ok:
            out[system] = SystemResult(system, "ok", statistics.median(t.times), min(t.times),
                                       max(t.times), t.times, builds[system].detail)
        elif t.failure is not None and t.failure.timed_out:
            out[system] = SystemResult(system, "timeout", detail=f"over {t.limit:.0f} s")
        else:
            out[system] = SystemResult(system, "crash", detail=t.failure.describe_failure()
                                       if t.failure else "no time")
        log(f"  time  {system:9} {out[system].status:8} "
            + (f"{out[system].median:.6f} s" if out[system].median else out[system].detail))
    return {s: out[s] for s in builds}


# -- the suite --------------------------------------------------------------------------------------------

def run_suite(cfg: BenchConfig, previous: list[KernelResult] | None = None,
              on_result: Callable[[KernelResult, int, int], None] | None = None,
              log: Callable[[str], None] = lambda s: None) -> list[KernelResult]:
    done = {(r.kernel, r.size): r for r in previous or []
            if set(cfg.compare) <= set(r.systems) and "gcc" in r.systems}
    todo = [(k, s) for s in cfg.sizes for k in cfg.kernels]
    results: list[KernelResult] = []
    for n, (k, s) in enumerate(todo):
        if (k, s) in done:
            results.append(done[(k, s)])
        else:
            log(f"{k} [{s}]")
            results.append(run_kernel(k, s, cfg, log))
        if on_result:
            on_result(results[-1], n + 1, len(todo))
    return results


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def summary(results: list[KernelResult], systems: list[str]) -> dict:
    """Geometric mean and median of looper's speedup over gcc and over each peer."""
    out = {}
    for over in ["gcc"] + [s for s in systems if s not in ("gcc", "looper")]:
        sp = [r.speedup("looper", over) for r in results]
        sp = [x for x in sp if x]
        out[over] = {"geomean": geomean(sp), "median": statistics.median(sp) if sp else None, "n": len(sp)}
    for s in systems:
        if s in ("gcc",):
            continue
        sp = [x for x in (r.speedup(s, "gcc") for r in results) if x]
        out[f"{s}_over_gcc"] = {"geomean": geomean(sp), "median": statistics.median(sp) if sp else None,
                                "n": len(sp)}
    return out


def table(results: list[KernelResult], systems: list[str], check_only: bool):
    """The suite as a rich table: each system's time, looper's speedups, geomean and median rows."""
    from rich.table import Table

    t = Table(title="PolyBench 4.2.1" + (" (outputs checked at MINI, not timed)" if check_only else ""))
    t.add_column("kernel")
    t.add_column("size")
    for s in systems:
        t.add_column(f"{s} (s)" if not check_only else s, justify="right")
    peers_ = [s for s in systems if s not in ("gcc", "looper")]
    if not check_only:
        t.add_column("looper/gcc", justify="right")
        for p in peers_:
            t.add_column(f"looper/{p}", justify="right")
    t.add_column("looper's sequence")
    for r in results:
        cells = []
        for s in systems:
            x = r.systems.get(s)
            if x is None:
                cells.append("-")
            elif x.status == "ok":
                cells.append(f"{x.median:.4f}")
            else:
                cells.append(x.status)
        if not check_only:
            for over in ["gcc"] + peers_:
                sp = r.speedup("looper", over)
                cells.append(f"{sp:.2f}x" if sp else "-")
        t.add_row(r.kernel, r.size, *cells, r.sequence)
    if not check_only and results:
        summ = summary(results, systems)
        for stat in ("geomean", "median"):
            row = [stat, ""] + [""] * len(systems)
            for over in ["gcc"] + peers_:
                v = summ[over][stat]
                row.append(f"{v:.2f}x" if v else "-")
            t.add_row(*row, "")
    return t


# -- files ------------------------------------------------------------------------------------------------

def to_json(results: list[KernelResult], cfg: BenchConfig) -> dict:
    systems = ["gcc", "looper"] + cfg.compare
    return {
        "meta": {"cpu": cpu_model(), "threads": cfg.threads, "repeat": cfg.repeat, "evaluator": cfg.evaluator,
                 "beam": cfg.beam, "compare": cfg.compare, "check_only": cfg.check_only,
                 "loadavg": load_average(), "created": time.time()},
        "results": [asdict(r) for r in results],
        "summary": summary(results, systems),
    }


def from_json(data: dict) -> list[KernelResult]:
    out = []
    for r in data.get("results", []):
        systems = {k: SystemResult(**v) for k, v in r["systems"].items()}
        out.append(KernelResult(r["kernel"], r["size"], r["sequence"], r["evaluator"], r["search_seconds"],
                                systems))
    return out


def write_csv(results: list[KernelResult], path: str | Path) -> None:
    import csv
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kernel", "size", "system", "status", "median_s", "min_s", "max_s", "speedup_over_gcc",
                    "looper_sequence"])
        for r in results:
            for s, x in r.systems.items():
                sp = r.speedup(s, "gcc")
                w.writerow([r.kernel, r.size, s, x.status, x.median, x.min, x.max, sp,
                            r.sequence if s == "looper" else ""])


def plot(results: list[KernelResult], systems: list[str], path: str | Path, baseline: str = "gcc") -> None:
    """Speedup over `baseline`, one group of bars per kernel, log scale (LOOPer's Figure 4)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = [s for s in systems if s != baseline]
    labels = [f"{r.kernel}" + (f" ({r.size})" if len({x.size for x in results}) > 1 else "") for r in results]
    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(results) * max(1, len(shown)) / 1.5), 4.5))
    width = 0.8 / max(1, len(shown))
    for j, s in enumerate(shown):
        vals = [r.speedup(s, baseline) or 0 for r in results]
        xs = [k + (j - (len(shown) - 1) / 2) * width for k in range(len(results))]
        ax.bar(xs, [v if v > 0 else float("nan") for v in vals], width, label=s)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_ylabel(f"speedup over {baseline} -O3")
    ax.set_xticks(range(len(results)))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=8)
    ax.legend(fontsize=8)
    ax.set_title("PolyBench 4.2.1: speedup over " + baseline)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- regression mode ----------------------------------------------------------------------------------------

def baseline_json(results: list[KernelResult]) -> dict:
    return {"kind": "looper-bench-baseline",
            "kernels": {f"{r.kernel}/{r.size}": {"speedup": r.speedup("looper", "gcc"),
                                                 "status": r.systems.get("looper", SystemResult("looper", "?")).status}
                        for r in results}}


def regressions(results: list[KernelResult], baseline: dict, tolerance: float) -> list[str]:
    """Kernels whose looper speedup over gcc dropped by more than `tolerance`, or whose output
    became wrong (or stopped building/running)."""
    out = []
    known = baseline.get("kernels", {})
    for r in results:
        key = f"{r.kernel}/{r.size}"
        if key not in known:
            continue
        was = known[key]
        now = r.systems.get("looper")
        status = now.status if now else "missing"
        if status not in ("ok", "checked") and was.get("status") in ("ok", "checked"):
            out.append(f"{key}: looper {status} ({now.detail if now else ''})")
            continue
        sp, old = r.speedup("looper", "gcc"), was.get("speedup")
        if sp is not None and old and sp < old * (1 - tolerance):
            out.append(f"{key}: speedup over gcc {sp:.2f}x, baseline {old:.2f}x "
                       f"(-{100 * (1 - sp / old):.0f}% > {100 * tolerance:.0f}%)")
    return out
