"""A batch's kernels compiled in several translation units at once run as in one."""
from __future__ import annotations

import subprocess

from looper.codegen.harness import split_program_c
from looper.kernels import polybench_file
from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule
from looper.runtime.compile import compile_split
from looper.transforms.schedule import Schedule

SEQUENCES = [  # gemm: S0 is `C[i][j] *= beta` (rows 1, 3), S1 the product (rows 1, 3, 5: i, k, j)
    [],
    [{"kind": "interchange", "statements": ["S1"], "row_a": 3, "row_b": 5}],
    [{"kind": "parallelize", "loops": [[["S0", "S1"], 1]]}],
    [{"kind": "tile", "bands": [[["S1"], [3, 5], [8, 8]]]}],
    [{"kind": "unroll", "loops": [[["S1"], 5]], "factor": 4}],
]


def _run(binary, variant: int, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), str(variant), "1", mode], capture_output=True, text=True, timeout=120,
                          env={"OMP_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"})


def test_kernels_dealt_into_units_compute_what_one_unit_computes(tmp_path):
    """Five variants of gemm (the original, an interchange, a parallel loop, a tile, an unroll)
    dealt into three units: every unit has kernels, the first holds the table and prototypes of
    the others' kernels, and each variant's outputs, built in one unit or in three, equal the
    original's."""
    program = parse_file(polybench_file("gemm"), "MINI")
    deps = compute_dependences(program)
    variants = [Schedule.from_json(program, seq) for seq in SEQUENCES]
    assert all(check_schedule(deps, s) is None for s in variants)
    lowered = [v.lowered for v in variants]
    common, one = split_program_c(program, lowered)
    _, three = split_program_c(program, lowered, units=3)
    assert len(one) == 1 and len(three) == 3
    assert all("void kernel_" in unit for unit in three)
    assert "looper_kernels[]" in three[0] and not any("looper_kernels[]" in u for u in three[1:])
    assert "static void kernel_" not in "".join(three) and "static void kernel_" in one[0]
    assert "#pragma omp parallel" in "".join(three)  # the variants differ
    single, split = compile_split(common, one), compile_split(common, three)
    assert single.path != split.path
    reference = tmp_path / "original.out"
    assert _run(single.path, 0, f"save:{reference}").returncode == 0
    for k in range(len(variants)):
        for binary in (single, split):
            res = _run(binary.path, k, f"check:{reference}")
            assert res.returncode == 0, res.stderr
