"""The C front end and the in-place output, on self-contained C files (no shared data needed).

The differential test builds many legal schedules of one C file (the search driven by a hash
stand-in evaluator, as tests/search/test_differential.py does for Python programs), writes each into the
file in place, and checks the program prints exactly what the original prints, at the sizes looper
optimized for (the tuned code runs) and at others (the original code runs).
"""
from __future__ import annotations

import random
import subprocess
from pathlib import Path

from click.testing import CliRunner

from looper.cli import main
from looper.codegen.inplace import inplace_source
from looper.ir.program import Affine, DType, MinMax
from looper.ir.schedule import original
from looper.lang.c.cfile import parse_c_file
from looper.poly.deps import compute_dependences
from looper.search.beam import beam_search
from looper.search.policy import SearchPolicy

from helpers import HashScores, build_and_run

PROGRAM = r"""/* A small C program with one scop: a triangular product, a stencil in time, a backward
   substitution with a kernel-local accumulator, and a reduction into a global scalar. */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#ifndef N
#define N 40
#endif
#define TSTEPS 5
static double total;

static void kernel(int n, int tsteps, double A[N][N], double B[N][N], double C[N][N],
                   double x[N], double y[N])
{
  int t, i, j, k;
  double s;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j <= i; j++) {
      C[i][j] = 0.5 * C[i][j];
      for (k = 0; k < n; k++)
        C[i][j] += A[i][k] * B[j][k];
    }
  for (t = 0; t < tsteps; t++) {
    for (i = 1; i < n - 1; i++)
      y[i] = 0.33 * (x[i - 1] + x[i] + x[i + 1]);
    for (i = 1; i < n - 1; i++)
      x[i] = y[i];
  }
  for (i = n - 1; i >= 0; i--) {
    s = 0.0;
    for (j = i + 1; j < n; j++)
      s += C[j][i] * x[j];
    x[i] = (x[i] - s) / (C[i][i] + 1.0);
  }
  total = 0.0;
  for (i = 0; i < n; i++)
    total += x[i] > 0 ? sqrt(x[i]) : -x[i];
#pragma endscop
}

static double A[N][N], B[N][N], C[N][N], x[N], y[N];

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : N;
  int alias = argc > 2;  /* C passed as A: the tuned code must not run on overlapping arrays */
  for (int i = 0; i < N; i++) {
    x[i] = (double)(i % 7) / 7.0;
    y[i] = 0;
    for (int j = 0; j < N; j++) {
      A[i][j] = (double)((i * j + 1) % 11) / 11.0;
      B[i][j] = (double)((i + 2 * j) % 13) / 13.0;
      C[i][j] = (double)((i * (j + 3)) % 17) / 17.0 + (i == j);
    }
  }
  kernel(n, TSTEPS, A, B, alias ? A : C, x, y);
  for (int i = 0; i < N; i++) {
    printf("%.17g %.17g\n", x[i], y[i]);
    for (int j = 0; j < N; j++)
      printf("%.17g ", C[i][j]);
    printf("\n");
  }
  printf("%.17g\n", total);
  return 0;
}
"""



def _write(tmp_path: Path, text: str, name: str = "prog.c") -> Path:
    f = tmp_path / name
    f.write_bytes(text.encode())
    return f


def test_inplace_schedules_compute_the_original_at_every_size(tmp_path):
    src = _write(tmp_path, PROGRAM)
    cf = parse_c_file(src)
    (scop,) = cf.scops
    program = scop.program
    assert scop.size_vars == {"n": 40, "tsteps": 5}
    assert program.arrays["s"].role == "local"  # dead after the scop: privatizable
    assert program.arrays["total"].role == "param"  # a global: the caller sees it
    assert {o.array for o in program.outputs} == {"C", "x", "y", "total"}
    result = beam_search(program, compute_dependences(program), HashScores(seed=3),
                         SearchPolicy(beam=3, max_affine=2))
    legal = [e.schedule for e in result.evaluated if e.schedule.steps]
    rng = random.Random(0)
    sample = rng.sample(legal, min(6, len(legal)))
    sample += [s for s in sorted(legal, key=lambda s: -len(s.steps))[:3] if s not in sample]
    sample += [next(s for s in legal if "parallelize" in s.describe())]
    runs = ["40", "33", "40 alias"]  # tuned sizes, other sizes, overlapping arrays
    expected = build_and_run(src, runs)
    for k, sched in enumerate(sample):
        text = inplace_source(cf, [sched.lowered], [f"looper: {sched.describe()}"])
        out = _write(tmp_path, text, f"cand{k}.c")
        assert build_and_run(out, runs) == expected, sched.describe()


