"""Fuzzing the front ends: valid programs mutated at random (tokens deleted, swapped, duplicated,
inserted; identifiers and numbers replaced) must end in a valid program (exit 0) or in one clear
error line, `FILE:LINE:COL: error: ...` or `FILE: error: ...`, with exit status 2: never a
traceback, never a hang.

Each case runs `looper compile` in-process (click's CliRunner) in a forked child, so that a case
that hangs, even inside isl's C code, is killed at its time limit, and nothing a case does
(caches, globals) leaks into the next.  The default suite runs a fixed set of cases (derandomized:
the same ones every run); `-m slow` runs many more, random ones.
"""
from __future__ import annotations

import json
import os
import re
import select
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import looper.cli
import looper.codegen.harness  # noqa: F401 - imported once here, not in every forked case
import looper.lang.c.cfile  # noqa: F401
from looper.lang.c.preprocess import Token  # the front end's token: kind, span, text
import looper.lang.parse  # noqa: F401
from click.testing import CliRunner

from conftest import KERNELS_DIR, SHARED

CASE_SECONDS = 30.0  # a case still running after this is a hang
ERROR_LINE = re.compile(r"^(?:[^\n]*?:\d+:\d+|[^\n]*?:\d+|[^\n]*?): error: ")

# -- programs to mutate ---------------------------------------------------------------------------

PY_PROGRAMS = {p.name: p.read_text() for p in sorted(KERNELS_DIR.glob("*.py"))}

SMALL_SCOPS = {
    "stencil.c": """#define N 30
#define T 4
double A[N][N], B[N][N];
void kernel(int n, int tsteps) {
  int t, i, j;
#pragma scop
  for (t = 0; t < tsteps; t++) {
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        B[i][j] = 0.2 * (A[i][j] + A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        A[i][j] = B[i][j];
  }
#pragma endscop
}
void run(void) { kernel(N, T); }
""",
    "triangle.c": """#include <math.h>
void kernel(int n, double alpha, double C[40][40], double A[40][40], double x[40]) {
  int i, j, k;
  double s;
#pragma scop
  for (i = 0; i < n; i++) {
    s = 0.0;
    for (j = 0; j <= i; j++) {
      C[i][j] *= alpha;
      for (k = 0; k < n; k++)
        C[i][j] += A[i][k] * A[j][k];
      s += C[i][j] > 0 ? sqrt(C[i][j]) : -C[i][j];
    }
    x[i] = s / (i + 1);
  }
#pragma endscop
}
int main(void) { static double C[40][40], A[40][40], x[40]; kernel(40, 1.5, C, A, x); return 0; }
""",
    # pointers with computed subscripts (delinearized T and A, flat C), a local from malloc,
    # and loop variables the code after the scop assigns again
    "pointers.c": """#include <stdlib.h>
#define N 20
#define LDA 24
void kernel(int n, int lda, double alpha, const double *restrict A, double *C, float *x) {
  int i, j, k;
  double *T = malloc(sizeof(double) * N * N);
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++) {
      T[i*n + j] = 0.0;
      for (k = 0; k < n; k++)
        T[i*n + j] += alpha * A[i*lda + k] * A[k*lda + j];
    }
  for (i = 1; i < n - 1; i++)
    for (j = 0; j < n; j++)
      C[(i*n + j)*2 + 1] = T[(i - 1)*n + j] + T[(i + 1)*n + j] + x[j];
#pragma endscop
  for (i = 0; i < n; i++)
    x[i] = (float)T[i];
  free(T);
}
""",
    "rows.c": """#define N 30
#define M 16
void kernel(int n, double A[][M], double B[][M], double (*D)[M], double x[]) {
  int i, j;
#pragma scop
  for (i = 0; i < n - 1; i++)
    for (j = 1; j < M; j++) {
      B[i][j] = 0.5 * (A[i + 1][j] + A[i][j - 1]) + x[i + 2];
      D[i][j] = B[i][j] * x[i];
    }
#pragma endscop
  for (i = 0; i < n; i++)
    for (j = 0; j < M; j++)
      A[i][j] = B[i][j];
}
""",
}


