"""How the bench shows its results: one rich table per input mode, a bar chart, progress lines.

A table row is one kernel: each system's time (the mean of its fresh runs, as users pay it) with
its GFLOP/s and fraction of the machine's peak beneath (and, with `--compare openblas`, its rate
as a share of the BLAS's at the kernel's shapes in the same rounds), looper's speedup over every
other system, why a system has no time (a status and its detail), and looper's sequence.  `looper-measure`, the
measuring search's answer, is a ceiling the default is compared with, never the headline; in the
native mode `original` (looper's harness around the untransformed program) only shows how much
the harness alone changes (`harness`: gcc's time over original's).
"""
from __future__ import annotations

from pathlib import Path

from rich.table import Table

from ..fileio import atomic_path
from ..target.limits import Limits
from .results import BLAS_REFERENCE, KernelResult, SystemResult, summary

MODE_TITLES = {
    "scop": "input: scop (every system compiles looper's #pragma scop C and runs in looper's harness)",
    "native": "input: native (every system compiles PolyBench's own C with PolyBench's harness; looper "
              "optimizes that file in place; `original` is looper's harness, a diagnostic)",
}


def table(results: list[KernelResult], systems: list[str], check_only: bool, mode: str = "scop",
          limits: Limits | None = None) -> Table:
    """One input mode's results: times, GFLOP/s and fraction of peak, speedups, failures."""
    title = f"PolyBench 4.2.1, {MODE_TITLES.get(mode, mode)}"
    envs = next((r.environments for r in results if r.environments), [])
    if envs:
        title += f"; OpenMP environment {envs[0]}" + (f" (also timed in: {', '.join(envs[1:])})" if envs[1:] else "")
    t = Table(title=title + (" (outputs checked, not timed)" if check_only else ""),
              caption=None if check_only else _caption(limits))
    others = [s for s in systems if s not in ("looper", "original", BLAS_REFERENCE)]
    for name in ["kernel", "size"] + [s if check_only else f"{s} (s)\nGFLOP/s, % of peak" for s in systems]:
        t.add_column(name, justify="left" if name in ("kernel", "size") else "right")
    extra_envs = sorted({k.split("@", 1)[1] for r in results for k in r.systems if "@" in k})
    if not check_only:
        for o in others:
            t.add_column(f"looper/{o}", justify="right")
        for e in extra_envs:
            t.add_column(f"looper/gcc\nin {e}", justify="right")
        if "original" in systems:
            t.add_column("harness\n(gcc/original)", justify="right")
    t.add_column("status, detail")
    t.add_column("looper's sequence")
    for r in results:
        cells = [_cell(r.systems.get(s), check_only) for s in systems]
        if not check_only:
            cells += [_ratio(r.speedup("looper", o)) for o in others]
            cells += [_ratio(r.speedup(f"looper@{e}", f"gcc@{e}")) for e in extra_envs]
            if "original" in systems:
                cells.append(_ratio(r.speedup("original", "gcc")))
        t.add_row(r.kernel, r.size, *cells, notes(r), r.sequence)
    if not check_only and results:
        summ = summary(results, systems)
        for stat in ("geomean", "median"):
            t.add_row(stat, "", *[""] * len(systems), *[_ratio(summ[o][stat]) for o in others],
                      *[""] * len(extra_envs), *([""] if "original" in systems else []), "", "")
    return t


def _caption(limits: Limits | None) -> str | None:
    if limits is None:
        return None
    return (f"% of peak: of the measured FMA peak on {limits.threads} thread(s), {limits.peak_double:.0f} GFLOP/s "
            f"double, {limits.peak_single:.0f} single (`looper machine`); triad {limits.bandwidth:.0f} GB/s")


def _cell(x: SystemResult | None, check_only: bool) -> str:
    if x is None:
        return "-"
    if x.status != "ok" or check_only:
        return x.status
    text = f"{x.seconds:.4g}"
    if x.gflops is not None:
        text += f"\n{x.gflops:.1f}" + (f", {100 * x.fraction_of_peak:.1f}%" if x.fraction_of_peak else "")
    if x.of_blas is not None:
        text += f"\n{100 * x.of_blas:.0f}% of BLAS"
    return text


def _ratio(v: float | None) -> str:
    return f"{v:.2f}x" if v else "-"


def notes(r: KernelResult, width: int = 90) -> str:
    """Why each system that has no time has none (`pluto failed: ...`, `polly WRONG: ...`), and
    whether looper's speed depends on the OpenMP environment (`KernelResult.environment_flags`)."""
    out = [f"FLAG: {f}" for f in r.environment_flags()]
    for s, x in r.systems.items():
        if x.status not in ("ok", "checked"):
            text = x.detail if x.detail.startswith(f"{s} ") else f"{s} {x.status}" + (
                f": {x.detail}" if x.detail else "")
            out.append(text if len(text) <= width else text[:width - 3] + "...")
    return "\n".join(out)


def progress_line(r: KernelResult, n: int, total: int, elapsed: float) -> str:
    """One line per finished kernel and mode on stderr: looper's speedup, elapsed time, ETA."""
    lo = r.systems.get("looper")
    sp = r.speedup("looper", "gcc")
    what = f"{sp:.2f}x over gcc" if sp else (lo.status if lo else "?")
    eta = elapsed / n * (total - n)
    return (f"[{n}/{total}] {r.kernel} [{r.size}, {r.input}]: looper {what}  "
            f"(elapsed {elapsed / 60:.1f} min, ETA {eta / 60:.1f} min)")


def plot(results: list[KernelResult], systems: list[str], path, baseline: str = "gcc") -> None:
    """Speedup over `baseline`, one group of bars per kernel, log scale (LOOPer's Figure 4);
    one panel per input mode."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    modes = list(dict.fromkeys(r.input for r in results)) or ["scop"]
    per_mode = {m: [r for r in results if r.input == m] for m in modes}
    n = max(len(v) for v in per_mode.values()) if results else 1
    fig, axes = plt.subplots(len(modes), 1, figsize=(max(8, 0.55 * n * max(1, len(systems) - 1) / 1.5),
                                                     4.5 * len(modes)), squeeze=False)
    for ax, m in zip(axes[:, 0], modes):
        _bars(ax, per_mode[m], [s for s in systems if s != baseline and any(s in r.systems for r in per_mode[m])],
              baseline, m)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format=Path(path).suffix[1:] or "png")
    plt.close(fig)


def _bars(ax, results: list[KernelResult], shown: list[str], baseline: str, mode: str) -> None:
    labels = [r.kernel + (f" ({r.size})" if len({x.size for x in results}) > 1 else "") for r in results]
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
    ax.set_title(f"PolyBench 4.2.1 ({mode} input): speedup over {baseline}")
