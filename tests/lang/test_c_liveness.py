"""Loop variables of a scop that the code after it assigns again (`lang.c.liveness`).

looper's code never assigns the scop's loop variables, so a variable the rest of the function
reads before assigning would see another value: such a scop is refused.  A variable that every
path assigns first is dead at the scop's end, and the scop is rewritten: its outputs must then be
exactly the original's (the program prints everything it computes, the loop variables' later
values included).
"""
from __future__ import annotations

import pytest
from click.testing import CliRunner

import looper
from looper.cli import main
from looper.lang.c.cfile import parse_c_file

from helpers import build_and_run, every_region_rewritten


HEAD = r"""#include <stdio.h>
#include <stdlib.h>
#ifndef N
#define N 24
#endif
static double A[N][N], B[N][N];
"""

MAIN = r"""
int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : N;
  for (int a = 0; a < N; a++)
    for (int b = 0; b < N; b++) {
      A[a][b] = (double)((a * 7 + b * 3) % 11) / 11.0;
      B[a][b] = (double)((a + 5 * b) % 13) / 13.0;
    }
  kernel(n);
  for (int a = 0; a < N; a++)
    for (int b = 0; b < N; b++)
      printf("%.17g%c", A[a][b], b == N - 1 ? '\n' : ' ');
  return 0;
}
"""

SCOP = r"""#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      A[i][j] = A[i][j] * 0.5 + B[j][i];
#pragma endscop
"""

# Code after the scop in which every path assigns i and j before reading them.
DEAD = {
    # the ordinary print loop: the inner `for` sets j before anything reads it (and when the outer
    # loop does not run, nothing reads j at all)
    "later_loops": """  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      printf("%d %d %.17g\\n", i, j, A[i][j]);
""",
    # a second scop in the same function, on the same loop variables
    "second_scop": """#pragma scop
  for (i = 0; i < n; i++)
    for (j = 1; j < n; j++)
      B[i][j] = B[i][j - 1] + A[i][j];
#pragma endscop
  printf("%.17g\\n", B[n - 1][n - 1]);
""",
    # an assignment inside a loop that runs at least once (constant bounds), both branches of an
    # if, a `while (1)` left by return, and a declaration that shadows j in a block
    "always_runs": """  for (int t = 0; t < 3; t++) {
    i = t * 2;
    printf("%d\\n", i);
  }
  printf("%d\\n", i);
  if (n > 5)
    j = 1;
  else
    j = 2;
  printf("%d\\n", j);
  {
    int j = 7;
    printf("%d\\n", j);
  }
  j = j + 1;
  printf("%d\\n", j);
""",
    "do_while": """  do {
    j = 3;
  } while (j < 0);
  i = j > 2 ? (j = 4) : (j = 5);
  printf("%d %d\\n", i, j);
""",
}

# Code after the scop that may read i or j as the scop left them: refused, naming the line.
LIVE = {
    # the outer loop may not run (n == 0): then j is read with the scop's value
    "after_maybe_empty_loop": ("""  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      A[i][j] += 1.0;
  printf("%d\\n", j);
""", "j", 4),
    "one_branch": ("""  if (n > 5)
    j = 1;
  printf("%d\\n", j);
""", "j", 3),
    "break_skips_the_assignment": ("""  for (int t = 0; t < 3; t++) {
    if (A[t][0] > 0.5)
      break;
    i = t;
  }
  printf("%d\\n", i);
""", "i", 6),
    "compound_assignment": ("""  i += 1;
  printf("%d\\n", i);
""", "i", 1),
    "while_condition": ("""  while (j < n)
    j++;
""", "j", 1),
    "self_read": ("""  j = j * 2;
""", "j", 1),
}


def _program(after: str) -> str:
    body = "static void kernel(int n)\n{\n  int i, j;\n" + SCOP + after + "}\n"
    return HEAD + body + MAIN


@pytest.mark.parametrize("case", sorted(DEAD))
def test_variables_assigned_again_are_dead(tmp_path, case):
    src = tmp_path / "reuse.c"
    src.write_text(_program(DEAD[case]))
    res = CliRunner().invoke(main, ["optimize", str(src), "-q", "--no-speed-guard"])
    assert res.exit_code == 0, res.output  # accepted
    # the region as looper writes it (from the original schedule, where that is the answer)
    out = tmp_path / "reuse.looper.c"
    text = every_region_rewritten(looper.optimize(src, evaluator="model"))
    out.write_text(text)
    assert "looper_c" in text and "if (n == 24)" in text  # the tuned code is there
    runs = ["24", "17", "0"]  # the tuned size, another size, nothing to do
    assert build_and_run(out, runs) == build_and_run(src, runs)


@pytest.mark.parametrize("case", sorted(LIVE))
def test_variables_read_after_the_scop_are_refused(tmp_path, case):
    after, name, offset = LIVE[case]
    src = tmp_path / "live.c"
    src.write_text(_program(after))
    res = CliRunner().invoke(main, ["optimize", str(src), "-q"])
    end = _program("").split("\n").index("#pragma endscop") + 1
    assert res.exit_code == 2, res.output
    assert res.output.strip() == (
        f"{src}:{end}:1: error: '{name}', a loop variable of the scop, may be read after the scop "
        f"(line {end + offset}): looper's code does not leave it at the value the original loops do "
        "(use a local, assigned before it is read again)")
    assert not (tmp_path / "live.looper.c").exists()


def test_a_privatized_scalar_dead_after_a_later_loop(tmp_path):
    """The same analysis decides which scalars the search may privatize."""
    src = tmp_path / "priv.c"
    src.write_text(HEAD + r"""static void kernel(int n)
{
  int i, j;
  double s;
#pragma scop
  for (i = 0; i < n; i++) {
    s = 0.0;
    for (j = 0; j < n; j++)
      s += A[i][j];
    B[i][0] = s;
  }
#pragma endscop
  for (i = 0; i < 2; i++)
    s = (double)i;
  printf("%.17g\n", s);
}
""" + MAIN)
    (scop,) = parse_c_file(src).scops
    assert scop.program.arrays["s"].role == "local"
