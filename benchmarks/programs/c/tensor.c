/* tensor: a 3-D tensor contraction on flat arrays, C[i][j][l] = sum_k A[i][j][k] * B[k][l],
   written as C[(i*nj + j)*nl + l] and A[(i*nj + j)*nk + k] (row-major, through pointers).

   looper specializes the scop to the sizes of the macros below (-D NI=... to change them): there
   the subscripts are affine, and looper sees A and C as three-dimensional, B as two-dimensional.
   Its code runs only at those sizes and when C overlaps neither A nor B; otherwise the original
   loops run.

   usage: tensor [MODE [ni nj nk nl]]
     print    (default) run once, print C
     time     run 1 + REPS times, print the first call's time, the median of the rest, a checksum
     same     pass C as A too (the same pointer twice), print C
     overlap  C starts halfway into A's buffer (overlapping slices), print C
   Array twin: tensor_array.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#ifndef NI
#define NI 64
#endif
#ifndef NJ
#define NJ 60
#endif
#ifndef NK
#define NK 70
#endif
#ifndef NL
#define NL 80
#endif
#ifndef REPS
#define REPS 5
#endif

void contract(int ni, int nj, int nk, int nl, double *C, const double *A, const double *restrict B)
{
  int i, j, k, l;
#pragma scop
  for (i = 0; i < ni; i++)
    for (j = 0; j < nj; j++)
      for (l = 0; l < nl; l++) {
        C[(i*nj + j)*nl + l] = 0.0;
        for (k = 0; k < nk; k++)
          C[(i*nj + j)*nl + l] += A[(i*nj + j)*nk + k] * B[k*nl + l];
      }
#pragma endscop
}

static int by_value(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "print";
  int ni = argc > 5 ? atoi(argv[2]) : NI, nj = argc > 5 ? atoi(argv[3]) : NJ;
  int nk = argc > 5 ? atoi(argv[4]) : NK, nl = argc > 5 ? atoi(argv[5]) : NL;
  long asize = (long)ni * nj * nk, csize = (long)ni * nj * nl;
  long big = (asize > csize ? asize : csize) + csize;
  double *pool = malloc(sizeof(double) * big);
  double *B = malloc(sizeof(double) * nk * nl);
  double *A = pool, *C = pool + asize;
  if (!strcmp(mode, "same"))
    A = C = pool;  /* with nk == nl, A is C */
  else if (!strcmp(mode, "overlap"))
    C = pool + asize / 2;
  for (long e = 0; e < big; e++)
    pool[e] = (double)((e * 7) % 101) / 101.0 - 0.5;
  for (long e = 0; e < (long)nk * nl; e++)
    B[e] = (double)((e * 13 + 5) % 97) / 97.0;
  if (!strcmp(mode, "time")) {
    double t[REPS + 1];
    for (int r = 0; r <= REPS; r++) {
      double t0 = omp_get_wtime();
      contract(ni, nj, nk, nl, C, A, B);
      t[r] = omp_get_wtime() - t0;
    }
    double sum = 0;
    for (long e = 0; e < csize; e++)
      sum += C[e];
    qsort(t + 1, REPS, sizeof(double), by_value);
    printf("%.6f s first call, %.6f s (median of %d more) checksum %.17g\n", t[0], t[1 + REPS / 2], REPS, sum);
  } else {
    contract(ni, nj, nk, nl, C, A, B);
    for (long e = 0; e < csize; e++)
      printf("%.17g%c", C[e], e % nl == nl - 1 ? '\n' : ' ');
  }
  free(pool);
  free(B);
  return 0;
}
