"""Digests that a refactoring must leave unchanged: the C of every recorded answer, the model's
predictions on the PolyBench kernels.

    python scripts/answers_digest.py                 # -> JSON on stdout
    python scripts/answers_digest.py --compare A.json B.json

(1) Every answer recorded in `benchmarks/results/**/*.json` with its transformations (model_bench and
search_bench rows: "transformations", "hybrid_transformations", "measure_transformations") is
replayed on a fresh parse of its kernel at its size and printed as the complete C program; the
SHA-256 of each program is recorded.  (2) A model-guided beam search (the shipped model, default
policy) runs on every kernel at MEDIUM; every candidate's description and predicted speedup
(rounded to 1e-6) and the answer are recorded.  `--compare` lists every key whose value differs.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KEYS = ("transformations", "hybrid_transformations", "measure_transformations")


def answer_digests() -> dict[str, str]:
    from looper.bench.polybench import kernel_file
    from looper.codegen.harness import program_c
    from looper.lang.parse import parse_file
    from looper.transforms.schedule import Schedule

    out: dict[str, str] = {}
    programs: dict = {}
    # keyed by file name, not campaign folder, and the kernel's path in the C's header comment named
    # as polybench:NAME: checkouts in other places, and the layouts before and after the kernels
    # became package data and the results campaign folders, give the same digests
    for path in sorted(glob.glob(str(ROOT / "benchmarks" / "results" / "**" / "*.json"), recursive=True)):
        data = json.loads(Path(path).read_text())
        size = data.get("size") if isinstance(data, dict) else None
        rows = data.get("rows", []) if isinstance(data, dict) else []
        for row in rows:
            for key in KEYS:
                steps = row.get(key)
                if not steps or not size:
                    continue
                kernel = row["kernel"].replace("_", "-")
                prog = programs.get((kernel, size))
                if prog is None:
                    prog = programs[(kernel, size)] = parse_file(kernel_file(kernel), size)
                sched = Schedule.from_json(prog, steps)
                text = program_c(prog, [sched.lowered], comments=[f"looper: {sched.describe()}"])
                text = text.replace(str(prog.path), f"polybench:{kernel}")
                out[f"{Path(path).name}:{kernel}:{key}"] = hashlib.sha256(text.encode()).hexdigest()[:16]
    return out


def model_digests(size: str) -> dict[str, str]:
    from looper.bench.polybench import ALL_KERNELS, kernel_file
    from looper.lang.parse import parse_file
    from looper.poly.deps import compute_dependences

    out: dict[str, str] = {}
    for kernel in ALL_KERNELS:
        prog = parse_file(kernel_file(kernel), size)
        deps = compute_dependences(prog)
        res = _model_search(prog, deps)
        cands = sorted(f"{e.description}={e.score.speedup:.6f}" for e in res.evaluated)
        out[f"model:{kernel}:answer"] = res.best.describe()
        out[f"model:{kernel}:candidates"] = hashlib.sha256("\n".join(cands).encode()).hexdigest()[:16]
        out[f"model:{kernel}:n"] = str(len(res.explored))
    return out


def _model_search(prog, deps):
    from looper.target import Target
    from looper.tune import TuneOptions, prepare
    return prepare(prog, TuneOptions(), Target.detect()).run(deps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    ap.add_argument("--size", default="MEDIUM")
    ap.add_argument("--skip-model", action="store_true")
    args = ap.parse_args()
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        for k in diff:
            print(f"{k}: {a.get(k)} -> {b.get(k)}")
        print(f"{len(a)} / {len(b)} keys, {len(diff)} differ")
        sys.exit(1 if diff else 0)
    out = answer_digests()
    if not args.skip_model:
        out.update(model_digests(args.size))
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
