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
