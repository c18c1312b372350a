/* Memory bandwidth: STREAM's triad a[i] = b[i] + s * c[i] over arrays far bigger than the caches.
 *
 * Run: stream_triad ELEMENTS SECONDS.  The arrays are first touched by the threads that use
 * them (the same static schedule as the timed loop), then the triad runs repeatedly for about
 * SECONDS; it prints `bytes seconds` of the fastest repetition, counting 3 * 8 bytes per element
 * as STREAM does (two reads and a write; the write-allocate read is not counted).
 */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

static double *alloc(long n)
{
  void *p = NULL;
  if (posix_memalign(&p, 4096, (size_t)n * sizeof(double)) != 0) {
    fprintf(stderr, "cannot allocate %ld doubles\n", n);
    exit(1);
  }
  return p;
}

int main(int argc, char **argv)
{
  long n = argc > 1 ? atol(argv[1]) : 20000000L;
  double budget = argc > 2 ? atof(argv[2]) : 1.0;
  double s = argc > 3 ? atof(argv[3]) : 3.0;
  double *a = alloc(n), *b = alloc(n), *c = alloc(n);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) { a[i] = 0.0; b[i] = 1.0; c[i] = 2.0; }
  double best = 1e300, spent = 0;
  for (int rep = 0; rep < 1000 && (rep < 3 || spent < budget); rep++) {
    double t0 = omp_get_wtime();
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
    double t = omp_get_wtime() - t0;
    spent += t;
    if (t < best) best = t;
  }
  double check = 0;
  for (long i = 0; i < n; i += 4096) check += a[i];
  printf("%.17g %.17g %d %g\n", 3.0 * sizeof(double) * (double)n, best, omp_get_max_threads(), check);
  free(a); free(b); free(c);
  return 0;
}
