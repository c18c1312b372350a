/* The cores' floating-point peak: independent chains of vector fused multiply-adds.
 *
 * Every thread keeps NACC accumulators of one vector register each and updates them with
 * acc = acc * x + y for `iters` iterations: NACC independent dependence chains, enough to hide
 * the FMA latency on every pipe (latency 4-5 cycles x 2 pipes needs 8-10), and few enough to
 * stay in registers with x and y (12 + 2 <= 16 on AVX2; AVX-512 has 32).  With
 * `gcc -O3 -march=native` each update is one vfmadd on the widest registers the machine has
 * (the vector width comes from the compiler's own target macros, never assumed).
 *
 * Build: -DREAL=double or -DREAL=float, -fopenmp.  Run: fma_peak SECONDS.  It prints
 * `flops seconds` of the best of several timed repetitions, each sized to about SECONDS / 8,
 * all threads (OMP_NUM_THREADS) running their chains between two barriers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

#ifndef REAL
#define REAL double
#endif

#if defined(__AVX512F__)
#define VEC_BYTES 64
#elif defined(__AVX__)
#define VEC_BYTES 32
#else
#define VEC_BYTES 16
#endif

#define NACC 12

typedef REAL vec __attribute__((vector_size(VEC_BYTES)));
#define LANES ((int)(VEC_BYTES / sizeof(REAL)))

/* One thread's chains: 2 * NACC * LANES flops per iteration.  noinline keeps the hot loop one
 * function whose disassembly can be checked (vfmadd on zmm/ymm registers, nothing else). */
__attribute__((noinline)) static REAL chains(long iters, REAL xs, REAL ys)
{
  vec x, y, acc[NACC];
  for (int l = 0; l < LANES; l++) { x[l] = xs; y[l] = ys; }
  for (int k = 0; k < NACC; k++) acc[k] = y * (REAL)(k + 1);
  for (long it = 0; it < iters; it++) {
#pragma GCC unroll 16
    for (int k = 0; k < NACC; k++) acc[k] = acc[k] * x + y;
  }
  vec s = acc[0];
  for (int k = 1; k < NACC; k++) s += acc[k];
  REAL r = 0;
  for (int l = 0; l < LANES; l++) r += s[l];
  return r;
}

/* All threads run `iters` iterations; the wall time from the first barrier to the last one. */
static double timed(long iters, REAL xs, REAL ys, volatile REAL *sink)
{
  double t0 = 0, t1 = 0;
#pragma omp parallel
  {
#pragma omp barrier
#pragma omp master
    t0 = omp_get_wtime();
    REAL r = chains(iters, xs, ys);
#pragma omp barrier
#pragma omp master
    t1 = omp_get_wtime();
#pragma omp critical
    *sink += r;
  }
  return t1 - t0;
}

int main(int argc, char **argv)
{
  double budget = argc > 1 ? atof(argv[1]) : 1.0;
  /* x just below 1 and y small: the chains converge to y / (1 - x), never overflow nor go
   * subnormal; read from the command line so that nothing is computed at compile time */
  REAL xs = (REAL)(argc > 2 ? atof(argv[2]) : 0.999999), ys = (REAL)1e-6;
  volatile REAL sink = 0;
  int threads = omp_get_max_threads();
  long iters = 1000;
  while (timed(iters, xs, ys, &sink) < budget / 64 && iters < (1L << 40)) iters *= 2;
  double best = 1e300, spent = 0;
  for (int rep = 0; rep < 100 && spent < budget; rep++) {
    double t = timed(iters, xs, ys, &sink);
    spent += t;
    if (t < best) best = t;
  }
  double flops = 2.0 * NACC * LANES * (double)iters * threads;
  printf("%.17g %.17g %d %d %g\n", flops, best, threads, LANES, (double)sink);
  return 0;
}
