"""C arrays whose declaration leaves the first extent open (`lang.c.views`, `lang.c.layout`).

looper takes the extent from what the subscripts reach at the sizes it specializes to, and the
in-place code tests that arrays which could conflict do not overlap on what the subscripts reach.
Every rewritten file must print exactly what the original prints, at the sizes it was tuned for
(looper's code runs) and at others (the original runs).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from click.testing import CliRunner

from looper.cli import main
from looper.lang.c.cfile import parse_c_file

from helpers import TUNED_MARK, mark_tuned_code, model_answer_rewritten

CFLAGS = ["-O2", "-fopenmp", "-ffp-contract=off"]


def _build(src: Path, defines: list[str], exe: Path) -> Path:
    subprocess.run(["gcc", *CFLAGS, *defines, str(src), "-o", str(exe), "-lm"], check=True, capture_output=True)
    return exe


def _outputs(exe: Path, runs: list[str], stderr: bool = False) -> list:
    out = []
    for args in runs:
        r = subprocess.run([str(exe), *args.split()], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, OMP_NUM_THREADS="2"))
        assert r.returncode == 0, r.stderr
        out.append((r.stdout, r.stderr) if stderr else r.stdout)
    return out


def _tuned(out: Path, runs: list[str], tmp_path: Path) -> list[bool]:
    """Which runs of the rewritten file take looper's code."""
    marked = tmp_path / "marked.c"
    marked.write_text(mark_tuned_code(out.read_text()))
    return [TUNED_MARK in err for _, err in _outputs(_build(marked, [], tmp_path / "marked"), runs, stderr=True)]


def _optimize(src: Path, defines: list[str]) -> Path:
    res = CliRunner().invoke(main, ["optimize", str(src), "-q", "--no-speed-guard", *defines])
    assert res.exit_code == 0, res.output
    return src.with_name(src.stem + ".looper.c")


def _rewritten(src: Path, tmp_path: Path) -> Path:
    """The file as `looper optimize` accepts it, every region rewritten (from the original
    schedule where that is the answer, which looper leaves as written: a small kernel on a
    machine whose thread team is slow to start may well keep it), so the overlap test is there."""
    _optimize(src, [])
    out = tmp_path / "rewritten.c"
    out.write_text(model_answer_rewritten(src))
    return out


OPEN_ROWS = r"""#include <stdio.h>
#include <stdlib.h>
#ifndef N
#define N 30
#endif
#define M 16
/* C89 array parameters: the first extent is open */
void smooth(int n, double A[][M], double B[][M], double x[])
{
  int i, j;
#pragma scop
  for (i = 0; i < n - 1; i++)
    for (j = 1; j < M; j++)
      B[i][j] = 0.5 * (A[i + 1][j] + A[i][j - 1]) + x[i + 2];
#pragma endscop
}

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : N;
  int alias = argc > 2;  /* B is A one row on: overlapping */
  static double pool[3 * N][M], x[N + 2];
  for (int a = 0; a < 3 * N; a++)
    for (int b = 0; b < M; b++)
      pool[a][b] = (double)((a * 7 + b * 3) % 11) / 11.0;
  for (int a = 0; a < N + 2; a++)
    x[a] = a * 0.25;
  smooth(n, pool, alias ? pool + 1 : pool + N, x);
  for (int a = 0; a < 3 * N; a++)
    for (int b = 0; b < M; b++)
      printf("%.17g%c", pool[a][b], b == M - 1 ? '\n' : ' ');
  return 0;
}
"""


def test_open_first_extent_from_the_subscripts(tmp_path):
    src = tmp_path / "rows.c"
    src.write_text(OPEN_ROWS)
    (scop,) = parse_c_file(src).scops
    arrays = scop.program.arrays
    # rows 0..n-1 of A, 0..n-2 of B, elements 2..n of x: the extents reach the last one
    assert arrays["A"].extent == (30, 16) and arrays["B"].extent == (29, 16) and arrays["x"].extent == (31,)
    assert scop.reach == {"A": (0, 30), "B": (0, 29), "x": (2, 31)}
    assert scop.may_overlap == (("A", "B"), ("B", "x"))
    out = _rewritten(src, tmp_path)
    text = out.read_text()
    assert "looper_disjoint(A, 0, 30, B, 0, 29)" in text and "looper_disjoint(B, 0, 29, x, 2, 31)" in text
    runs = ["30", "21", "30 alias"]  # tuned, another size, overlapping arrays
    assert _outputs(_build(out, [], tmp_path / "new"), runs) == _outputs(_build(src, [], tmp_path / "old"), runs)
    assert _tuned(out, runs, tmp_path) == [True, False, False]


# -- pointers ------------------------------------------------------------------------------------