def test_output_keeps_every_byte_outside_the_region(tmp_path):
    text = PROGRAM.replace("\n", "\r\n")  # CRLF line endings stay CRLF
    src = _write(tmp_path, text)
    cf = parse_c_file(src)
    (scop,) = cf.scops
    out = inplace_source(cf, [original(scop.program)], ["looper: original"])
    assert out.startswith(text[:scop.begin]) and out.endswith(text[scop.end:])
    middle = out[scop.begin:len(out) - (len(text) - scop.end)]
    assert "#pragma scop" not in middle and "\r\n" in middle and "\n" not in middle.replace("\r\n", "")
    assert "if (n == 40\r\n      && tsteps == 5\r\n      && looper_disjoint(A, 0, 40, C, 0, 40)" in middle
    assert "looper_disjoint(A, 0, 40, B" not in middle  # both only read: overlapping is harmless
    assert scop.may_overlap == (("A", "C"), ("A", "x"), ("A", "y"), ("B", "C"), ("B", "x"), ("B", "y"),
                                ("C", "x"), ("C", "y"), ("x", "y"))
    assert middle.count(scop.inner) == 1  # the fallback is the original text


def test_front_end_types_sizes_and_bounds(tmp_path):
    src = _write(tmp_path, r"""#include <stdint.h>
#include <stdio.h>
typedef double real;
static real G[64] __attribute__((aligned(64)));
static inline __attribute__((always_inline)) int helper(int v) { __asm__ volatile("" ::: "memory"); return v; }

void f(int n, int m, real A[restrict n][m], int64_t B[n], const int c)
{
  int i, j;
  const int h = 7;
  float w;
#pragma scop
  for (i = n - 1; i >= 0; i--)
    for (j = 0; j <= (i < m - 1 ? i : m - 1); ++j)
      A[i][j] = A[i][j] * 2.0f + (double)B[i];
  for (int q = 0; q < h; q += 1)
    G[q] = w = c * 0.5f;
  for (i = 0; i < n; i = i + 1)
    B[i]++;
#pragma endscop
  printf("%f\n", w);
}
""")
    cf = parse_c_file(src, ("-DN=30", "-DM=20"))
    (scop,) = cf.scops
    p = scop.program
    assert scop.size_vars == {"n": 30, "m": 20, "h": 7}
    # sizes are constants in the program (the in-place code runs only at these values)
    assert p.arrays["A"].dtype is DType.F64 and p.arrays["A"].extent == (30, 20) and p.sizes == {}
    assert p.arrays["B"].dtype is DType.I64 and p.arrays["G"].extent == (64,)
    assert p.arrays["w"].dtype is DType.F32 and p.arrays["w"].role == "param"  # read after the scop
    outer = p.kernel[0]
    assert outer.step == -1 and outer.lower == Affine.constant(29) and outer.upper == Affine.constant(-1)
    assert outer.body[0].upper == MinMax("min", (Affine.of("i") + Affine.constant(1), Affine.constant(20)))
    chain = [s.body for s in p.statements if s.body.target.array in ("w", "G")]
    assert [a.target.array for a in chain] == ["w", "G"]  # G[q] = w = e: w first, then G[q] = w
    assert [s.body.op for s in p.statements][-1] == "+="


