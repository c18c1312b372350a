"""The small dataset the tests train on: the first 40 programs of the shipped dataset.

    python scripts/make_tiny_dataset.py [data/synth-v2] [tests/data/tiny-points.parquet]
"""
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.compute as pc

src = sys.argv[1] if len(sys.argv) > 1 else "data/synth-v2"
dst = sys.argv[2] if len(sys.argv) > 2 else "tests/data/tiny-points.parquet"
from pathlib import Path

table = pa.concat_tables([pq.read_table(p) for p in sorted(Path(src).glob("points-*.parquet"))],
                        promote_options="default")
table = table.filter(pc.less(table.column("seed"), 40))
pq.write_table(table, dst, compression="zstd")
print(f"{table.num_rows} points from {len(set(table.column('program').to_pylist()))} programs -> {dst}")
