/* dgemm: C = alpha*A*B + beta*C, BLAS-style: row-major matrices behind pointers, each with its
   leading dimension (rows padded to lda, ldb, ldc elements), storage from malloc.

   looper specializes the scop to the sizes of the macros below (-D M=... to change them): there
   A[i*lda + p] is affine, and looper sees A, B and C as two-dimensional.  Its code runs only at
   those sizes and when C overlaps neither A nor B; otherwise the original loops run.

   usage: dgemm [MODE [m n k]]
     print    (default) run once, print C
     time     run 1 + REPS times, print the first call's time, the median of the rest, a checksum
     same     pass C as A too (the same pointer twice), print C
     overlap  A and C overlapping slices of one buffer, print C
   Array twin: dgemm_array.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#ifndef M
#define M 200
#endif
#ifndef N
#define N 220
#endif
#ifndef K
#define K 240
#endif
#ifndef LDA
#define LDA (K + 8)
#endif
#ifndef LDB
#define LDB (N + 4)
#endif
#ifndef LDC
#define LDC (N + 4)
#endif
#ifndef REPS
#define REPS 5
#endif

void dgemm(int m, int n, int k, double alpha, const double *A, int lda, const double *B, int ldb,
           double beta, double *C, int ldc)
{
  int i, j, p;
#pragma scop
  for (i = 0; i < m; i++) {
    for (j = 0; j < n; j++)
      C[i*ldc + j] *= beta;
    for (p = 0; p < k; p++)
      for (j = 0; j < n; j++)
        C[i*ldc + j] += alpha * A[i*lda + p] * B[p*ldb + j];
  }
#pragma endscop
}

static void fill(double *x, long count, int seed)
{
  for (long e = 0; e < count; e++)
    x[e] = (double)((e * 7 + seed * 13) % 101) / 101.0 - 0.5;
}

static int by_value(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "print";
  int m = argc > 4 ? atoi(argv[2]) : M, n = argc > 4 ? atoi(argv[3]) : N, k = argc > 4 ? atoi(argv[4]) : K;
  int lda = LDA > k ? LDA : k, ldb = LDB > n ? LDB : n, ldc = LDC > n ? LDC : n;
  long asize = (long)m * lda, csize = (long)m * ldc;
  long big = (asize > csize ? asize : csize) + csize;
  double *pool = malloc(sizeof(double) * big);
  double *B = malloc(sizeof(double) * ((long)k * ldb + 1));
  double *A = pool, *C = pool + asize;
  if (!strcmp(mode, "same")) {
    lda = ldc;  /* A is C: its rows are C's */
    A = C = pool;
  } else if (!strcmp(mode, "overlap")) {
    C = pool + asize / 2;  /* C's first rows are A's last ones */
  }
  fill(pool, big, 1);
  fill(B, (long)k * ldb + 1, 2);
  if (!strcmp(mode, "time")) {
    double t[REPS + 1];
    for (int r = 0; r <= REPS; r++) {
      double t0 = omp_get_wtime();
      dgemm(m, n, k, 1.5, A, lda, B, ldb, 1.2, C, ldc);
      t[r] = omp_get_wtime() - t0;
    }
    double sum = 0;
    for (long e = 0; e < csize; e++)
      sum += C[e];
    qsort(t + 1, REPS, sizeof(double), by_value);
    printf("%.6f s first call, %.6f s (median of %d more) checksum %.17g\n", t[0], t[1 + REPS / 2], REPS, sum);
  } else {
    dgemm(m, n, k, 1.5, A, lda, B, ldb, 1.2, C, ldc);
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++)
        printf("%.17g%c", C[(long)i * ldc + j], j == n - 1 ? '\n' : ' ');
  }
  free(pool);
  free(B);
  return 0;
}
