"""`looper optimize` in place on the C programs of benchmarks/programs/c: BLAS-style dgemm on
pointers with leading dimensions, a stencil on malloc'ed flat arrays, a 3-D tensor contraction on
A[(i*n + j)*m + k], and each one's array-parameter twin.

Each is optimized at small sizes with the model evaluator (nothing is compiled during the search)
and built as written; every run must print exactly what the original prints.  The same answer with
every region rewritten (looper leaves a region whose answer is the original schedule as written:
with this machine's measured limits, which a bench in the same session may have kept, the model can
well answer that) must print it too: at the sizes it was tuned for (looper's code runs), at other
sizes (the original runs), and with aliasing arrays, the same pointer passed twice or overlapping
slices of one buffer (the original runs: the overlap test sends them there, which the tuned-code
marker checks).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from looper.cli import main

from conftest import ROOT
from helpers import TUNED_MARK, mark_tuned_code, model_answer_rewritten

PROGRAMS = ROOT / "benchmarks" / "programs" / "c"
CFLAGS = ["-O2", "-fopenmp", "-ffp-contract=off"]

# program -> [(sizes to tune for, runs: (arguments, whether looper's code must run))]
TUNED = [("print", True)]
CASES = {
    "dgemm": [
        (["-DM=24", "-DN=20", "-DK=16"],
         TUNED + [("print 10 12 7", False), ("same", False), ("overlap", False)]),
        (["-DM=13", "-DN=17", "-DK=9", "-DLDA=11"],
         TUNED + [("print 13 17 8", False), ("same", False), ("overlap", False)]),
    ],
    "dgemm_array": [
        (["-DM=24", "-DN=20", "-DK=16"],
         TUNED + [("print 10 12 7", False), ("same", False), ("overlap", False)]),
    ],
    "stencil": [
        (["-DN=30", "-DTSTEPS=4"], TUNED + [("print 20 3", False), ("overlap", False)]),
        (["-DN=17", "-DTSTEPS=3"], TUNED + [("print 17 4", False), ("overlap", False)]),
    ],
    "stencil_array": [
        (["-DN=30", "-DTSTEPS=4"], TUNED + [("print 20 3", False), ("overlap", False)]),
    ],
    "tensor": [
        (["-DNI=6", "-DNJ=5", "-DNK=7", "-DNL=7"],
         TUNED + [("print 4 3 2 5", False), ("same", False), ("overlap", False)]),
        (["-DNI=4", "-DNJ=9", "-DNK=5", "-DNL=6"], TUNED + [("print 4 9 6 5", False), ("overlap", False)]),
    ],
    "tensor_array": [
        (["-DNI=6", "-DNJ=5", "-DNK=7", "-DNL=7"], TUNED),
    ],
}
PARAMS = [(name, k) for name, cases in CASES.items() for k in range(len(cases))]


def _build(src: Path, defines: list[str], exe: Path) -> Path:
    subprocess.run(["gcc", *CFLAGS, *defines, str(src), "-o", str(exe), "-lm"], check=True, capture_output=True)
    return exe


def _run(exe: Path, args: str) -> tuple[str, str]:
    r = subprocess.run([str(exe), *args.split()], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, OMP_NUM_THREADS="2"))
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr


@pytest.mark.parametrize("name,case", PARAMS, ids=[f"{n}-{k}" for n, k in PARAMS])
def test_program_in_place(tmp_path, name, case):
    defines, runs = CASES[name][case]
    src = tmp_path / f"{name}.c"
    shutil.copy(PROGRAMS / f"{name}.c", src)
    res = CliRunner().invoke(main, ["optimize", str(src), "-q", "--no-speed-guard", *defines])
    assert res.exit_code == 0, res.output
    out = tmp_path / f"{name}.looper.c"
    marked = tmp_path / "marked.c"
    marked.write_text(mark_tuned_code(model_answer_rewritten(src, [d.removeprefix("-D") for d in defines])))
    original = _build(src, defines, tmp_path / "original")
    rewritten = _build(out, defines, tmp_path / "rewritten")
    with_mark = _build(marked, defines, tmp_path / "marked")
    for args, tuned in runs:
        expected, _ = _run(original, args)
        assert expected.strip(), args
        assert _run(rewritten, args)[0] == expected, args
        got, err = _run(with_mark, args)
        assert got == expected and (TUNED_MARK in err) == tuned, (args, err)


DEFAULT_RUNS = {"dgemm": ["same", "overlap"], "dgemm_array": ["same", "overlap"], "stencil": ["overlap"],
                "stencil_array": ["overlap"], "tensor": ["overlap"], "tensor_array": []}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_program_in_place_at_default_sizes(tmp_path, name):
    """At the sizes the programs are timed at (their macros' defaults)."""
    src = tmp_path / f"{name}.c"
    shutil.copy(PROGRAMS / f"{name}.c", src)
    res = CliRunner().invoke(main, ["optimize", str(src), "-q", "--no-speed-guard"])
    assert res.exit_code == 0, res.output
    marked = tmp_path / "marked.c"
    marked.write_text(mark_tuned_code(model_answer_rewritten(src)))
    original, with_mark = _build(src, [], tmp_path / "original"), _build(marked, [], tmp_path / "marked")
    for args in ["print"] + DEFAULT_RUNS[name]:
        got, err = _run(with_mark, args)
        assert got == _run(original, args)[0] and (TUNED_MARK in err) == (args == "print"), args
