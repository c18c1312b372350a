/* looper's timer of one scop region in the user's own program (`runtime.userprogram`).

   The region is bracketed by PREFIX_begin() and PREFIX_end() in the user's file; this file is
   its own translation unit, so its feature macro and headers touch nothing of the user's.  At
   exit, the seconds spent inside the region (summed over its executions) and their count are
   written to the file named by $LOOPER_REGION_TIME.  It is compiled with -fno-plt and reports
   from a destructor, not atexit (whose wrapper calls __cxa_atexit through a PLT entry): nothing
   of it moves the user's code (`KEEP_PLACE` in userprogram.py). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double PREFIX_seconds, PREFIX_start;
static long PREFIX_calls;

static double PREFIX_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

__attribute__((destructor)) static void PREFIX_report(void)
{
  const char *path = getenv("LOOPER_REGION_TIME");
  FILE *f = path ? fopen(path, "w") : NULL;
  if (f) {
    fprintf(f, "%.9e %ld\n", PREFIX_seconds, PREFIX_calls);
    fclose(f);
  }
}

void PREFIX_begin(void)
{
  PREFIX_start = PREFIX_now();
}

void PREFIX_end(void)
{
  PREFIX_seconds += PREFIX_now() - PREFIX_start;
  PREFIX_calls++;
}
