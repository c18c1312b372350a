"""One file for several sizes (`looper optimize --sizes`, `looper apply` with records at several
sizes): a C region, or a Python kernel's C function, that runs the version tuned for the sizes it
is called with and the original at any other.  Checked by outputs (exactly the original's at
every size, tuned or not) and by which branch runs (the others trapped, or traced), never by
timing."""
from __future__ import annotations

import ctypes
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from looper.cli import main
from looper.lang.parse import parse_file
from looper.runtime.compile import compile_shared
from looper.tune.records import read_records

from conftest import SHARED, kernel_path
from helpers import SIZED_BY_DEFINES, run_sized

PB = SHARED / "polybench-c"
GEMM_C = PB / "linear-algebra" / "blas" / "gemm" / "gemm.c"
UTIL = PB / "utilities"
needs_polybench = pytest.mark.skipif(not (UTIL / "polybench.c").exists(),
                                     reason=f"PolyBench/C sources not found in {PB} (set LOOPER_SHARED)")
CFLAGS = ["-O2", "-fopenmp", "-ffp-contract=off", "-DPOLYBENCH_DUMP_ARRAYS"]
# gemm's size variables at each dataset (PolyBench 4.2.1)
NI = {"MINI": 20, "SMALL": 60, "MEDIUM": 200, "LARGE": 1000}


def _invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _build_and_run(source: Path, size: str, tmp: Path) -> subprocess.CompletedProcess:
    """The file with PolyBench's harness at `size`, run with 2 threads (its dump on stderr)."""
    exe = tmp / f"{source.stem}-{size}.exe"
    res = subprocess.run(["gcc", *CFLAGS, f"-I{UTIL}", f"-I{GEMM_C.parent}", f"-D{size}_DATASET", str(source),
                          str(UTIL / "polybench.c"), "-o", str(exe), "-lm"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, OMP_NUM_THREADS="2"))


def _dump(source: Path, size: str, tmp: Path) -> str:
    run = _build_and_run(source, size, tmp)
    assert run.returncode == 0, run.stderr[-500:]
    assert "begin dump" in run.stderr
    return run.stderr


_OPENER = re.compile(r"^[ \t]*(?:\} else )?if \(ni == (\d+)\n.*?\) \{\n|^[ \t]*\} else \{\n", re.M | re.S)


def _trapped(text: str, keep: str | None, only: bool = False) -> str:
    """The rewritten region with `__builtin_trap()` entering every branch but the one for ni ==
    `keep` (None: the original's): the program then dies unless that branch is the one that runs.
    `only`: trap that branch alone instead."""
    start = text.index("/* looper: tuned for")
    end = text.index("#undef looper_disjoint", start)
    region = text[start:end]
    branches = list(_OPENER.finditer(region))
    assert len(branches) >= 2, region[:400]
    out, pos = [], 0
    for m in branches:
        out.append(region[pos:m.end()])
        if (m.group(1) == keep) == only:
            out.append("__builtin_trap();\n")
        pos = m.end()
    out.append(region[pos:])
    return text[:start] + "".join(out) + text[end:]


def _tuned_c(tmp: Path, sizes: str) -> tuple[Path, Path]:
    """gemm.c optimized for `sizes` in one file (model evaluator, nothing timed), and its records."""
    out, records = tmp / "gemm.looper.c", tmp / "r.jsonl"
    res = _invoke("optimize", GEMM_C, "-I", UTIL, "--sizes", sizes, "-q", "--no-speed-guard", "-o", out,
                  "--record", records)
    assert res.exit_code == 0, res.output
    return out, records


@pytest.fixture(scope="module")
def tuned_c(tmp_path_factory):
    return _tuned_c(tmp_path_factory.mktemp("versions"), "SMALL,MEDIUM")


@needs_polybench
def test_one_region_holds_a_version_per_size(tuned_c):
    out, records = tuned_c
    text = out.read_text()
    assert text.count("/* looper: tuned for 2 sets of sizes; other sizes run the original code") == 1
    assert "  if (ni == 60\n" in text and "  } else if (ni == 200\n" in text
    assert "/* SMALL (ni=60, nj=70, nk=80): looper: " in text and "/* MEDIUM (ni=200, nj=220, nk=240): looper: " in text
    recs = read_records(records)
    assert [r.program.size for r in recs] == ["SMALL", "MEDIUM"]
    assert [dict(r.program.sizes)["ni"] for r in recs] == [60, 200]


@needs_polybench
@pytest.mark.parametrize("size", ["MINI", "SMALL", "MEDIUM"])
def test_outputs_are_the_originals_at_tuned_and_other_sizes(tuned_c, size, tmp_path):
    out, _ = tuned_c
    assert _dump(out, size, tmp_path) == _dump(GEMM_C, size, tmp_path)


