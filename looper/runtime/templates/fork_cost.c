/* What OpenMP parallelism costs a program, as a user's program pays it.
 *
 * One process, as the user starts it (no settings beyond the environment it is given):
 *   first:   the first parallel region, which creates the team (what a program that calls its
 *            kernel once pays inside the kernel);
 *   region:  each later parallel region (a team woken from wherever it waits), averaged over N;
 *   barrier: each barrier inside one region, averaged over N.
 * Prints `first region barrier` in seconds.  Run: fork_cost N.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <omp.h>

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile int sink;

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : 100;
  if (n < 1)
    return 2;
  double t0 = now();
  #pragma omp parallel
  {
    if (omp_get_thread_num() == 0)
      sink = omp_get_num_threads();
  }
  double t1 = now();
  for (int r = 0; r < n; r++) {
    #pragma omp parallel
    {
      if (omp_get_thread_num() == 0)
        sink = r;
    }
  }
  double t2 = now();
  #pragma omp parallel
  {
    for (int r = 0; r < n; r++) {
      #pragma omp barrier
    }
  }
  double t3 = now();
  printf("%.6e %.6e %.6e\n", t1 - t0, (t2 - t1) / n, (t3 - t2) / n);
  return 0;
}
