/* dgemm_array: the array-parameter twin of dgemm.c: the same product, C = alpha*A*B + beta*C,
   on C89 array parameters with the leading dimensions as their row extents (A[][LDA]), storage
   from malloc.  looper takes the first extent of each from what the subscripts reach.

   usage: dgemm_array [MODE [m n k]]
     print    (default) run once, print C
     time     run 1 + REPS times, print the first call's time, the median of the rest, a checksum
     same     pass C as A too (the same array twice), print C
     overlap  A and C overlapping slices of one buffer, print C */
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

void dgemm(int m, int n, int k, double alpha, const double A[][LDA], const double B[][LDB], double beta,
           double C[][LDC])
{
  int i, j, p;
#pragma scop
  for (i = 0; i < m; i++) {
    for (j = 0; j < n; j++)
      C[i][j] *= beta;
    for (p = 0; p < k; p++)
      for (j = 0; j < n; j++)
        C[i][j] += alpha * A[i][p] * B[p][j];
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
  int lda = LDA, ldb = LDB, ldc = LDC;
  if (k > LDA || n > LDB || n > LDC)
    return 1;  /* the rows are LDA, LDB, LDC elements long */
  long asize = (long)m * lda, csize = (long)m * ldc;
  long big = (asize > csize ? asize : csize) + csize;
  double *pool = malloc(sizeof(double) * big);
  double *B = malloc(sizeof(double) * ((long)k * ldb + 1));
  double *A = pool, *C = pool + asize;
  if (!strcmp(mode, "same")) {
    A = C = pool;  /* A is C (LDA == LDC) */
  } else if (!strcmp(mode, "overlap")) {
    C = pool + asize / 2;  /* C's first rows are A's last ones */
  }
  fill(pool, big, 1);
  fill(B, (long)k * ldb + 1, 2);
  if (!strcmp(mode, "time")) {
    double t[REPS + 1];
    for (int r = 0; r <= REPS; r++) {
      double t0 = omp_get_wtime();
      dgemm(m, n, k, 1.5, (const double (*)[LDA])A, (const double (*)[LDB])B, 1.2, (double (*)[LDC])C);
      t[r] = omp_get_wtime() - t0;
    }
    double sum = 0;
    for (long e = 0; e < csize; e++)
      sum += C[e];
    qsort(t + 1, REPS, sizeof(double), by_value);
    printf("%.6f s first call, %.6f s (median of %d more) checksum %.17g\n", t[0], t[1 + REPS / 2], REPS, sum);
  } else {
    dgemm(m, n, k, 1.5, (const double (*)[LDA])A, (const double (*)[LDB])B, 1.2, (double (*)[LDC])C);
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++)
        printf("%.17g%c", C[(long)i * ldc + j], j == n - 1 ? '\n' : ' ');
  }
  free(pool);
  free(B);
  return 0;
}
