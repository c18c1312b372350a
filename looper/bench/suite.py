"""The suite around the per-kernel runs: options, resuming, saving, and the exit status.

These are the bench's rules, not the command line's: which (kernel, size, input) results a
resumed run keeps, when the JSON is written (after every kernel, so an interrupted suite resumes
where it stopped), and when a run fails (outputs wrong in a `--check-only` run; looper slower
than a baseline allows).  `looper bench polybench` only parses options and prints.
"""
from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import LooperError, LooperUsageError
from ..fileio import write_text
from ..interrupts import raise_pending
from ..target.host import cpu_id, load_average
from ..runtime.peaks import limits_for_bench
from . import native, peers
from .polybench import ALL_KERNELS, SIZES, BenchConfig, kernel_file, run_kernel
from .results import BLAS_REFERENCE, INPUTS, KernelResult, SystemResult, from_json, to_json, write_csv
from ..tune.options import TuneOptions

OnResult = Callable[[KernelResult, int, int], None]


def _names(text: str | None, what: str, known: tuple[str, ...] | list[str]) -> list[str]:
    values = [v.strip() for v in (text or "").split(",") if v.strip()]
    for v in values:
        if v not in known:
            raise LooperUsageError(f"{what}: unknown {'peer' if what == '--compare' else 'value'} '{v}' "
                                   f"(use {', '.join(known)})")
    return values


def config_from_options(kernels: str | None, sizes: str, compare: str, inputs: str, threads: int,
                        polycc: str | None = None, polybench_c: str | None = None, **rest) -> BenchConfig:
    """A validated configuration, or a usage error naming the bad option.  `inputs` is scop,
    native or both; `rest` holds the plain settings (evaluator, beam, repeat, check_only)."""
    names = [k.strip().replace("_", "-") for k in kernels.split(",")] if kernels else list(ALL_KERNELS)
    for k in names:
        kernel_file(k)
    size_list = [s.strip().upper() for s in sizes.split(",") if s.strip()]
    for s in size_list:
        if s not in SIZES:
            raise LooperUsageError(f"--sizes: unknown dataset '{s}' (use {', '.join(SIZES)})")
    peer_list = _names(compare, "--compare", peers.PEERS + (BLAS_REFERENCE,))
    modes = list(INPUTS) if inputs == "both" else _names(inputs, "--input", INPUTS)
    if not modes:
        raise LooperUsageError("--input: give scop, native or both")
    if "pluto" in peer_list:
        polycc = peers.find_polycc(polycc)  # stops here, saying how to build it, when Pluto is missing
    if "native" in modes:
        polybench_c = str(native.PolyBenchC.find(polybench_c).root)
    if rest.get("omp_envs") is None:
        rest.pop("omp_envs", None)
    return BenchConfig(names, size_list, peer_list, threads=threads, polycc=polycc, inputs=modes,
                       polybench_c=polybench_c, **rest)


VARIANT_KEYS = ("evaluator", "model", "per_round", "records")


@dataclass(frozen=True)
class Variant:
    """`--variant NAME:...`: another looper system timed in the same rounds as the default, as
    the column `looper-NAME`: searched with `options`, or, with `records`, that file's answers
    replayed (another commit's or another machine's answers, timed beside the default's)."""

    name: str
    options: TuneOptions
    records: str | None = None


