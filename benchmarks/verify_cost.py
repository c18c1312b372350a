"""What checking an answer costs, and what it changed: `looper optimize` on PolyBench kernels with
verification and the speed guard (the default) and without them (`--no-verify --no-speed-guard`).

    python benchmarks/verify_cost.py --size MEDIUM --json benchmarks/results/2026-11-25-verify-cost/verify-MEDIUM.json

Per kernel, both runs happen in fresh processes (`python -m looper.cli optimize ... --json`), the
checked one first and the unchecked one right after it, with the same memo and model, so the
difference of their wall times is what verification and the guard add.  Reported per kernel:
both wall times, the added seconds, verification's and the guard's own seconds (from the JSON),
where it was verified, the guard's timing, and any candidate the checks passed over.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from looper.bench.polybench import ALL_KERNELS, kernel_file  # noqa: E402
from looper.target.host import load_average  # noqa: E402


def optimize(path: Path, size: str, checked: bool, out: Path) -> tuple[float, dict, str]:
    """One `looper optimize` in a fresh process: wall seconds, its JSON, its printout."""
    cmd = [sys.executable, "-m", "looper.cli", "optimize", str(path), "--size", size, "-o", str(out.with_suffix(".c")),
           "--json", str(out)]
    if not checked:
        cmd += ["--no-verify", "--no-speed-guard"]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError(f"{path.name}: exit {res.returncode}: {res.stderr.strip()[-300:]}")
    return wall, json.loads(out.read_text()), res.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="MEDIUM")
    ap.add_argument("--kernels", default=None, help="comma-separated PolyBench kernels (default: all 30)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    names = [k.strip() for k in args.kernels.split(",")] if args.kernels else ALL_KERNELS
    rows = []
    print(f"# looper optimize at {args.size}: checked (default) against --no-verify --no-speed-guard; "
          f"load {load_average():.2f}")
    print(f"{'kernel':15} {'checked s':>9} {'bare s':>7} {'added':>6} {'verify':>6} {'guard':>6}  what the checks said")
    with tempfile.TemporaryDirectory(prefix="looper-vcost-") as tmp:
        for name in names:
            path = kernel_file(name)
            on, report, printed = optimize(path, args.size, True, Path(tmp) / f"{name}-on.json")
            off, _, _ = optimize(path, args.size, False, Path(tmp) / f"{name}-off.json")
            check = report.get("verification") or {}
            guard = check.get("speed_guard") or {}
            said = [ln.strip() for ln in printed.splitlines()
                    if ln.strip().startswith(("verified", "not verified", "speed guard", "not written", "fell back",
                                              "the answer is the original"))]
            row = {"kernel": name, "checked_seconds": on, "bare_seconds": off, "added_seconds": on - off,
                   "verify_seconds": check.get("verify_seconds"), "guard_seconds": check.get("guard_seconds"),
                   "verified": check.get("verified"), "size": check.get("size"),
                   "guard_speedup": guard.get("speedup"), "rejected": check.get("rejected", []), "said": said,
                   "sequence": report.get("sequence")}
            rows.append(row)
            print(f"{name:15} {on:9.1f} {off:7.1f} {on - off:6.1f} {row['verify_seconds'] or 0:6.1f} "
                  f"{row['guard_seconds'] or 0:6.1f}  {' | '.join(said)}", flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps({"size": args.size, "rows": rows}, indent=1))
    added = [r["added_seconds"] for r in rows]
    print(f"\nadded time: median {statistics.median(added):.2f} s, max {max(added):.2f} s over {len(rows)} kernels; "
          f"verified: {sum(1 for r in rows if r['verified'])}; the original written: "
          f"{sum(1 for r in rows if r['size'] == 'original')}; candidates passed over: "
          f"{sum(len(r['rejected']) for r in rows)}")


if __name__ == "__main__":
    main()
