"""Markdown tables of a `looper bench polybench --input native --ceiling` results file: the
default's speedup over gcc beside the peers', the harness effect apart, the measuring search's
answer as a ceiling, search seconds and the default's GFLOP/s; and, when the bench ran
`--variant`s (another model, the model alone), their columns beside the default's, with the
default's speedup over each.  What docs/results.md and the README show is printed by this script
from the committed JSON.

    python scripts/bench_tables.py benchmarks/results/2026-11-26-default-vs-peers-native/bench-MEDIUM.json

Several files (one size, kernels run apart) make one table, each kernel from the file that ran it
(a kernel in several files: the last file's run, a re-run replacing an older one); every kernel's
ratios come from its own interleaved rounds.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

PEERS = ("pluto", "polly")
CEILING = "looper-measure"


def geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def speedups(row: dict) -> dict[str, float | None]:
    """Each system's speedup over gcc on the original file, by the means of the same rounds."""
    systems = row["systems"]
    gcc = systems["gcc"].get("mean")
    out = {}
    for name, s in systems.items():
        mean = s.get("mean") if s.get("status") == "ok" else None
        out[name] = gcc / mean if gcc and mean else None
    return out


def _x(v: float | None) -> str:
    return f"{v:.2f}x" if v else "-"


def tables(data: dict, ceiling: str = CEILING) -> str:
    """The tables; `ceiling` is the column of the measuring search's answers (a `--variant
    NAME:records=FILE` replaying them is `looper-NAME`)."""
    rows = data["results"]
    lines = []
    sp = {r["kernel"]: speedups(r) for r in rows}
    names = [r["kernel"] for r in rows]

    def col(system: str) -> list[float | None]:
        return [sp[k].get(system) for k in names]

    summary = [("looper (default)", "looper"), ("Pluto", "pluto"), ("Polly", "polly"),
               ("looper --evaluator measure (ceiling)", ceiling)]
    lines += ["| system | kernels right | over gcc, geomean | median | below 0.95x gcc | fastest of looper, Pluto, Polly |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for label, key in summary:
        xs = [x for x in col(key) if x]
        if not xs:
            continue
        below = [f"{k} {sp[k][key]:.2f}x" for k in names if sp[k].get(key) and sp[k][key] < 0.95]
        wins = "" if key == ceiling else str(sum(
            1 for k in names if sp[k].get(key) and sp[k][key] == max(v for s, v in sp[k].items()
                                                                    if s in ("looper",) + PEERS and v)))
        lines.append(f"| {label} | {len(xs)} | {geomean(xs):.2f}x | {statistics.median(xs):.2f}x | "
                     f"{len(below)}{' (' + ', '.join(below) + ')' if below else ''} | {wins} |")
    harness = [x for x in col("original") if x]
    lines += ["", f"Harness effect (looper's own harness around the untransformed kernel, over gcc on "
                  f"PolyBench's file; a diagnostic, not in any speedup): geomean {geomean(harness):.2f}x.", ""]
    systems = ["looper"] + sorted({n for r in rows for n in r["systems"] if n.startswith("looper-") and n != ceiling})
    for name in systems:
        low = sorted((sp[k][name] / max(sp[k][ceiling], 1.0), k) for k in names
                     if sp[k].get(name) and sp[k].get(ceiling))
        if low:
            under = [k for v, k in low if v < 0.75]
            lines.append(f"{'Default' if name == 'looper' else name} over the better of the ceiling's answer and the "
                         f"original ({len(low)} kernels): geomean {geomean([v for v, _ in low]):.3f}x, lowest "
                         + ", ".join(f"{k} {v:.2f}x" for v, k in low[:4])
                         + f"; below 0.75x: {len(under)}{' (' + ', '.join(under) + ')' if under else ''}.")
    secs = {key: [r["systems"][key].get("search_seconds") for r in rows if r["systems"].get(key)]
            for key in ("looper", ceiling)}
    d, m = [s for s in secs["looper"] if s], [s for s in secs[ceiling] if s]
    # a ceiling replayed from records (`--variant NAME:records=FILE`) did not search: its seconds
    # are the replay's checks
    replayed = "records" in data.get("meta", {}).get("variants", {}).get(ceiling, {})
    what = "ceiling's replay and checks" if replayed else "ceiling"
    if d:
        lines.append(f"Search seconds per kernel: default median {statistics.median(d):.1f}, total {sum(d):.0f}"
                     + (f"; {what} median {statistics.median(m):.1f}, total {sum(m):.0f}" if m else "") + ".")
    lines += split_seconds(rows)
    lines += ["", "| kernel | gcc (ms) | harness | looper | Pluto | Polly | ceiling | looper GFLOP/s | looper search (s) "
                  f"| {'ceiling replay' if replayed else 'ceiling search'} (s) | looper's answer |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        k, s = r["kernel"], r["systems"]
        lo = s.get("looper", {})
        gf = f"{lo['gflops']:.1f}" if lo.get("gflops") else "-"
        seq = (lo.get("sequence") or "original").replace("|", "/")
        seq = seq if len(seq) <= 90 else seq[:90] + "..."
        cells = [k, f"{s['gcc']['mean'] * 1e3:.3f}", *(_x(sp[k].get(n)) for n in ("original", "looper", *PEERS, ceiling)),
                 gf, f"{lo.get('search_seconds') or 0:.1f}", f"{s.get(ceiling, {}).get('search_seconds') or 0:.1f}",
                 f"`{seq}`"]
        lines.append("| " + " | ".join(cells) + " |")
    variants = systems[1:]
    if variants:
        lines += ["", variant_table(rows, sp, variants)]
    return "\n".join(lines)


def split_seconds(rows: list[dict]) -> list[str]:
    """Per looper system whose runs split their seconds: the search alone (without verification
    and the speed guard) and the checks, median, total and the longest kernels."""
    out = []
    names = sorted({n for r in rows for n in r["systems"] if n == "looper" or n.startswith("looper-")})
    for name in names:
        xs = [(r["systems"][name]["search_seconds"] - r["systems"][name]["check_seconds"],
               r["systems"][name]["check_seconds"], r["kernel"]) for r in rows
              if r["systems"].get(name, {}).get("check_seconds") is not None
              and r["systems"][name].get("search_seconds") is not None]
        if not xs:
            continue
        search = [s for s, _, _ in xs]
        longest = sorted(xs, reverse=True)[:5]
        out.append(f"{name}: search without the checks median {statistics.median(search):.1f} s, total "
                   f"{sum(search):.0f} s (longest: " + ", ".join(f"{k} {s:.1f}" for s, _, k in longest)
                   + f"); verification and speed guard median {statistics.median(c for _, c, _ in xs):.1f} s, "
                   f"total {sum(c for _, c, _ in xs):.0f} s.")
    return out


def variant_table(rows: list[dict], sp: dict[str, dict[str, float | None]], variants: list[str]) -> str:
    """The default beside each `--variant` (speedup over gcc, search seconds), the variant over
    the default per kernel, and their geomeans: every ratio from one kernel's own rounds."""
    def cell(s: dict, k: str, name: str) -> str:
        return f"{_x(sp[k].get(name))}, {s.get(name, {}).get('search_seconds') or 0:.0f} s"

    head = ["kernel", "gcc (ms)", "looper"] + variants + [f"{v} / looper" for v in variants]
    lines = ["| " + " | ".join(head) + " |", "| --- | ---: |" + " --- |" * (1 + len(variants))
             + " ---: |" * len(variants)]
    over: dict[str, list[float]] = {v: [] for v in variants}
    for r in rows:
        k, s = r["kernel"], r["systems"]
        ratios = []
        for v in variants:
            a, b = sp[k].get(v), sp[k].get("looper")
            ratios.append(_x(a / b) if a and b else "-")
            if a and b:
                over[v].append(a / b)
        lines.append("| " + " | ".join([k, f"{s['gcc']['mean'] * 1e3:.3f}", cell(s, k, "looper"),
                                        *(cell(s, k, v) for v in variants), *ratios]) + " |")
    gm = [f"**{geomean(over[v]):.3f}x**" if over[v] else "-" for v in variants]
    lines.append("| geomean | | " + " | ".join(
        [_x(geomean([x for x in (sp[r['kernel']].get(n) for r in rows) if x])) for n in ["looper"] + variants])
        + " | " + " | ".join(gm) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, nargs="+")
    ap.add_argument("--ceiling", default=CEILING, metavar="SYSTEM",
                    help=f"the column of the ceiling's answers (default {CEILING}; a variant replaying recorded "
                         "ones: looper-NAME)")
    args = ap.parse_args()
    files = [json.loads(p.read_text()) for p in args.results]
    latest = {(r["kernel"], r["size"]): r for f in files for r in f["results"]}
    print(tables({"results": list(latest.values())}, args.ceiling))


if __name__ == "__main__":
    main()
