"""PolyBench/C 4.2.1 as users have it: all 30 C files, unmodified, through `looper optimize`
(model evaluator), then built with PolyBench's own harness.  The rewritten file must dump exactly
what the original dumps, and be byte-identical to it outside the scop regions.

Needs the sources in `../shared/polybench-c` (or `$LOOPER_SHARED/polybench-c`); skipped without.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import islpy as isl
import pytest

from conftest import KERNELS_DIR, SHARED
from helpers import every_region_rewritten

PB = SHARED / "polybench-c"
pytestmark = pytest.mark.skipif(not (PB / "utilities" / "polybench.c").exists(),
                                reason=f"PolyBench/C sources not found in {PB} (set LOOPER_SHARED)")
SOURCES = sorted((PB / "utilities" / "benchmark_list").read_text().split()) if PB.exists() else []
NAMES = {Path(s).stem: s for s in SOURCES}
CFLAGS = ["-O2", "-fopenmp", "-ffp-contract=off", "-DPOLYBENCH_DUMP_ARRAYS"]
REGION = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+scop[ \t]*\n.*?^[ \t]*#[ \t]*pragma[ \t]+endscop[ \t]*\n",
                    re.M | re.S)
_ANSWERS: dict = {}


@pytest.fixture(scope="module")
def model():
    from looper.costmodel.store import load_model
    return load_model(None)


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    """PolyBench's polybench.c, compiled once per dataset."""
    out = tmp_path_factory.mktemp("polybench")
    objects = {}

    def get(size: str) -> Path:
        if size not in objects:
            obj = out / f"polybench-{size}.o"
            subprocess.run(["gcc", *CFLAGS, f"-I{PB / 'utilities'}", f"-D{size}_DATASET", "-c",
                            str(PB / "utilities" / "polybench.c"), "-o", str(obj)], check=True)
            objects[size] = obj
        return objects[size]

    return get


def optimized(name: str, size: str, model):
    """looper's answer for one kernel (searched once per kernel and size)."""
    import looper
    if (name, size) not in _ANSWERS:
        _ANSWERS[(name, size)] = looper.optimize(PB / NAMES[name], size, includes=[str(PB / "utilities")],
                                                 model=model)
    return _ANSWERS[(name, size)]


def build_and_dump(source: Path, headers: Path, size: str, harness, tmp: Path) -> str:
    exe = tmp / (source.stem + ".exe")
    res = subprocess.run(["gcc", *CFLAGS, f"-I{PB / 'utilities'}", f"-I{headers}", f"-D{size}_DATASET",
                          str(source), str(harness(size)), "-o", str(exe), "-lm"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, OMP_NUM_THREADS="2"))
    assert run.returncode == 0, run.stderr[-500:]
    assert "begin dump" in run.stderr
    return run.stderr


def check(name: str, size: str, model, harness, tmp_path: Path, strict: bool) -> None:
    original = PB / NAMES[name]
    answer = optimized(name, size, model)
    out = tmp_path / f"{name}.looper.c"  # it includes "gemm.h": built with -I the original's directory
    answer.write(out)
    expected = build_and_dump(original, original.parent, size, harness, tmp_path)
    got = build_and_dump(out, original.parent, size, harness, tmp_path)
    assert got == expected, f"{name} [{size}] {[k.sequence for k in answer.kernels]}: dumps differ"
    for scop, k in zip(answer.cfile.scops, answer.kernels):
        # a region whose answer is the original schedule is left as the user wrote it
        assert (scop.text in answer.source) == (k.sequence == "original"), (name, k.sequence)
    if strict:
        # the tuned branch, not the fallback, must be what ran: trap in the fallback.  Regions
        # answered by the original schedule are written from it here, so that every region's
        # rewriting is exercised
        text = every_region_rewritten(answer)
        for scop in answer.cfile.scops:
            assert text.count("} else {\n" + scop.inner) == 1
            text = text.replace("} else {\n" + scop.inner, "} else {\n__builtin_trap();\n")
        trapped = tmp_path / f"{name}.strict.c"
        trapped.write_bytes(text.encode("utf-8", "surrogateescape"))
        assert build_and_dump(trapped, original.parent, size, harness, tmp_path) == expected


@pytest.mark.parametrize("name", sorted(NAMES))
def test_mini_dumps_equal(name, model, harness, tmp_path):
    check(name, "MINI", model, harness, tmp_path, strict=True)


@pytest.mark.slow  # about 90 s for the 30 kernels
@pytest.mark.parametrize("name", sorted(NAMES))
def test_small_dumps_equal(name, model, harness, tmp_path):
    check(name, "SMALL", model, harness, tmp_path, strict=True)


@pytest.mark.parametrize("name", sorted(NAMES))
def test_bytes_outside_the_scops_unchanged(name, model):
    """Split the original at its scop regions (found here independently of looper's parser): the
    output must be the same pieces, in order, with only the regions between them replaced (or,
    where the answer is the original schedule, kept)."""
    original = (PB / NAMES[name]).read_bytes()
    answer = optimized(name, "MINI", model)
    out = answer.source.encode("utf-8", "surrogateescape")
    text = original.decode("latin-1")
    regions = list(REGION.finditer(text))
    assert regions, name
    pieces, pos = [], 0
    for m in regions:
        pieces.append(original[pos:m.start()])
        pos = m.end()
    pieces.append(original[pos:])
    assert out.startswith(pieces[0]) and out.endswith(pieces[-1])
    at = len(pieces[0])
    for piece in pieces[1:-1]:
        found = out.find(piece, at)
        assert found >= at, f"{name}: a piece between scops is missing or changed"
        at = found + len(piece)
    kept = sum(k.sequence == "original" for k in answer.kernels)
    assert out.count(b"#pragma scop") == out.count(b"#pragma endscop") == kept


def test_same_polyhedral_statements_as_the_python_kernels():
    """The C front end and the Python front end build the same statements for the 30 kernels:
    equal iteration domains, access relations and textual order.  Two kernels differ as written:
    correlation.c declares `eps = 0.1` outside its scop (correlation.py assigns it in the kernel),
    and nussinov.c's max_score macro reads each operand twice (a ternary), nussinov.py's max once."""
    from looper.lang.c.cfile import cpp_flags_for, parse_c_file
    from looper.lang.parse import parse_file
    for name, src in NAMES.items():
        scop = parse_c_file(PB / src, cpp_flags_for("MINI", includes=(str(PB / "utilities"),))).scops[0]
        c = scop.program
        py = parse_file(KERNELS_DIR / f"{name.replace('-', '_')}.py", "MINI")
        cs, ps = list(c.statements), list(py.statements)
        if name == "correlation":
            ps = [s for s in ps if s.body.target.array != "eps"]
        assert len(cs) == len(ps), name
        for a, b in zip(cs, ps):
            assert a.depth == b.depth and a.steps == b.steps, (name, a.name)
            if name != "correlation":
                assert a.beta == b.beta and a.domain.is_equal(b.domain), (name, a.name)
            if name == "nussinov":
                continue
            users = [scop.user_names.get(x.array, x.array) for x in a.accesses]
            assert users == [y.array for y in b.accesses], (name, a.name)
            for x, y in zip(a.accesses, b.accesses):
                if name != "correlation":
                    rel = x.relation.set_tuple_name(isl.dim_type.out, y.array)  # durbin's r is looper_r
                    assert rel.is_equal(y.relation), (name, a.name, x.array)
        assert scop.size_vars == {k.lower(): v for k, v in py.sizes.items() if k.lower() in scop.size_vars}, name