@needs_polybench
@pytest.mark.parametrize("size", ["MINI", "SMALL", "MEDIUM"])
def test_the_version_for_the_size_is_the_one_that_runs(tuned_c, size, tmp_path):
    out, _ = tuned_c
    text = out.read_text()
    keep = str(NI[size]) if size != "MINI" else None
    only = tmp_path / "only.c"
    only.write_text(_trapped(text, keep))
    assert _dump(only, size, tmp_path) == _dump(GEMM_C, size, tmp_path)
    # and the traps are where the branches are: trapping that branch alone kills the run
    other = tmp_path / "other.c"
    other.write_text(_trapped(text, keep, only=True))
    assert _build_and_run(other, size, tmp_path).returncode != 0


@needs_polybench
def test_apply_writes_the_same_file_from_the_records(tuned_c, tmp_path):
    out, records = tuned_c
    again = tmp_path / "gemm.looper.c"
    res = _invoke("apply", records, GEMM_C, "-I", UTIL, "--no-speed-guard", "-o", again)
    assert res.exit_code == 0, res.output
    assert again.read_text() == out.read_text()
    one = tmp_path / "one.c"
    res = _invoke("apply", records, GEMM_C, "-I", UTIL, "--no-speed-guard", "-s", "MEDIUM", "-o", one)
    assert res.exit_code == 0, res.output
    assert "tuned for ni=200, nj=220, nk=240; other sizes run the original code" in one.read_text()


@needs_polybench
@pytest.mark.slow  # LARGE: a few seconds of search and a 1000x1100 dump per build
def test_gemm_tuned_for_medium_and_large(tmp_path):
    out, _ = _tuned_c(tmp_path, "MEDIUM,LARGE")
    text = out.read_text()
    for size in ("MINI", "MEDIUM", "LARGE"):
        expected = _dump(GEMM_C, size, tmp_path)
        assert _dump(out, size, tmp_path) == expected
        only = tmp_path / f"only-{size}.c"
        only.write_text(_trapped(text, str(NI[size]) if size != "MINI" else None))
        assert _dump(only, size, tmp_path) == expected


# -- a Python kernel: one function ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def tuned_function(tmp_path_factory):
    """gemm.py optimized for SMALL and MEDIUM as one C function, and its records."""
    tmp = tmp_path_factory.mktemp("function")
    out = tmp / "gemm_k.c"
    res = _invoke("optimize", kernel_path("gemm"), "--sizes", "SMALL,MEDIUM", "--emit", "function", "-o", out,
                  "-q", "--no-speed-guard", "--record", tmp / "r.jsonl")
    assert res.exit_code == 0, res.output
    return out


def _traced(source: str) -> str:
    """The function's source with each version and the original setting `looper_trace` when entered."""
    marks = {"original": 9}
    text = "int looper_trace;\n" + source

    def mark(m: re.Match) -> str:
        k = marks.get(m.group(1)) or int(m.group(1)[1:])
        return m.group(0) + f"  looper_trace = {k};\n"

    return re.sub(r"^static void gemm_(v\d+|original)\(.*\)\n\{\n", mark, text, flags=re.M)


def test_one_function_dispatches_on_its_sizes(tuned_function):
    header = tuned_function.with_suffix(".h").read_text()
    assert "void gemm(int NI, int NJ, int NK, double alpha, double beta, double C[NI][NJ], double A[NI][NK], " \
           "double B[NK][NJ]);" in header
    source = tuned_function.read_text()
    lib = compile_shared(_traced(source), {"gemm_k.h": header}, ("-O2", "-fopenmp", "-ffp-contract=off"))
    fn = ctypes.CDLL(str(lib.path))
    trace = ctypes.c_int.in_dll(fn, "looper_trace")
    rng = np.random.default_rng(1)
    for size, branch in (("MINI", 9), ("SMALL", 1), ("MEDIUM", 2), ("LARGE", 9)):
        p = parse_file(kernel_path("gemm"), size)
        ni, nj, nk = p.sizes["NI"], p.sizes["NJ"], p.sizes["NK"]
        if size == "LARGE":  # another size no version was tuned for, small enough to run here
            ni, nj, nk = 33, 17, 9
        C, A, B = rng.random((ni, nj)), rng.random((ni, nk)), rng.random((nk, nj))
        expected = _original_gemm(1.5, 1.2, C.copy(), A, B)
        trace.value = 0
        fn.gemm(ctypes.c_int(ni), ctypes.c_int(nj), ctypes.c_int(nk), ctypes.c_double(1.5), ctypes.c_double(1.2),
                C.ctypes.data_as(ctypes.c_void_p), A.ctypes.data_as(ctypes.c_void_p),
                B.ctypes.data_as(ctypes.c_void_p))
        assert trace.value == branch, size
        assert np.array_equal(C, expected), size