def _polybench_c() -> dict[str, tuple[str, Path]]:
    """PolyBench/C's kernels (name -> (text, directory)), when the shared tree is there."""
    root = SHARED / "polybench-c"
    if not root.exists():
        return {}
    return {p.name: (p.read_text(), p.parent) for p in sorted(root.glob("*/**/*.c"))
            if p.parent.name == p.stem}


PB_C = _polybench_c()

# -- tokens and mutations ---------------------------------------------------------------------------

_PY_TOKEN = re.compile(r'''(?P<string>"""(?:.|\n)*?"""|"[^"\n]*"|'[^'\n]*')|(?P<comment>\#[^\n]*)
    |(?P<number>\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+)|(?P<ident>[A-Za-z_]\w*)
    |(?P<op>\*\*|//|==|!=|<=|>=|\+=|-=|\*=|/=|->|[^\s\w])|(?P<newline>\n)|(?P<indent>(?<=\n)[ ]+)''', re.X)
_C_TOKEN = re.compile(r'''(?P<string>"(?:\\.|[^"\\\n])*")|(?P<comment>/\*(?:.|\n)*?\*/|//[^\n]*)
    |(?P<directive>^[ \t]*\#[^\n]*)|(?P<number>\d+\.?\d*(?:[eE][+-]?\d+)?[fFlLuU]*|\.\d+)
    |(?P<ident>[A-Za-z_]\w*)|(?P<op>->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|[^\s\w])''', re.X | re.M)


def tokenize(text: str, pattern: re.Pattern) -> list[Token]:
    return [Token(m.lastgroup, m.start(), m.end(), m.group()) for m in pattern.finditer(text)
            if m.lastgroup != "comment"]


NAMES = ["N", "M", "i", "j", "k", "A", "B", "range", "min", "max", "f64", "f32", "i32", "int", "kernel", "init",
         "SIZES", "OUTPUTS", "sqrt", "exp", "pow", "abs", "for", "if", "else", "while", "return", "double", "float",
         "void", "static", "main", "looper_x", "__x", "x1", "alpha", "None", "True", "lambda", "unsigned", "char",
         "struct", "sizeof", "const", "long", "pragma", "scop", "endscop", "n", "tsteps", "elif", "not", "and"]
KINDS = ["delete", "swap", "duplicate", "insert"] + ["ident"] * 3 + ["number"] * 3
NUMBERS = ["0", "1", "-1", "2", "0.5", "1e308", "1e-320", "2147483647", "2147483648", "4294967296",
           "10000000000", "100000000000000000000000", "0.0", "1.0", "-0.0", "3", "007", "0x10", "1_000", "1e3"]


@st.composite
def mutations(draw, n_tokens: int, idents: list[str]):
    """One to three edits, each (kind, position, other position, replacement text)."""
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        # most edits keep the syntax (a name or a number replaced), so that the front end's later
        # stages see the mutants too, not only Python's or pycparser's syntax errors
        kind = draw(st.sampled_from(KINDS))
        i = draw(st.integers(0, n_tokens - 1))
        j = draw(st.one_of(st.integers(0, n_tokens - 1), st.integers(i - 4, i + 4).map(lambda x: x % n_tokens)))
        if kind == "ident":
            text = draw(st.one_of(st.sampled_from(NAMES + idents), st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)))
        elif kind == "number":
            text = draw(st.one_of(st.sampled_from(NUMBERS), st.integers(-10**12, 10**12).map(str),
                                  st.floats(allow_nan=False, allow_infinity=False).map(repr)))
        else:
            text = ""
        edits.append((kind, i, j, text))
    return edits


