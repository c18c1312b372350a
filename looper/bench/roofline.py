"""The roofline plot: where each kernel stands, for looper and each peer, against the machine.

x is a kernel's arithmetic intensity, its exact flops over its compulsory traffic (every array
element it touches read once, every element it writes written once: `poly/flops.py`), a
property of the kernel, so all systems of one kernel share a vertical line; y is each system's
GFLOP/s.  The roofs are the measured limits on the run's threads: the FMA peak (flat) and the
triad bandwidth times the intensity (slanted).  A point far below both roofs leaves speed on the
table; a point above the slanted roof moves less than the compulsory traffic through memory
(the data fit in the caches).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..fileio import atomic_path
from ..target.limits import Limits
from .results import KernelResult

SUBTITLE = ("x: flops / compulsory bytes (every array element the kernel touches read once, every written "
            "element written once)\nroofs: FMA peak and STREAM triad bandwidth measured on {threads} thread(s)")


MODE_MARKERS = {"scop": "o", "native": "^"}


@dataclass(frozen=True)
class Point:
    """One system's run of one kernel on the roofline."""

    kernel: str
    system: str
    input: str  # scop | native
    intensity: float
    gflops: float


def points(results: list[KernelResult]) -> list[Point]:
    """Every timed system of every kernel with flops."""
    return [Point(r.kernel, s, r.input, r.intensity, x.gflops)
            for r in results if r.intensity is not None for s, x in r.systems.items() if x.gflops]


def plot_roofline(results: list[KernelResult], limits: Limits, path: str | Path, title: str | None = None) -> None:
    """Write the roofline of `results` under `limits` to `path` (PNG, matplotlib's Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pts = points(results)
    fig, ax = plt.subplots(figsize=(12, 6.5))
    xs = [p.intensity for p in pts] or [limits.peak_double / limits.bandwidth]
    lo, hi = min(xs + [0.1]) / 2, max(xs + [limits.peak_single / limits.bandwidth]) * 2
    _roofs(ax, limits, lo, hi, any(r.precision == "single" for r in results))
    _scatter(ax, pts)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (flop/byte of compulsory traffic)")
    ax.set_ylabel("GFLOP/s")
    fig.suptitle(title or "PolyBench 4.2.1 on the roofline", fontsize=12)
    ax.set_title(SUBTITLE.format(threads=limits.threads), fontsize=8)
    ax.grid(True, which="both", linewidth=0.3, alpha=0.5)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: it hid kernels
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=130, format=Path(path).suffix[1:] or "png")
    plt.close(fig)


def _scatter(ax, pts: list[Point]) -> None:
    """One colour per system, one marker per input mode (circles: scop, triangles: native);
    each kernel named once, beside looper's point."""
    both = len({p.input for p in pts}) > 1
    colours = {s: f"C{k % 10}" for k, s in enumerate(dict.fromkeys(p.system for p in pts))}
    for (system, mode) in dict.fromkeys((p.system, p.input) for p in pts):
        mine = [p for p in pts if (p.system, p.input) == (system, mode)]
        ax.scatter([p.intensity for p in mine], [p.gflops for p in mine], s=30, alpha=0.85, zorder=3,
                   color=colours[system], marker=MODE_MARKERS.get(mode, "s"),
                   label=f"{system} ({mode})" if both else system)
    named: set[str] = set()
    for p in pts:
        if p.system == "looper" and p.kernel not in named:
            named.add(p.kernel)
            ax.annotate(p.kernel, (p.intensity, p.gflops), fontsize=6, xytext=(3, 2), textcoords="offset points")


def _roofs(ax, limits: Limits, lo: float, hi: float, single: bool) -> None:
    """min(peak, bandwidth x intensity), for double (and single when a kernel is single)."""
    import numpy as np
    x = np.geomspace(lo, hi, 200)
    ax.plot(x, np.minimum(limits.peak_double, limits.bandwidth * x), color="black", linewidth=1.5,
            label=f"roof: {limits.peak_double:.0f} GFLOP/s double, {limits.bandwidth:.0f} GB/s")
    if single:
        ax.plot(x, np.minimum(limits.peak_single, limits.bandwidth * x), color="gray", linestyle="--",
                linewidth=1.0, label=f"roof: {limits.peak_single:.0f} GFLOP/s single")