def parse_variant(text: str, base: TuneOptions) -> Variant:
    """`--variant NAME:KEY=VALUE,...` (keys: evaluator, model, per_round, records) -> the variant
    `looper-NAME` (the default's options with those changed), or a usage error."""
    from ..tune import Evaluator
    name, colon, spec = text.partition(":")
    if not colon or not name.replace("-", "").isalnum():
        raise LooperUsageError(f"--variant: expected NAME:KEY=VALUE,... (keys {', '.join(VARIANT_KEYS)}), got '{text}'")
    options, records = base, None
    for item in filter(None, (x.strip() for x in spec.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key not in VARIANT_KEYS:
            raise LooperUsageError(f"--variant {name}: unknown setting '{item}' (keys {', '.join(VARIANT_KEYS)})")
        try:
            if key == "evaluator":
                options = options.with_(evaluator=Evaluator.parse(value))
            elif key == "model":
                options = options.with_(model=_existing(value))
            elif key == "records":
                records = _existing(value)
            else:
                options = options.with_(hybrid=dataclasses.replace(options.hybrid, per_round=int(value)))
        except ValueError as e:
            raise LooperUsageError(f"--variant {name}: {key}: {e}") from None
    if records is not None and options != base:
        raise LooperUsageError(f"--variant {name}: records= replays answers, which no other setting changes")
    return Variant(f"looper-{name}", options, records)


def _existing(path: str) -> str:
    """`path`, when it names a file (else a ValueError saying so)."""
    if not Path(path).is_file():
        raise ValueError(f"no file {path}")
    return path


def describe_variant(o: TuneOptions, records: str | None = None) -> dict:
    if records is not None:
        return {"records": records}
    return {"evaluator": o.evaluator.value, "model": o.model, "per_round": o.hybrid.per_round}


def meta(cfg: BenchConfig) -> dict:
    """What a results file records about the run and the machine."""
    limits = cfg.limits
    t = cfg.tune
    return {"cpu": cpu_id(), "target": cfg.machine().describe(), "threads": cfg.threads, "repeat": cfg.repeat,
            "evaluator": cfg.evaluator, "omp_envs": [e.describe() for e in cfg.omp_envs],
            "beam": t.beam, "compare": cfg.compare, "inputs": cfg.inputs, "check_only": cfg.check_only,
            "polybench_c": cfg.polybench_c, "polycc": cfg.polycc, "loadavg": load_average(),
            "search_repeats": t.repeats, "structure_budget": t.structure_budget, "search_budget": t.budget,
            "model": t.model, "per_round": t.hybrid.per_round,
            "variants": {name: describe_variant(o, cfg.replays[name].source if name in cfg.replays else None)
                         for name, o in cfg.variants.items()},
            "protocol": t.protocol.name,
            "proxy": None if t.proxy is None else {"steps": t.proxy.steps, "sizes": t.proxy.sizes},
            "created": time.time(),
            "limits": None if limits is None else {
                "peak_double_gflops": limits.peak_double, "peak_single_gflops": limits.peak_single,
                "bandwidth_gbs": limits.bandwidth, "dgemm_gflops": limits.dgemm, "threads": limits.threads}}


@dataclass
class ResultsFile:
    """The `--json` file: read by `--resume`, rewritten after every kernel.  A resumed run keeps
    every earlier entry it does not run again (other kernels, sizes, modes), also at its end.
    The `--csv` file, when asked for, is rewritten after every kernel too, with this run's."""

    path: Path | None
    previous: list[KernelResult]
    csv: Path | None = None
    ran: list[KernelResult] = field(default_factory=list)  # this run's results so far, in order

    @staticmethod
    def open(path: str | None, resume: bool, csv: str | None = None) -> "ResultsFile":
        """The file to write, with the results to keep when resuming (a usage error when
        --resume has no --json to continue from)."""
        if resume and not path:
            raise LooperUsageError("--resume needs --json FILE (the results to continue from)")
        p = Path(path) if path else None
        previous = from_json(json.loads(p.read_text())) if resume and p is not None and p.exists() else []
        return ResultsFile(p, previous, Path(csv) if csv else None)

    def add(self, result: KernelResult, cfg: BenchConfig) -> None:
        """Replace this result's (kernel, size, input) entry, keeping the others; an interrupt
        leaves both files with the kernels done."""
        self.previous = [x for x in self.previous if x.key != result.key] + [result]
        self.ran.append(result)
        self.write([], cfg)
        if self.csv is not None:
            write_csv(self.ran, self.csv)

    def write(self, results: list[KernelResult], cfg: BenchConfig) -> None:
        """Write `results` (the whole run, at its end) and the kept entries they do not replace."""
        if self.path is None:
            return
        keys = {r.key for r in results}
        every = [x for x in self.previous if x.key not in keys] + results
        write_text(self.path, json.dumps(to_json(every, meta(cfg)), indent=1))  # whole or not at all


def reusable(previous: list[KernelResult], cfg: BenchConfig) -> dict[tuple[str, str, str], KernelResult]:
    """The finished results a resumed run keeps: same input mode, every peer asked for present."""
    return {r.key: r for r in previous if set(cfg.compare) <= set(r.systems) and "gcc" in r.systems}


def run_suite(cfg: BenchConfig, previous: list[KernelResult] | None = None, on_result: OnResult | None = None,
              log: Callable[[str], None] = lambda s: None) -> list[KernelResult]:
    """Every (kernel, size) in every input mode, skipping what `previous` already holds; looper
    searches once per (kernel, size) for all the modes still to run.  When timing, the machine's
    limits are read from the cache (or measured once) first."""
    if not cfg.check_only and cfg.limits is None:
        cfg.limits = limits_for_bench(cfg.threads, log)
    done = reusable(previous or [], cfg)
    todo = [(k, s) for s in cfg.sizes for k in cfg.kernels]
    results: list[KernelResult] = []
    for n, (k, s) in enumerate(todo):
        raise_pending()  # an interrupt something swallowed during the last kernel
        missing = [m for m in cfg.inputs if (k, s, m) not in done]
        if missing:
            log(f"{k} [{s}]")
        fresh = {r.input: r for r in _run_contained(k, s, cfg, log, missing)} if missing else {}
        for m in cfg.inputs:
            results.append(fresh.get(m) or done[(k, s, m)])
            if on_result:
                on_result(results[-1], n + 1, len(todo))
    return results


INTERNAL = "internal error"  # the detail of a kernel whose run raised (not the user's error)


def _run_contained(kernel: str, size: str, cfg: BenchConfig, log: Callable[[str], None],
                   inputs: list[str]) -> list[KernelResult]:
    """`run_kernel`, except that a bug in looper on one kernel (its search, a build, the timing)
    becomes that kernel's failed result and the suite goes on: one crash must not cost the other
    kernels of a long run.  The user's errors (options, a missing peer) still end the run."""
    try:
        return run_kernel(kernel, size, cfg, log, inputs)
    except LooperError:
        raise
    except Exception as e:  # noqa: BLE001 - recorded, reported, and failing the exit status
        detail = f"{INTERNAL}: {type(e).__name__}: {e}; please report it"
        log(f" {kernel} [{size}]: {detail}")
        return [KernelResult(kernel, size, "", cfg.evaluator, 0.0,
                             {"looper": SystemResult("looper", "failed", detail=detail)}, mode)
                for mode in inputs]


def internal_errors(results: list[KernelResult]) -> list[str]:
    """The kernels whose run raised inside looper (`_run_contained`)."""
    return [f"{r.kernel} [{r.size}, {r.input}]: {x.detail}" for r in results
            for x in [r.systems.get("looper")] if x and x.status == "failed" and x.detail.startswith(INTERNAL)]


def write_outputs(results: list[KernelResult], cfg: BenchConfig, plot_path: str | None = None,
                  roofline_path: str | None = None, baseline_path: str | None = None) -> None:
    """The files a run was asked for besides its JSON and CSV (`ResultsFile`; plots only when
    something was timed)."""
    from . import report, roofline
    from .results import systems_of
    if plot_path and not cfg.check_only:
        report.plot(results, systems_of(results), plot_path)
    if roofline_path and not cfg.check_only and cfg.limits is not None:
        roofline.plot_roofline(results, cfg.limits, roofline_path)
    if baseline_path:
        write_text(baseline_path, json.dumps(baseline_json(results, cfg), indent=1))


# -- the exit status ----------------------------------------------------------------------------------------

def check_failures(results: list[KernelResult]) -> list[str]:
    """What fails a --check-only run: wrong outputs, crashes and timeouts of any system, and
    looper or its baselines not checked.  A peer that cannot build (isl's scheduler giving up, a
    missing compiler, Pluto's parser) is reported in the table but is not looper's failure."""
    own = ("looper", "gcc", "original")
    return [f"{r.kernel} ({r.input}): {s} {x.status} {x.detail}" for r in results for s, x in r.systems.items()
            if x.status in ("WRONG", "crash", "timeout") or (s in own and x.status != "checked")]


def exit_status(results: list[KernelResult], check_only: bool, baseline: dict | None, tolerance: float,
                report: Callable[[str], None]) -> int:
    """0, or 1 when a --check-only run failed, a kernel's run raised inside looper, or a kernel
    regressed against `baseline`; every reason goes to `report`."""
    bad = check_failures(results) if check_only else []
    for b in bad:
        report(f"check failed: {b}")
    crashed = [] if check_only else internal_errors(results)  # a check run lists them above
    for c in crashed:
        report(f"FAILED {c}")
    regs = regressions(results, baseline, tolerance) if baseline is not None else []
    for r in regs:
        report(f"REGRESSION {r}")
    return 1 if bad or crashed or regs else 0


def baseline_key(r: KernelResult) -> str:
    """`kernel/size` for the scop mode (as baselines always were), `kernel/size/native` else."""
    return f"{r.kernel}/{r.size}" + ("" if r.input == "scop" else f"/{r.input}")


def baseline_json(results: list[KernelResult], cfg: BenchConfig | None = None) -> dict:
    """looper's speedup over gcc per kernel: what a later run is compared with; with `cfg`, also
    each kernel's answer as a tuning record, which the later run replays instead of searching."""
    from .records import result_record
    kernels = {}
    for r in results:
        entry = {"speedup": r.speedup("looper", "gcc"),
                 "status": r.systems.get("looper", SystemResult("looper", "?")).status}
        rec = result_record(r, cfg) if cfg is not None else None
        if rec is not None:
            entry["record"] = rec.to_json()
        kernels[baseline_key(r)] = entry
    return {"kind": "looper-bench-baseline", "kernels": kernels}


def regressions(results: list[KernelResult], baseline: dict, tolerance: float) -> list[str]:
    """Kernels whose looper speedup over gcc dropped by more than `tolerance`, or whose output
    became wrong (or stopped building/running)."""
    out = []
    known = baseline.get("kernels", {})
    for r in results:
        key = baseline_key(r)
        if key not in known:
            continue
        was, now = known[key], r.systems.get("looper")
        status = now.status if now else "missing"
        if status not in ("ok", "checked") and was.get("status") in ("ok", "checked"):
            out.append(f"{key}: looper {status} ({now.detail if now else ''})")
            continue
        sp, old = r.speedup("looper", "gcc"), was.get("speedup")
        if sp is not None and old and sp < old * (1 - tolerance):
            out.append(f"{key}: speedup over gcc {sp:.2f}x, baseline {old:.2f}x "
                       f"(-{100 * (1 - sp / old):.0f}% > {100 * tolerance:.0f}%)")
    return out