def test_names_never_clash_with_the_users(tmp_path):
    src = _write(tmp_path, r"""#define min(a, b) ((a) < (b) ? (a) : (b))
#define N 50
void g(int n, double A[N][N], double looper_c1)
{
  int i, j, c1 = 3;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      A[i][j] = A[i][j] + looper_c1 * c1;
#pragma endscop
}
int uses_min(int a) { return min(a, 2); }
""")
    cf = parse_c_file(src)
    assert cf.prefix == "looper1_"
    program = cf.scops[0].program
    result = beam_search(program, compute_dependences(program), HashScores(seed=1),
                         SearchPolicy(beam=3, max_affine=1))
    tiled = [e.schedule for e in result.evaluated if "tile" in e.schedule.describe()]
    text = inplace_source(cf, [tiled[0].lowered], ["looper: tiled"])
    assert "looper1_c" in text and "looper_c1 * c1" in text
    assert '#pragma push_macro("min")' in text and '#pragma pop_macro("min")' in text
    obj = tmp_path / "g.o"
    _write(tmp_path, text, "g.c")
    subprocess.run(["gcc", "-c", "-Wall", "-Werror=implicit-function-declaration", str(tmp_path / "g.c"),
                    "-o", str(obj)], check=True)


def test_two_scops_and_constant_bounds(tmp_path):
    src = _write(tmp_path, r"""static double A[100], B[100];
void first(void)
{
  int i;
#pragma scop
  for (i = 0; i < 100; i++)
    A[i] = 2.0 * A[i];
#pragma endscop
}
void second(int n)
{
  int i;
#pragma scop
  for (i = 1; i < 100; i++)
    B[i] = B[i - 1] + A[i];
#pragma endscop
}
""")
    cf = parse_c_file(src)
    assert [s.function for s in cf.scops] == ["first", "second"]
    assert [s.program.name for s in cf.scops] == ["prog-1", "prog-2"]
    text = inplace_source(cf, [original(s.program) for s in cf.scops], ["a", "b"])
    assert text.count("{\n") >= 2 and "if (" not in text  # no sizes: no test
    assert "/* a */" in text and "/* b */" in text


def test_cli_on_a_c_file(tmp_path):
    src = _write(tmp_path, PROGRAM)
    res = CliRunner().invoke(main, ["optimize", str(src), "-q", "--json", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    out = tmp_path / "prog.looper.c"
    assert f"wrote {out}" in res.output and "predicted speedup" in res.output
    assert build_and_run(out, ["40", "33"]) == build_and_run(src, ["40", "33"])
    import json
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["scops"][0]["function"] == "kernel" and report["scops"][0]["tuned_for"] == {"n": 40, "tsteps": 5}
    # compile / run: the scop in looper's own harness, with looper's init
    res = CliRunner().invoke(main, ["run", str(src), "--dump"])
    assert res.exit_code == 0, res.output
    assert "begin dump: total" in res.output and "kernel time" in res.output
    res = CliRunner().invoke(main, ["compile", str(src), "-D", "N=20", "-o", str(tmp_path / "h.c")])
    assert res.exit_code == 0, res.output
    assert "static double A[20][20]" in (tmp_path / "h.c").read_text()


def test_names_of_the_harness_and_sizes_in_expressions(tmp_path):
    """Data named like the harness' own locals (f, r, d0) and sizes used as values: looper's
    harness builds and runs them (internal names, sizes as constants), the in-place output
    prints the user's names."""
    src = _write(tmp_path, r"""#define G 12
double f[G][G], r[G];
void k(int g)
{
  int i, j;
  double d0;
#pragma scop
  for (i = 0; i < g; i++) {
    d0 = 0.0;
    for (j = 0; j <= i; j++)
      d0 += f[i][j] * (double)g;
    r[i] = d0 / (g - 1);
  }
#pragma endscop
}
""")
    res = CliRunner().invoke(main, ["run", str(src), "--dump"])
    assert res.exit_code == 0, res.output
    assert "begin dump: looper_r" in res.output
    cf = parse_c_file(src)
    (scop,) = cf.scops
    assert scop.user_names == {"looper_f": "f", "looper_r": "r", "looper_d0": "d0"}
    text = inplace_source(cf, [original(scop.program)], ["looper: original"])
    assert "d0 += f[looper_c1][looper_c3] * (double)12;" in text and "r[looper_c1] = d0 / (12 - 1);" in text
