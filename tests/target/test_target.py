"""The target: one value describing the machine, read once, passed down; tests pin one."""
from __future__ import annotations

import dataclasses
import json

import pytest

from helpers import TARGET, differential
from looper.codegen.harness import program_c
from looper.errors import LooperUsageError
from looper.lang.parse import parse_source
from looper.poly.deps import compute_dependences
from looper.search.candidates import generate
from looper.target import CacheLevel, Limits, Target
from looper.transforms import RegisterTile, Tile
from looper.transforms.schedule import Schedule

MATMUL = '''
SIZES = {"S": dict(M=24, N=64, K=20), "L": dict(M=1000, N=1200, K=1100)}
def kernel(M: int, N: int, K: int, A: f64[M, K], B: f64[K, N], C: f64[M, N]):
    for i in range(M):
        for k in range(K):
            for j in range(N):
                C[i, j] += A[i, k] * B[k, j]
OUTPUTS = ["C"]
'''


def test_a_target_round_trips_through_json(tmp_path):
    t = dataclasses.replace(TARGET, limits=Limits(2, 100.0, 200.0, 40.0, 8, None, None, 6e-5, 2e-6))
    path = tmp_path / "t.json"
    path.write_text(json.dumps(t.to_json()))
    assert Target.load(path) == t
    assert Target.load(path).limits.fork_seconds == 6e-5


def test_a_bad_target_file_is_a_usage_error(tmp_path):
    with pytest.raises(LooperUsageError, match="cannot read"):
        Target.load(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(LooperUsageError, match="not a target"):
        Target.load(bad)


def test_this_machine_is_detected_once_with_its_threads():
    here = Target.detect(threads=3)
    assert here.threads == 3 and here.vector_bytes in (16, 32, 64) and here.cores >= 1
    assert Target.detect(threads=3) is here  # read once
    assert here.cache_bytes(1) > 0 and here.lanes(8) == here.vector_bytes // 8


def test_cache_tiles_follow_the_target_s_caches():
    """The same band gets other tile sizes on a machine with other caches: sizes come from the
    target, never from the host."""
    p = parse_source(MATMUL, "matmul.py", "L")
    d = compute_dependences(p)
    s = Schedule(p)
    small = dataclasses.replace(TARGET, caches=(CacheLevel(1, "Data", 32 << 10), CacheLevel(2, "Unified", 256 << 10)))

    def sizes(target):
        return {c[0].bands[0].sizes for c in generate("tile", s, d, target, grown=True)
                if isinstance(c[0], Tile) and len(c[0].bands[0].rows) == 3}
    assert sizes(TARGET) and sizes(small) and sizes(TARGET) != sizes(small)


def test_register_tiles_are_made_for_the_target_s_vectors(tmp_path):
    """An AVX2 target's register tiles use 4-double vectors, an AVX-512 one's 8; the code
    generator prints the vectors the tile was made for, and both are exact on this host."""
    p = parse_source(MATMUL, "matmul.py", "S")
    d = compute_dependences(p)
    base = Schedule(p)
    avx2 = dataclasses.replace(TARGET, vector_bytes=32)
    found = {}
    for target in (TARGET, avx2):
        tiles = [c for c in generate("register", base, d, target, grown=True) if isinstance(c[-1], RegisterTile)]
        assert tiles, target.vector_bytes
        found[target.vector_bytes] = tiles
    lanes = {vb: {b.lanes for c in tiles for b in c[-1].blocks} for vb, tiles in found.items()}
    assert lanes == {64: {8}, 32: {4}}
    assert all(b.nr % b.lanes == 0 for tiles in found.values() for c in tiles for b in c[-1].blocks)
    chosen = [base.then(*found[32][0]), base.then(*found[64][0])]
    assert "vector_size(32)" in program_c(p, [chosen[0].lowered])
    assert differential(p, chosen, tmp_path) == []
