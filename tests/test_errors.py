"""Bad input: one test per case.  Each gives FILE:LINE:COL: error: ..., exit status 2, no traceback."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from click.testing import CliRunner

from looper.cli import main

GOOD = '''\
SIZES = {"MINI": dict(N=10, M=8)}
def kernel(N: int, M: int, alpha: f64, A: f64[N, M], x: f64[N]):
    for i in range(N):
        for j in range(M):
            A[i, j] = A[i, j] * alpha + x[i]
OUTPUTS = ["A"]
'''


def _kernel(body: str, extra: str = "") -> str:
    """A program whose kernel body (4-space indented lines) is `body`; the body starts on line 3."""
    return ('SIZES = {"MINI": dict(N=10, M=8)}\n'
            'def kernel(N: int, M: int, alpha: f64, A: f64[N, M], x: f64[N]):\n'
            + textwrap.indent(textwrap.dedent(body), "    ") + 'OUTPUTS = ["A"]\n' + extra)


def _compile(tmp_path, text: str, *args: str):
    f = tmp_path / "prog.py"
    f.write_text(text)
    res = CliRunner().invoke(main, ["compile", str(f), "--size", "MINI", *args])
    return f, res


def _expect(tmp_path, text, line, col, words, *args):
    f, res = _compile(tmp_path, text, *args)
    assert res.exit_code == 2, res.output
    msg = res.output.strip()
    prefix = f"{f}:{line}:{col}: error: " if col else f"{f}:{line}: error: " if line else f"{f}: error: "
    assert msg.startswith(prefix), msg
    for w in words:
        assert w in msg, msg
    assert "Traceback" not in res.output
    return msg


def test_good_program_compiles(tmp_path):
    f, res = _compile(tmp_path, GOOD)
    assert res.exit_code == 0, res.output
    assert "#pragma scop" in res.output


def test_syntax_error(tmp_path):
    _expect(tmp_path, _kernel("for i in range(N)\n    x[i] = 1.0\n"), 3, 22, ["invalid Python syntax"])


def test_non_affine_subscript(tmp_path):
    _expect(tmp_path, _kernel("for i in range(N):\n    for j in range(M):\n        A[i * j, j] = 1.0\n"),
            5, 15, ["non-affine subscript", "'i'", "'j'"])


def test_non_affine_bound(tmp_path):
    _expect(tmp_path, _kernel("for i in range(N):\n    for j in range(A[i, 0]):\n        x[i] = 1.0\n"),
            4, 24, ["non-affine loop bound", "reads data"])


def test_while_loop(tmp_path):
    _expect(tmp_path, _kernel("while N > 0:\n    x[0] = 1.0\n"), 3, 5, ["'while'"])


def test_unknown_name(tmp_path):
    _expect(tmp_path, _kernel("for i in range(N):\n    x[i] = y + 1.0\n"), 4, 16, ["unknown name 'y'"])


def test_unknown_array(tmp_path):
    _expect(tmp_path, _kernel("for i in range(N):\n    x[i] = B[i, 0]\n"), 4, 16, ["unknown array 'B'"])


def test_wrong_number_of_subscripts(tmp_path):
    _expect(tmp_path, _kernel("for i in range(N):\n    x[i] = A[i]\n"), 4, 16,
            ["array 'A' has 2 dimensions but 1 subscript given"])


def test_assignment_to_size(tmp_path):
    _expect(tmp_path, _kernel("N = 3\n"), 3, 5, ["cannot assign to size 'N'"])


def test_unsupported_call(tmp_path):
    _expect(tmp_path, _kernel("for i in range(N):\n    x[i] = sin(x[i])\n"), 4, 16, ["unsupported call 'sin'"])


def test_unsupported_operator(tmp_path):
    _expect(tmp_path, _kernel("for i in range(N):\n    x[i] = x[i] ** 2\n"), 4, 16,
            ["unsupported operator '**'"])


def test_missing_size_in_sizes(tmp_path):
    text = GOOD.replace("dict(N=10, M=8)", "dict(N=10)")
    _expect(tmp_path, text, 2, 20, ["size 'M' has no value in SIZES['MINI']"])


def test_define_of_unknown_name(tmp_path):
    _expect(tmp_path, GOOD, None, None, ["-D K=3", "no size named 'K'"], "-D", "K=3")


def test_define_not_an_integer(tmp_path):
    f, res = _compile(tmp_path, GOOD, "-D", "N=ten")
    assert res.exit_code == 2 and "not an integer" in res.output


def test_unknown_dataset(tmp_path):
    f = tmp_path / "prog.py"
    f.write_text(GOOD)
    res = CliRunner().invoke(main, ["compile", str(f), "--size", "HUGE"])
    assert res.exit_code == 2 and "no size 'HUGE' in SIZES (available: MINI)" in res.output


def test_out_of_bounds_access(tmp_path):
    _expect(tmp_path, _kernel("for i in range(N):\n    x[i + 1] = 1.0\n"), 4, 1,
            ["x[i + 1]", "outside the array", "extent [10]"])


def test_module_level_code_is_never_run(tmp_path):
    _expect(tmp_path, "import os\n" + GOOD, 1, 1, ["only 'from looper.lang import ...'"])
    _expect(tmp_path, GOOD + "print('hi')\n", 7, 1, ["unsupported module-level statement"])


def test_non_affine_if(tmp_path):
    _expect(tmp_path, _kernel("for i in range(N):\n    if x[i] > 0:\n        x[i] = 1.0\n"), 4, 12,
            ["non-affine condition", "reads data"])


def test_iterator_shadowing(tmp_path):
    _expect(tmp_path, _kernel("for i in range(N):\n    for i in range(M):\n        x[i] = 1.0\n"), 4, 13,
            ["shadows"])


def test_missing_file_is_a_clear_error(tmp_path):
    res = CliRunner().invoke(main, ["compile", str(tmp_path / "nope.py")])
    assert res.exit_code == 2 and "cannot read program" in res.output


def test_real_process_prints_no_traceback(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text(_kernel("for i in range(N):\n    x[i * i] = 1.0\n"))
    res = subprocess.run([sys.executable, "-m", "looper.cli", "compile", str(f), "--size", "MINI"],
                         capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stderr.startswith(f"{f}:4:11: error: non-affine subscript")
    assert "Traceback" not in res.stderr and res.stdout == ""


MIN_IN_SUM = '''
SIZES = {"MINI": dict(N=10)}
def kernel(N: int, A: f64[N, N]):
    for i in range(N):
        for j in range(N):
            for k in range(min(i, j) + 1):
                A[i, j] += 1.0
            for k in range(2 * max(0, i - 3), N - min(i, 2) - 1):
                A[i, j] += 2.0
OUTPUTS = ["A"]
'''


def test_min_and_max_inside_affine_bounds_are_affine(tmp_path):
    """`range(min(i, j) + 1)` is affine: sums and constant factors distribute over min/max."""
    from looper.lang.parse import parse_source
    p = parse_source(MIN_IN_SUM, "t.py", "MINI")
    s0, s1 = p.statements
    import islpy as isl
    assert s0.domain.is_equal(isl.Set("{ S0[i, j, k] : 0 <= i, j <= 9 and 0 <= k <= i and k <= j }"))
    assert s1.domain.is_equal(isl.Set("{ S1[i, j, k] : 0 <= i, j <= 9 and max(0, 2i - 6) <= k < max(9 - i, 7) }"))
    bad = MIN_IN_SUM.replace("range(min(i, j) + 1)", "range(min(i, j) * i)")
    _expect(tmp_path, bad, 6, 28, ["non-affine loop bound"])


DEEP = '''
SIZES = {"S": dict(N=3)}
def kernel(N: int, A: f64[N, N, N, N, N, N, N]):
    for a in range(N):
        for b in range(N):
            for c in range(N):
                for d in range(N):
                    for e in range(N):
                        for f in range(N):
                            for g in range(N):
                                A[a, b, c, d, e, f, g] = A[a, b, c, d, e, f, g] * 0.5 + 1.0
OUTPUTS = ["A"]
'''


def test_a_nest_deeper_than_the_model_encodes_is_measured_instead(tmp_path):
    from looper.costmodel.features import featurize
    from looper.lang.parse import parse_source
    from looper.poly.deps import compute_dependences
    from looper.tune import Evaluator, TuneOptions, prepare
    from helpers import TARGET
    from looper.transforms.schedule import Schedule
    p = parse_source(DEEP, "deep.py", "S")
    assert featurize(Schedule(p)).comps  # no crash either
    search = prepare(p, TuneOptions(beam=1, max_affine=1, max_fusion=0, memo=False), TARGET)
    assert search.kind is Evaluator.MEASURE and "6 deep" in search.notes[0]
    assert search.run(compute_dependences(p)).best_score.ok
