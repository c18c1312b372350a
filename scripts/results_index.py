"""Write benchmarks/results/INDEX.md from the results files' metadata and their campaigns'.

    python scripts/results_index.py            # rewrite INDEX.md
    python scripts/results_index.py --check    # exit 1 if INDEX.md is stale or a file is undescribed

Every results file lives in a campaign folder, `benchmarks/results/DATE-NAME/`, whose
`campaign.json` says what the campaign measured and, per run, the command, the commit of the code
that ran, the commit that recorded the files, the machine and a note.  A run is a file stem:
`bench-LARGE.json` and its `.txt` and `.csv` are one run.  What a JSON file records about itself
(size, kernels, evaluator, threads, rounds, budgets, peers, the measured peak) is read from the
file, so the index cannot disagree with it.  A file no campaign describes, a run without files, or
a run without a command, commit or machine is an error: the index lists every file or none.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
MANIFEST = "campaign.json"
INDEX = "INDEX.md"
REQUIRED = ("command", "commit", "recorded", "machine")


@dataclass(frozen=True)
class Run:
    """One run of a campaign: its files and what the manifest and the files say about it."""

    stem: str
    files: tuple[Path, ...]
    command: str
    commit: str
    recorded: str
    machine: str
    note: str
    settings: tuple[str, ...]


@dataclass(frozen=True)
class Campaign:
    """A folder of runs that answer one question under one set of conditions."""

    name: str
    title: str
    about: str
    runs: tuple[Run, ...]


def _bench_settings(data: dict) -> list[str]:
    """`looper bench polybench --json`: the `meta` block and the kernels it holds."""
    meta, results = data["meta"], data.get("results", [])
    sizes = sorted({r["size"] for r in results if "size" in r})
    n = len({r["kernel"] for r in results})
    out = [f"size {', '.join(sizes)}", f"{n} kernel{'s' if n != 1 else ''}",
           f"evaluator {meta.get('evaluator')}", f"{meta.get('threads')} threads",
           f"{meta.get('repeat')} interleaved rounds"]
    if meta.get("inputs"):
        out.append(f"input {', '.join(meta['inputs'])}")
    if meta.get("compare"):
        out.append(f"peers {', '.join(meta['compare'])}")
    for key, label in (("search_repeats", "timed runs per candidate: {:g}"),
                       ("structure_budget", "structure budget {:g} s"),
                       ("search_budget", "search budget {:g} s"), ("step_proxy", "step proxy {:g}")):
        if meta.get(key) is not None:
            out.append(label.format(meta[key]))
    proxy = meta.get("proxy") or {}
    for key, label in (("steps", "step proxy"), ("sizes", "size proxy")):
        if proxy.get(key):
            out.append(f"{label} {proxy[key]}")
    if meta.get("omp_envs"):
        out.append(f"OpenMP {'; '.join(meta['omp_envs'])}")
    peak = (meta.get("limits") or {}).get("peak_double_gflops")
    if peak:
        out.append(f"measured FMA peak {peak:.0f} GFLOP/s double")
    return out


def _rows_settings(data: dict) -> list[str]:
    """The benchmarks/*.py JSONs: a size, rows, and whichever knobs the script recorded."""
    out = [f"size {data['size']}"] if "size" in data else []
    out.append(f"{len(data['rows'])} rows")
    for key, label in (("beam", "beam"), ("threads", "threads"), ("rounds", "interleaved rounds")):
        if key in data:
            out.append(f"{label} {data[key]}")
    if "max_affine" in data:
        out.append(f"max-affine {data['max_affine'] if data['max_affine'] is not None else 'the model default'}")
    if data.get("omp_env"):
        out.append(f"OpenMP {data['omp_env']}")
    return out


def _machine_settings(data: dict) -> list[str]:
    """`looper machine --json` (limits per thread count) or `--target-json` (one target's limits):
    the compiler and the limits at the most threads measured."""
    limits = data["limits"] if isinstance(data["limits"], list) else [data["limits"]]
    top = max(limits, key=lambda lim: lim["threads"])
    return [data["compiler"], f"{top['threads']} threads: FMA peak {top['peak_double']:.0f} GFLOP/s double, "
            f"triad {top['bandwidth']:.1f} GB/s, DGEMM {top['dgemm']:.0f} GFLOP/s"]


def file_settings(path: Path) -> list[str]:
    """What a results file says about its own run (JSON files; other formats say nothing here)."""
    if path.suffix != ".json":
        return []
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        return []
    if "meta" in data:
        out = _bench_settings(data)
    elif "rows" in data:
        out = _rows_settings(data)
    elif "limits" in data and "compiler" in data:
        out = _machine_settings(data)
    else:
        return []
    cpu = (data.get("meta") or data).get("cpu")
    return out + ([f"cpu {cpu}"] if cpu else [])


def load_campaign(folder: Path, errors: list[str]) -> Campaign | None:
    """The campaign of `folder`, its runs checked against the files there."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        errors.append(f"{folder.name}: no {MANIFEST}")
        return None
    spec = json.loads(manifest.read_text())
    files: dict[str, list[Path]] = {}
    for path in sorted(folder.iterdir()):
        if path.name != MANIFEST:
            files.setdefault(path.stem, []).append(path)
    runs = []
    for stem, entry in spec.get("runs", {}).items():
        fields = {k: entry.get(k, spec.get(k)) for k in REQUIRED}
        missing = [k for k, v in fields.items() if not v]
        if missing or stem not in files:
            errors.append(f"{folder.name}/{stem}: " + (f"no {', '.join(missing)}" if missing else "no such files"))
            continue
        settings = [s for p in files[stem] for s in file_settings(p)]
        runs.append(Run(stem, tuple(files[stem]), note=entry.get("note", ""),
                        settings=tuple(dict.fromkeys(settings + entry.get("settings", []))), **fields))
    for stem in sorted(set(files) - set(spec.get("runs", {}))):
        errors.append(f"{folder.name}: {', '.join(p.name for p in files[stem])} described by no run of {MANIFEST}")
    return Campaign(folder.name, spec.get("title", ""), spec.get("about", ""), tuple(runs))


def load_all(results: Path) -> tuple[list[Campaign], list[str]]:
    """Every campaign under `results`, and every reason the index would be incomplete."""
    errors: list[str] = []
    for path in sorted(results.iterdir()):
        if path.is_file() and path.name != INDEX:
            errors.append(f"{path.name}: not in a campaign folder")
    campaigns = [c for d in sorted(results.iterdir()) if d.is_dir()
                 if (c := load_campaign(d, errors)) is not None]
    return campaigns, errors


def render(campaigns: list[Campaign]) -> str:
    """INDEX.md: per campaign its question, then per run its files, command, commit, machine, settings."""
    n = sum(len(r.files) for c in campaigns for r in c.runs)
    lines = ["# Results index", "",
             f"Generated by `scripts/results_index.py` from each campaign's `{MANIFEST}` and the files' own",
             "metadata; do not edit by hand.  `commit` is the code that ran (as the recording commit's message",
             "names it, else the recording commit's parent); `recorded` is the commit that added the files.",
             "How to read the numbers, and which results were removed as superseded: `docs/results.md`.", "",
             f"{len(campaigns)} campaigns, {sum(len(c.runs) for c in campaigns)} runs, {n} files.", ""]
    for c in campaigns:
        lines += [f"## {c.name}: {c.title}", "", c.about, ""]
        for r in c.runs:
            lines += [f"### {r.stem}", "",
                      f"- files: {', '.join(f'`{p.name}`' for p in r.files)}",
                      f"- command: `{r.command}`",
                      f"- commit: `{r.commit}` (recorded in `{r.recorded}`)",
                      f"- machine: {r.machine}"]
            if r.settings:
                lines.append(f"- settings: {'; '.join(r.settings)}")
            if r.note:
                lines.append(f"- note: {r.note}")
            lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if INDEX.md differs or is incomplete")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the results directory")
    args = ap.parse_args(argv)
    campaigns, errors = load_all(args.results)
    for e in errors:
        print(f"results_index: {e}", file=sys.stderr)
    if errors:
        return 1
    text = render(campaigns)
    index = args.results / INDEX
    if args.check:
        if not index.is_file() or index.read_text() != text:
            print(f"results_index: {index} is out of date (run scripts/results_index.py)", file=sys.stderr)
            return 1
        return 0
    index.write_text(text)
    print(f"wrote {index}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
