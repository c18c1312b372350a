/* stencil_array: the array-parameter twin of stencil.c: the same Jacobi sweeps on array
   parameters double A[N][N], B[N][N] (storage from malloc), the grid n x n in their corner.

   usage: stencil_array [MODE [n tsteps]]
     print    (default) run once, print A and B
     time     run 1 + REPS times, print the first call's time, the median of the rest, a checksum
     overlap  B starts one row after A in one buffer (overlapping slices), print A and B */
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

static void jacobi(int n, int tsteps, double A[N][N], double B[N][N])
{
  int t, i, j;
#pragma scop
  for (t = 0; t < tsteps; t++) {
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][j + 1] + A[i - 1][j] + A[i + 1][j]);
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        A[i][j] = 0.2 * (B[i][j] + B[i][j - 1] + B[i][j + 1] + B[i - 1][j] + B[i + 1][j]);
  }
#pragma endscop
}

static double sweep(int n, int tsteps, const char *mode)
{
  long size = (long)N * N;
  double *pool = malloc(sizeof(double) * 2 * size);
  double (*A)[N] = (double (*)[N])pool;
  double (*B)[N] = (double (*)[N])(strcmp(mode, "overlap") ? pool + size : pool + N);
  if (n > N)
    exit(1);
  for (long e = 0; e < 2 * size; e++)
    pool[e] = (double)((e * 7) % 101) / 101.0;
  double t0 = omp_get_wtime();
  jacobi(n, tsteps, A, B);
  double seconds = omp_get_wtime() - t0;
  if (!strcmp(mode, "time")) {
    double sum = 0;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        sum += A[i][j] + B[i][j];
    printf("checksum %.17g\n", sum);
  } else {
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        printf("%.17g %.17g%c", A[i][j], B[i][j], j == n - 1 ? '\n' : ' ');
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