def mutate(text: str, pattern: re.Pattern, edits: list[tuple], window: tuple[int, int] | None = None) -> str:
    """Apply the edits one after the other, each to the tokens the previous ones left (positions
    taken modulo the token count; `window`: only tokens in this index range)."""
    for kind, i, j, repl in edits:
        tokens = tokenize(text, pattern)
        lo, hi = window if window is not None else (0, len(tokens))
        hi = min(hi, len(tokens))
        if hi <= lo:
            break
        a, b = tokens[lo + i % (hi - lo)], tokens[lo + j % (hi - lo)]
        if kind == "delete":
            text = text[:a.start] + text[a.end:]
        elif kind == "duplicate":
            text = text[:a.end] + " " + a.text + text[a.end:]
        elif kind == "insert":
            text = text[:a.start] + b.text + " " + text[a.start:]
        elif kind == "swap" and a.start != b.start:
            first, second = sorted((a, b), key=lambda t: t.start)
            text = (text[:first.start] + second.text + text[first.end:second.start] + first.text
                    + text[second.end:])
        elif kind == "ident" and a.kind == "ident":
            text = text[:a.start] + repl + text[a.end:]
        elif kind == "number":
            target = next((t for t in tokens[tokens.index(a):hi] if t.kind == "number"), None)
            if target is not None:
                text = text[:target.start] + repl + text[target.end:]
    return text


# -- running one case -----------------------------------------------------------------------------


@dataclass
class Outcome:
    exit_code: int | None  # None: killed at the time limit
    output: str
    traceback: str | None

    @property
    def ok(self) -> bool:
        if self.exit_code is None or self.traceback:
            return False
        if self.exit_code == 0:
            return True
        lines = self.output.strip().splitlines()
        return self.exit_code == 2 and len(lines) == 1 and bool(ERROR_LINE.match(lines[0]))


