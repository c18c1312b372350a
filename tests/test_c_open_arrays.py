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

CFLAGS = ["-O2", "-fopenmp", "-ffp-contract=off"]


def _build(src: Path, defines: list[str], exe: Path) -> Path:
    subprocess.run(["gcc", *CFLAGS, *defines, str(src), "-o", str(exe), "-lm"], check=True, capture_output=True)
    return exe


def _outputs(exe: Path, runs: list[str]) -> list[str]:
    out = []
    for args in runs:
        r = subprocess.run([str(exe), *args.split()], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, OMP_NUM_THREADS="2"))
        assert r.returncode == 0, r.stderr
        out.append(r.stdout)
    return out


def _optimize(src: Path, defines: list[str]) -> Path:
    res = CliRunner().invoke(main, ["optimize", str(src), "-q", "--no-speed-guard", *defines])
    assert res.exit_code == 0, res.output
    return src.with_name(src.stem + ".looper.c")


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
    out = _optimize(src, [])
    text = out.read_text()
    assert "looper_disjoint(A, 0, 30, B, 0, 29)" in text and "looper_disjoint(B, 0, 29, x, 2, 31)" in text
    runs = ["30", "21", "30 alias"]  # tuned, another size, overlapping arrays
    assert _outputs(_build(out, [], tmp_path / "new"), runs) == _outputs(_build(src, [], tmp_path / "old"), runs)