def _original_gemm(alpha: float, beta: float, C, A, B):
    """gemm's loops in its own order (each C[i, j] summed over k in order, as C does)."""
    ni, nk = A.shape
    for i in range(ni):
        C[i, :] *= beta
        for k in range(nk):
            C[i, :] += alpha * A[i, k] * B[k, :]
    return C


def test_apply_writes_the_same_function(tuned_function, tmp_path):
    out = tmp_path / tuned_function.name
    res = _invoke("apply", tuned_function.parent / "r.jsonl", kernel_path("gemm"), "--emit", "function", "-o", out,
                  "--no-speed-guard")
    assert res.exit_code == 0, res.output
    assert out.read_text() == tuned_function.read_text()
    assert out.with_suffix(".h").read_text() == tuned_function.with_suffix(".h").read_text()


# -- what cannot be done ---------------------------------------------------------------------------------

def test_sizes_need_a_function_for_a_python_program(tmp_path):
    res = _invoke("optimize", kernel_path("gemm"), "--sizes", "MINI,SMALL", "-o", tmp_path / "g.c")
    assert res.exit_code == 2 and "--emit function" in res.output and not (tmp_path / "g.c").exists()
    res = _invoke("optimize", kernel_path("gemm"), "-s", "MINI", "--sizes", "MINI,SMALL", "--emit", "function")
    assert res.exit_code == 2 and "not both" in res.output
    res = _invoke("optimize", kernel_path("gemm"), "--sizes", "MINI,mini", "--emit", "function")
    assert res.exit_code == 2 and "MINI given twice" in res.output


MACRO_SIZED = """
#ifdef SMALL_DATASET
#define N 40
#else
#define N 80
#endif
static double A[N];
void scale(void) {
  int i;
#pragma scop
  for (i = 0; i < N; i++)
    A[i] = A[i] * 2.0;
#pragma endscop
}
"""


def test_a_region_sized_by_macros_cannot_hold_versions(tmp_path):
    src = tmp_path / "scale.c"
    src.write_text(MACRO_SIZED)
    res = _invoke("optimize", src, "--sizes", "SMALL,MEDIUM", "-q", "--no-speed-guard")
    assert res.exit_code == 2 and "no size variable to test at run time" in res.output
    assert not (tmp_path / "scale.looper.c").exists()


def test_sizes_option_spells_datasets_and_define_sets():
    from looper.errors import LooperUsageError
    from looper.tune.versions import SizeSpec, parse_sizes_option
    assert parse_sizes_option("medium, LARGE") == [SizeSpec("MEDIUM"), SizeSpec("LARGE")]
    assert parse_sizes_option("N=500,N=1000") == [SizeSpec(None, ("N=500",)), SizeSpec(None, ("N=1000",))]
    assert parse_sizes_option("LARGE+NI=500+NJ=7,LARGE") == [SizeSpec("LARGE", ("NI=500", "NJ=7")), SizeSpec("LARGE")]
    assert [s.label for s in parse_sizes_option("LARGE+NI=500,N=3")] == ["LARGE+NI=500", "N=3"]
    for bad in ("", "SMALL+LARGE", "N=1+", "N=1,N=1"):
        with pytest.raises(LooperUsageError):
            parse_sizes_option(bad)


def test_define_sets_and_their_records(tmp_path):
    """`--sizes N=40,N=80` on a C file sized by -D: one region entered at n == 40 and n == 80, the
    original at any other n; the records keep the -D values, so `apply` parses them again."""
    src = tmp_path / "k.c"
    src.write_text(SIZED_BY_DEFINES)
    out, records = tmp_path / "k.looper.c", tmp_path / "r.jsonl"
    res = _invoke("optimize", src, "--sizes", "N=40,N=80", "-q", "--no-speed-guard", "--record", records)
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert [r.program.defines for r in read_records(records)] == [("N=40",), ("N=80",)]
    # a block for each size whose answer is not the original (tests/codegen/test_inplace.py: forced)
    tuned = [n for n, r in zip((40, 80), read_records(records)) if r.sequence]
    assert [int(v) for v in re.findall(r"if \(n == (\d+)", text)] == tuned
    assert tuned or text == SIZED_BY_DEFINES
    for n in (40, 80, 50):
        assert run_sized(out, n, tmp_path) == run_sized(src, n, tmp_path), n
    again = tmp_path / "again.c"
    res = _invoke("apply", records, src, "--no-speed-guard", "-o", again)
    assert res.exit_code == 0, res.output
    assert again.read_text() == text
    single = tmp_path / "single.jsonl"  # one size given by -D: recorded with it, applied without it
    res = _invoke("optimize", src, "-D", "N=40", "-q", "--no-speed-guard", "--record", single, "-o", tmp_path / "s.c")
    assert res.exit_code == 0, res.output
    assert read_records(single)[0].program.defines == ("N=40",)
    res = _invoke("apply", single, src, "--no-speed-guard", "-o", tmp_path / "s2.c")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "s2.c").read_text() == (tmp_path / "s.c").read_text()