POINTERS = r"""#include <stdio.h>
#include <stdlib.h>
#ifndef N
#define N 12
#endif
#ifndef LDA
#define LDA 16
#endif
/* y = A x on a padded row-major matrix, then a shifted copy whose inner index leaves its row
   (so S stays one-dimensional), in float through a const pointer */
void kernel(int n, int lda, const double *restrict A, double *y, const float *x, float *S)
{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++) {
    y[i] = 0.0;
    for (j = 0; j < n; j++)
      y[i] += A[i*lda + j] * x[j];
  }
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      S[i*n + j + 1] = x[j] * 2.0f + S[i*n + j];
#pragma endscop
}

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : N;
  double *A = malloc(sizeof(double) * N * LDA), *y = malloc(sizeof(double) * N);
  float *x = malloc(sizeof(float) * N), *S = malloc(sizeof(float) * (N * N + 1));
  for (int e = 0; e < N * LDA; e++)
    A[e] = (double)((e * 7) % 11) / 11.0;
  for (int e = 0; e < N; e++)
    x[e] = (float)(e % 5) / 5.0f;
  for (int e = 0; e <= N * N; e++)
    S[e] = (float)(e % 3);
  kernel(n, LDA, A, y, argc > 2 ? S : x, S);  /* argc > 2: x is S, which the scop writes */
  for (int e = 0; e < N; e++)
    printf("%.17g\n", y[e]);
  for (int e = 0; e <= N * N; e++)
    printf("%.9g\n", S[e]);
  return 0;
}
"""


def test_pointers_delinearized_or_flat(tmp_path):
    src = tmp_path / "ptr.c"
    src.write_text(POINTERS)
    (scop,) = parse_c_file(src).scops
    arrays = scop.program.arrays
    # A[i*lda + j]: two dimensions of extent lda; S[i*n + j + 1] has j + 1 == n: one dimension
    assert arrays["A"].extent == (12, 16) and scop.strides == {"A": (16, 1)}
    assert arrays["S"].extent == (145,) and arrays["x"].extent == (12,) and arrays["y"].extent == (12,)
    assert arrays["x"].dtype.ctype == "float"
    assert scop.reach == {"A": (0, 188), "y": (0, 12), "x": (0, 12), "S": (0, 145)}
    # A is only read: no test against it; the written y and S against every other pointer
    assert scop.may_overlap == (("A", "y"), ("A", "S"), ("y", "x"), ("y", "S"), ("x", "S"))
    out = _rewritten(src, tmp_path)  # whatever the search answered (it times, so it may keep the original)
    text = out.read_text()
    region = text[text.index("/* looper:"):text.index("} else {")]
    # the user's pointer, indexed through rows of its stride, as gcc vectorizes it
    assert "((double (*)[16])A)[" in region and "A[16*" not in region
    assert "looper_disjoint(x, 0, 12, S, 0, 145)" in region
    runs = ["12", "7", "12 alias"]  # tuned, another size, x and S the same pointer
    assert _outputs(_build(out, [], tmp_path / "new"), runs) == _outputs(_build(src, [], tmp_path / "old"), runs)
    assert _tuned(out, runs, tmp_path) == [True, False, False]


def test_delinearization():
    from looper.lang.c.layout import delinearize
    from looper.lang.c.polynomial import Polynomial as P

    i, j, k, n, m = P.variable("i"), P.variable("j"), P.variable("k"), P.size("n"), P.size("m")
    flat = (i.times(n) + j).times(m) + k + n.times(m) - P.constant(1)  # A[(i*n + j)*m + k + n*m - 1]
    d = delinearize([flat, k])
    assert d.strides == (("m", "n"), ("m",), ())
    assert d.split(flat) == (i + P.constant(1), j, k - P.constant(1))
    assert d.inner_extents({"n": 5, "m": 7}) == (5, 7) and d.stride_values({"n": 5, "m": 7}) == (35, 7, 1)
    assert delinearize([i.times(P.constant(1000)) + j]) is None  # literal strides: affine already
    assert delinearize([i.times(n) + j.times(m)]) is None  # n and m do not divide each other
    assert i.times(j) is None  # two loop variables: not affine at any sizes


SCALAR_TARGET = r"""#include <stdio.h>
#include <stdlib.h>
#ifndef N
#define N 8
#endif
double total = 1.0;
void sum(int n, const double *x, double *y)
{
  int i;
#pragma scop
  for (i = 0; i < n; i++) {
    total = total * 0.5 + x[0] * i;
    y[i] = total;
  }
#pragma endscop
}

int main(int argc, char **argv)
{
  double x[N], y[N];
  for (int e = 0; e < N; e++)
    x[e] = e + 0.25;
  sum(N, argc > 1 ? &total : x + 1, y);  /* aliasing: x points to the global the scop writes */
  for (int e = 0; e < N; e++)
    printf("%.17g\n", y[e]);
  printf("%.17g\n", total);
  return 0;
}
"""


def test_a_pointer_to_a_scalar_the_scop_writes(tmp_path):
    """A pointer may point at a global scalar: the overlap test covers it (`&total`)."""
    src = tmp_path / "scalar.c"
    src.write_text(SCALAR_TARGET)
    (scop,) = parse_c_file(src).scops
    assert scop.may_overlap == (("x", "y"), ("x", "total"), ("y", "total"))
    out = _rewritten(src, tmp_path)
    assert "looper_disjoint(x, 0, 1, &total, 0, 1)" in out.read_text()
    runs = ["", "alias"]
    assert _outputs(_build(out, [], tmp_path / "new"), runs) == _outputs(_build(src, [], tmp_path / "old"), runs)
    assert _tuned(out, runs, tmp_path) == [True, False]
