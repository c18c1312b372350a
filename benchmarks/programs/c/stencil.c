/* stencil: a 2-D Jacobi iteration (five points) on flat arrays from malloc, indexed A[i*n + j],
   TSTEPS sweeps of A -> B -> A.

   The arrays are local pointers of the function that runs the scop.  looper specializes the scop
   to the sizes of the macros below (-D N=... -D TSTEPS=... to change them): there A[i*n + j] is
   affine, and looper sees A and B as two-dimensional.  Its code runs only at those sizes and when
   A and B do not overlap; otherwise the original loops run.

   usage: stencil [MODE [n tsteps]]
     print    (default) run once, print A and B
     time     run 1 + REPS times, print the first call's time, the median of the rest, a checksum
     overlap  B starts n elements after A in one buffer (overlapping slices), print A and B
   Array twin: stencil_array.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#ifndef N
#define N 500
#endif
#ifndef TSTEPS
#define TSTEPS 20
#endif
#ifndef REPS
#define REPS 5
#endif

static double sweep(int n, int tsteps, const char *mode)
{
  int t, i, j;
  long size = (long)n * n;
  double *pool = malloc(sizeof(double) * 2 * size);
  double *A = pool;
  double *B = strcmp(mode, "overlap") ? pool + size : pool + n;
  for (long e = 0; e < 2 * size; e++)
    pool[e] = (double)((e * 7) % 101) / 101.0;
  double t0 = omp_get_wtime();
#pragma scop
  for (t = 0; t < tsteps; t++) {
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        B[i*n + j] = 0.2 * (A[i*n + j] + A[i*n + j - 1] + A[i*n + j + 1] + A[(i - 1)*n + j] + A[(i + 1)*n + j]);
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        A[i*n + j] = 0.2 * (B[i*n + j] + B[i*n + j - 1] + B[i*n + j + 1] + B[(i - 1)*n + j] + B[(i + 1)*n + j]);
  }
#pragma endscop
  double seconds = omp_get_wtime() - t0;
  if (!strcmp(mode, "time")) {
    double sum = 0;
    for (long e = 0; e < size; e++)
      sum += A[e] + B[e];
    printf("checksum %.17g\n", sum);
  } else {
    for (long e = 0; e < size; e++)
      printf("%.17g %.17g%c", A[e], B[e], e % n == n - 1 ? '\n' : ' ');
  }
  free(pool);
  return seconds;
}

static int by_value(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "print";
  int n = argc > 3 ? atoi(argv[2]) : N, tsteps = argc > 3 ? atoi(argv[3]) : TSTEPS;
  if (!strcmp(mode, "time")) {
    double t[REPS + 1];
    for (int r = 0; r <= REPS; r++)
      t[r] = sweep(n, tsteps, mode);
    qsort(t + 1, REPS, sizeof(double), by_value);
    printf("%.6f s first call, %.6f s (median of %d more)\n", t[0], t[1 + REPS / 2], REPS);
  } else {
    sweep(n, tsteps, mode);
  }
  return 0;
}
