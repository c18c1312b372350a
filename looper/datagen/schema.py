"""A data point's columns: raw facts (program, sizes, sequence, times, machine, how it was timed),
never features, so features can change without measuring again."""
from __future__ import annotations

import pyarrow as pa

SCHEMA = pa.schema([
    ("program", pa.string()),
    ("seed", pa.int64()),
    ("source", pa.string()),
    ("size", pa.string()),
    ("sizes", pa.string()),  # JSON
    ("sequence", pa.string()),  # JSON list of transformations
    ("description", pa.string()),
    ("level", pa.string()),
    ("legal", pa.bool_()),
    ("reason", pa.string()),  # why isl rejected it, or why it failed
    ("status", pa.string()),  # ok | slow | timeout | crash | wrong | compile-error | illegal
    ("times", pa.list_(pa.float64())),
    ("baseline_times", pa.list_(pa.float64())),
    ("speedup", pa.float64()),
    ("spread", pa.float64()),  # (max - min) / median of the repeats
    ("cpu", pa.string()),  # `target.host.cpu_id` (name, family, model, stepping); the name alone before
    # the machine's caches and its measured limits (`looper machine`: peaks, bandwidth, first
    # parallel region) as JSON, or no limits when none were measured; absent in older parts
    ("machine", pa.string()),
    ("compiler", pa.string()),
    ("flags", pa.string()),
    ("threads", pa.int64()),
    ("loadavg", pa.float64()),
    ("created", pa.float64()),
    ("harness", pa.int64()),  # codegen.harness.HARNESS_VERSION (absent in parts written before 2)
    # how the times were taken: OpenMP settings added; protocol; harness (`ExecutionEvaluator.environment`;
    # absent in parts written before it was recorded: `LEGACY_ENVIRONMENT`)
    ("environment", pa.string()),
])
# what every part written before points recorded their environment was timed under
LEGACY_ENVIRONMENT = "OMP_PROC_BIND=true OMP_PLACES=cores OMP_WAIT_POLICY=active; warm"


def timing_of(environment: str | None) -> str:
    """The part of a point's environment that makes its times comparable with others': the
    OpenMP settings and the protocol (not the harness version)."""
    return "; ".join((environment or LEGACY_ENVIRONMENT).split("; ")[:2])


def target_of(machine: str | None, threads: int):
    """The machine a point was timed on, as a `Target` (its caches and measured limits, from the
    point's `machine` column), or `costmodel.features.reference_target` for a point that recorded
    none: the cost terms of its candidates are computed on it."""
    import json
    import re

    from ..costmodel.features import reference_target
    from ..target import Target
    from ..target.caches import CacheLevel
    from ..target.limits import Limits
    if not machine:
        return reference_target(threads)
    facts = json.loads(machine)
    caches = []
    for text in facts.get("caches") or ():
        m = re.match(r"L(\d)([di]?) ([\d.]+) (B|KiB|MiB|GiB)", text)
        if m:
            scale = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(4)]
            kind = {"d": "Data", "i": "Instruction"}.get(m.group(2), "Unified")
            caches.append(CacheLevel(int(m.group(1)), kind, int(float(m.group(3)) * scale)))
    limits = Limits.from_json(facts["limits"]) if facts.get("limits") else None
    lanes = limits.lanes_double if limits is not None and limits.lanes_double else 8
    return Target(str(facts.get("cpu", "unknown")), 8 * lanes, tuple(caches), threads, threads, limits=limits)