def run_case(args: list[str], seconds: float = CASE_SECONDS) -> Outcome:
    """`looper ARGS` in-process in a forked child, killed after `seconds`."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, report, leave without running any cleanup of the parent's
        os.close(read)
        try:
            result = _invoke(args)
        except BaseException as e:  # noqa: BLE001 - report whatever happened
            result = {"exit_code": -1, "output": "", "traceback": repr(e)}
        with os.fdopen(write, "w") as f:
            json.dump(result, f)
        os._exit(0)
    os.close(write)
    data, deadline = b"", time.monotonic() + seconds
    while True:
        ready, _, _ = select.select([read], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
            return Outcome(None, f"no result within {seconds:.0f} s", None)
        chunk = os.read(read, 65536)
        if not chunk:
            break
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return Outcome(**json.loads(data or b'{"exit_code": -1, "output": "the child died", "traceback": "died"}'))


def _invoke(args: list[str]) -> dict:
    import traceback
    res = CliRunner().invoke(looper.cli.main, args)
    tb = None
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        tb = "".join(traceback.format_exception(*res.exc_info))
    return {"exit_code": res.exit_code, "output": res.output, "traceback": tb}


def _check(outcome: Outcome, source: str) -> None:
    assert outcome.ok, (f"exit {outcome.exit_code}\n{outcome.traceback or outcome.output}\n"
                        f"--- mutated program ---\n{source}")


# -- the cases -----------------------------------------------------------------------------------

def _python_case(data, name: str) -> None:
    text = PY_PROGRAMS[name]
    tokens = tokenize(text, _PY_TOKEN)
    idents = sorted({t.text for t in tokens if t.kind == "ident"})
    source = mutate(text, _PY_TOKEN, data.draw(mutations(len(tokens), idents)))
    with tempfile.TemporaryDirectory(prefix="looper-fuzz-") as tmp:
        path = Path(tmp) / name
        path.write_text(source)
        _check(run_case(["compile", str(path), "--size", "MINI"]), source)


def _c_case(data, name: str, text: str, include: Path | None) -> None:
    tokens = tokenize(text, _C_TOKEN)
    lo, hi = _kernel_tokens(tokens)
    idents = sorted({t.text for t in tokens[lo:hi] if t.kind == "ident"})
    source = mutate(text, _C_TOKEN, data.draw(mutations(hi - lo, idents)), (lo, hi))
    with tempfile.TemporaryDirectory(prefix="looper-fuzz-") as tmp:
        path = Path(tmp) / name
        path.write_text(source)
        args = ["compile", str(path)]
        if include is not None:
            args += ["-I", str(include), "-I", str(SHARED / "polybench-c" / "utilities"), "--size", "MINI"]
        _check(run_case(args), source)


def _kernel_tokens(tokens: list[Token]) -> tuple[int, int]:
    """The token range of the function that holds the scop (from its `void` to its closing
    brace): where the front end looks (other functions' bodies are blanked before parsing)."""
    scop = next(k for k, t in enumerate(tokens) if t.kind == "directive" and re.search(r"pragma\s+scop", t.text))
    end = next(k for k, t in enumerate(tokens) if t.kind == "directive" and "endscop" in t.text)
    start = max((k for k in range(scop) if tokens[k].text == "void"), default=0)
    return start, min(len(tokens), end + 3)


FAST = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
FAST_C = settings(FAST, max_examples=100)
SLOW = settings(max_examples=3000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
SLOW_C = settings(SLOW, max_examples=1500)


@FAST
@given(st.data())
def test_python_front_end_never_tracebacks(data):
    _python_case(data, data.draw(st.sampled_from(sorted(PY_PROGRAMS))))


@FAST_C
@given(st.data())
def test_c_front_end_never_tracebacks(data):
    name = data.draw(st.sampled_from(sorted(SMALL_SCOPS) + sorted(PB_C)))
    if name in SMALL_SCOPS:
        _c_case(data, name, SMALL_SCOPS[name], None)
    else:
        text, directory = PB_C[name]
        _c_case(data, name, text, directory)


@pytest.mark.slow
@SLOW
@given(st.data())
def test_python_front_end_never_tracebacks_many(data):
    _python_case(data, data.draw(st.sampled_from(sorted(PY_PROGRAMS))))


@pytest.mark.slow
@SLOW_C
@given(st.data())
def test_c_front_end_never_tracebacks_many(data):
    test_c_front_end_never_tracebacks.hypothesis.inner_test(data)


# Bad pointer forms, each in place of `T[i*n + j] = 0.0;` in pointers.c: FILE:LINE:COL errors.
BAD_POINTERS = {
    "T++;": "pointer arithmetic 'T++'",
    "--T;": "pointer arithmetic '--T'",
    "T = T + 1;": "assignment to the pointer 'T'",
    "T += n;": "pointer arithmetic 'T += n'",
    "C = T;": "assignment to the pointer 'C'",
    "*(T + i) = 0.0;": "pointer dereference",
    "T[i*n + j] = *A;": "pointer dereference",
    "T[i*j] = 0.0;": "product of 'i' and 'j'",
    "T[i*n + j] = A[(int)x[j]];": "'x[j]' reads data",
    "T[i*n + j] = A[i % n];": "non-affine subscript",
    "T[i*n + j] = A[i*lda / 2];": "non-affine subscript",
    "T[i*n + j] = A[i - n];": "subscript A[i - 20] can be negative",
    "T[i][j] = 0.0;": "pointer 'T' takes 1 subscript",
    "T[i*n + j] = (double)(long)A;": "pointer 'A' used without subscripts",
    "A[i] = 1.0;": "write to 'A', which is const",
}


@pytest.mark.parametrize("form", sorted(BAD_POINTERS))
def test_bad_pointer_forms(form):
    source = SMALL_SCOPS["pointers.c"].replace("T[i*n + j] = 0.0;", form, 1)
    with tempfile.TemporaryDirectory(prefix="looper-fuzz-") as tmp:
        path = Path(tmp) / "pointers.c"
        path.write_text(source)
        outcome = run_case(["optimize", str(path), "-q"])
        assert not (Path(tmp) / "pointers.looper.c").exists()
    assert outcome.exit_code == 2 and outcome.ok, outcome
    line = outcome.output.strip()
    assert re.match(rf"^{re.escape(str(path))}:\d+:\d+: error: ", line), line
    assert BAD_POINTERS[form] in line, line


def test_a_hang_is_caught():
    """The harness itself: a case that does not finish is killed and reported."""
    assert run_case(["--help"], seconds=10).ok
    import looper.cli as cli
    original = cli.main
    try:
        cli.main = _sleeper  # the child runs `looper.cli.main` as looked up at its call
        out = run_case(["x"], seconds=1)
    finally:
        cli.main = original
    assert out.exit_code is None and not out.ok


@click.command()
@click.argument("x")
def _sleeper(x):  # pragma: no cover - runs in a child and is killed
    time.sleep(60)
