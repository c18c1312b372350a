"""Time a few hand-written sequences of one PolyBench kernel against gcc, as the bench times systems:
PolyBench's own C file rewritten in place (as `looper apply` writes a record), PolyBench's harness,
fresh processes, interleaved rounds, means.  A diagnostic for choosing a transformation's space (which
tile sizes, which structure pays), not a benchmark of what looper writes: nothing is searched.

    python scripts/time_sequences.py heat-3d LARGE SEQUENCES.json --like RECORDS.jsonl [--repeat 8]

SEQUENCES.json maps a name to a sequence as records hold it (`[{"kind": "fuse", ...}, ...]`);
RECORDS.jsonl (a bench's `--record` file) gives the kernel's program key and machine: its first
record of KERNEL is copied with each sequence.  Outputs are not verified (`looper apply`'s check
is off): isl still checks every step.
"""
from __future__ import annotations

import argparse
import copy
import json
import tempfile
from dataclasses import dataclass

from looper.bench import native, peers, timing
from looper.bench.polybench import TIMED_DEFINES
from looper.runtime.compile import openmp_flags
from looper.tune.apply import apply


@dataclass
class _Timing:
    repeat: int
    threads: int
    timeout_factor: float = 20.0
    min_timeout: float = 60.0
    baseline_timeout: float = 900.0


@dataclass
class _Peers:
    threads: int
    polycc: str | None = None
    pluto_timeout: float = 300.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernel")
    ap.add_argument("size")
    ap.add_argument("sequences")
    ap.add_argument("--like", required=True, help="a records file with a record of the kernel")
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with open(args.like) as f:
        base = next((r for r in map(json.loads, f) if r["program"]["name"] == args.kernel), None)
    if base is None:
        ap.error(f"{args.like}: no record of {args.kernel}")
    tree = native.PolyBenchC.find(None)
    kernel = native.NativeKernel(tree, args.kernel, args.size)
    builds = {"gcc": native.build_native("gcc", kernel, TIMED_DEFINES, _Peers(args.threads))}
    with open(args.sequences) as f:
        sequences = json.load(f)
    for name, sequence in sequences.items():
        record = copy.deepcopy(base)
        record["sequence"], record["evaluator"] = sequence, "measure"
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            done = apply(f.name, str(kernel.c_file), args.size, includes=[str(tree.utilities)], any_machine=True,
                         threads=args.threads, speed_guard=False, verify=False)
        [k] = done.kernels
        print(f"{name}: {k.sequence}", flush=True)
        builds[name] = kernel.compile(name, done.source, peers.BASE_FLAGS + openmp_flags(done.source), "gcc",
                                      TIMED_DEFINES)
    results = timing.time_systems(builds, _Timing(args.repeat, args.threads), print)
    gcc = results["gcc"].mean
    for name, r in results.items():
        if r.mean:
            runs = " ".join(f"{t * 1e3:.0f}" for t in r.times)
            print(f"{name:24} {r.mean * 1e3:9.1f} ms  {gcc / r.mean:5.2f}x gcc  runs (ms) {runs}")


if __name__ == "__main__":
    main()
