"""Malformed C input: each gives `FILE:LINE:COL: error: ...` naming the construct, exit status 2,
no traceback, and writes no output file."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from looper.cli import main

# The scop's first statement is on line 7.
BASE = """#include <stdlib.h>
#define N 100
void kernel(int n, double A[N][N], double x[N], double *p, int B[N], double **q, double R[][N])
{
  int i, j;
#pragma scop
BODY
#pragma endscop
}
"""

CASES = {
    # name: (body, line, col, words)
    "while": ("  while (n > 0) { x[0] = 1.0; }", 7, 3, ["'while' loop"]),
    "goto": ("  for (i = 0; i < n; i++) { x[i] = 0.0; goto done; }\n done: ;", 7, 41, ["'goto'"]),
    "pointer_arithmetic": ("  for (i = 0; i < n; i++)\n    *(p + i) = 0.0;", 8, 5,
                           ["pointer dereference", "*(p + i)"]),
    "pointer_increment": ("  for (i = 0; i < n; i++) {\n    p[0] = 1.0;\n    p++;\n  }", 9, 5,
                          ["pointer arithmetic 'p++'", "must stay the same"]),
    "pointer_compound_assignment": ("  for (i = 0; i < n; i++)\n    p += 1;", 8, 5, ["pointer arithmetic 'p += 1'"]),
    "pointer_assignment": ("  for (i = 0; i < n; i++)\n    p = x;", 8, 5, ["assignment to the pointer 'p'"]),
    "pointer_to_pointers": ("  for (i = 0; i < n; i++)\n    q[i][0] = 0.0;", 8, 5, ["'q' is a pointer to double *"]),
    "pointer_product_subscript": ("  for (i = 0; i < n; i++)\n    for (j = 0; j < n; j++)\n      p[i*j] = 1.0;",
                                  9, 9, ["non-affine subscript", "product of 'i' and 'j'"]),
    "pointer_data_subscript": ("  for (i = 0; i < n; i++)\n    p[B[i]] = 1.0;", 8, 7, ["non-affine subscript", "'B[i]' reads data"]),
    "pointer_negative_subscript": ("  for (i = 0; i < n; i++)\n    p[i - 1] = 1.0;", 8, 1,
                                   ["subscript p[i - 1] can be negative", "p[-1]"]),
    "pointer_two_subscripts": ("  for (i = 0; i < n; i++)\n    p[i][0] = 1.0;", 8, 5, ["pointer 'p' takes 1 subscript"]),
    "open_extent_negative": ("  for (i = 0; i < n; i++)\n    R[i - 2][0] = 1.0;", 8, 1,
                             ["subscript R[i - 2, 0] can be negative", "R[-2, 0]"]),
    "product_subscript": ("  for (i = 0; i < n; i++)\n    for (j = 0; j < n; j++)\n      A[i*j][j] = 1.0;",
                          9, 9, ["non-affine subscript", "product of 'i' and 'j'"]),
    "indirect_subscript": ("  for (i = 0; i < n; i++)\n    x[B[i]] = 1.0;", 8, 7,
                           ["non-affine subscript", "'B[i]' reads data"]),
    "call_with_side_effects": ("  for (i = 0; i < n; i++)\n    x[i] = rand();", 8, 12, ["call to 'rand'", "side effects"]),
    "call_statement": ("  for (i = 0; i < n; i++)\n    free(p);", 8, 5, ["call to 'free' as a statement"]),
    "increment_in_expression": ("  for (i = 0; i < n; i++)\n    x[i] = A[i][i]++;", 8, 12, ["'++' inside an expression"]),
    "unknown_identifier": ("  for (i = 0; i < n; i++)\n    x[i] = y + 1.0;", 8, 12, ["unknown identifier 'y'"]),
    "write_to_loop_bound": ("  for (i = 0; i < n; i++) {\n    x[i] = 1.0;\n    n = n - 1;\n  }", 9, 5,
                            ["write to 'n'", "loop bound"]),
    "write_to_loop_variable": ("  for (i = 0; i < n; i++) {\n    x[i] = 1.0;\n    i = i + 1;\n  }", 9, 5,
                               ["write to loop variable 'i'"]),
    "syntax_error": ("  for (i = 0; i < n; i++\n    x[i] = 1.0;", 8, 5, ["C syntax error"]),
    "loop_step": ("  for (i = 0; i < n; i += 2)\n    x[i] = 1.0;", 7, 22, ["loop step 2"]),
    "break": ("  for (i = 0; i < n; i++) { if (i > 3) break; x[i] = 1.0; }", 7, 40, ["'break'"]),
    "data_dependent_if": ("  for (i = 0; i < n; i++)\n    if (x[i] > 0) x[i] = 1.0;", 8, 9,
                          ["'if' condition", "'x[i]' reads data"]),
    "out_of_bounds": ("  for (i = 0; i <= n; i++)\n    x[i] = 1.0;", 8, 1, ["outside the array", "x[100]"]),
    "declaration_in_scop": ("  for (i = 0; i < n; i++) {\n    x[i] = 1.0;\n  }\n  double t = 0;", 10, 10,
                            ["declaration of 't' inside the scop"]),
}


def _run(tmp_path, text: str, *args: str):
    f = tmp_path / "bad.c"
    f.write_text(text)
    out = tmp_path / "bad.looper.c"
    res = CliRunner().invoke(main, ["optimize", str(f), "-q", *args])
    return f, out, res


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_c(tmp_path, case):
    body, line, col, words = CASES[case]
    f, out, res = _run(tmp_path, BASE.replace("BODY", body))
    assert res.exit_code == 2, res.output
    msg = res.output.strip()
    assert msg.startswith(f"{f}:{line}:{col}: error: "), msg
    for w in words:
        assert w in msg, msg
    assert "Traceback" not in msg and len(msg.splitlines()) == 1
    assert not out.exists()


def test_missing_endscop(tmp_path):
    f, out, res = _run(tmp_path, BASE.replace("#pragma endscop\n", "").replace("BODY", "  x[0] = 1.0;"))
    assert res.exit_code == 2
    assert res.output.startswith(f"{f}:6:") and "without a matching '#pragma endscop'" in res.output
    assert not out.exists()


def test_endscop_without_scop(tmp_path):
    f, out, res = _run(tmp_path, BASE.replace("#pragma scop\n", "").replace("BODY", "  x[0] = 1.0;"))
    assert res.exit_code == 2 and res.output.startswith(f"{f}:7:") and "without a '#pragma scop'" in res.output
    assert not out.exists()


def test_no_scop(tmp_path):
    text = BASE.replace("#pragma scop\n", "").replace("#pragma endscop\n", "").replace("BODY", "  x[0] = 1.0;")
    f, out, res = _run(tmp_path, text)
    assert res.exit_code == 2 and f"{f}: error: no '#pragma scop' region" in res.output
    assert not out.exists()


def test_missing_header_is_the_preprocessors_error(tmp_path):
    f, out, res = _run(tmp_path, '#include "nothere.h"\n' + BASE.replace("BODY", "  x[0] = 1.0;"))
    assert res.exit_code == 2
    assert res.output.startswith(f"{f}:1:10: error: preprocessor: nothere.h: No such file") and "-I DIR" in res.output
    assert not out.exists()


def test_size_without_a_value(tmp_path):
    text = BASE.replace("#define N 100\n", "").replace("[N]", "[100]").replace("BODY", "  for (i = 0; i < n; i++) x[i] = 0;")
    f, out, res = _run(tmp_path, text)
    assert res.exit_code == 2 and "no value for the size 'n'" in res.output and "-D N=VALUE" in res.output
    assert res.output.startswith(f"{f}:2:")
    assert not out.exists()
    report = tmp_path / "report.json"
    f, out, res = _run(tmp_path, text, "-DN=50", "--json", str(report))
    assert res.exit_code == 0, res.output
    scop = json.loads(report.read_text())["scops"][0]
    assert scop["tuned_for"] == {"n": 50}
    # the answer's region is entered at n == 50, or (the original schedule) left as written
    assert "if (n == 50)" in out.read_text() if scop["sequence"] != "original" else out.read_text() == text


def test_loop_variable_read_after_the_scop(tmp_path):
    text = BASE.replace("BODY", "  for (i = 0; i < n; i++) x[i] = 0;").replace("#pragma endscop\n",
                                                                                "#pragma endscop\n  x[0] = i;\n")
    f, out, res = _run(tmp_path, text)
    assert res.exit_code == 2 and res.output.startswith(f"{f}:8:1: error: 'i', a loop variable")
    assert "(line 9)" in res.output
    assert not out.exists()


def test_emit_function_is_for_python_input(tmp_path):
    f, out, res = _run(tmp_path, BASE.replace("BODY", "  x[0] = 1.0;"), "--emit", "function")
    assert res.exit_code == 2 and "--emit function takes a Python program" in res.output
