static double looper_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#ifdef LOOPER_BAKED_OMP_ENV
#include <unistd.h>
/* Built with --bake-omp-env: set the OpenMP settings this program was tuned with (the user's own
   settings win), then re-execute, since the OpenMP runtime reads its environment at startup. */
static void looper_bake_environment(char **argv)
{
  if (getenv("LOOPER_OMP_ENV_BAKED"))
    return;
  char settings[] = LOOPER_BAKED_OMP_ENV;
  for (char *item = strtok(settings, " "); item; item = strtok(NULL, " ")) {
    char *eq = strchr(item, '=');
    if (eq) {
      *eq = 0;
      setenv(item, eq + 1, 0);
    }
  }
  setenv("LOOPER_OMP_ENV_BAKED", "1", 1);
  execv("/proc/self/exe", argv);
}
#endif

int main(int argc, char **argv)
{
#ifdef LOOPER_BAKED_OMP_ENV
  looper_bake_environment(argv);
#endif
  int variant = argc > 1 ? atoi(argv[1]) : 0;
  int repeats = argc > 2 ? atoi(argv[2]) : 1;
  const char *mode = argc > 3 ? argv[3] : "-";   /* save:PATH | check:PATH | - */
  double cutoff = argc > 4 ? atof(argv[4]) : 0.0; /* stop after the first run if slower */
  /* cold: the first run is timed as a program that calls its kernel once pays it, the OpenMP
     team created inside it (`runtime.run.AS_RUN`) */
  int cold = argc > 5 && strcmp(argv[5], "cold") == 0;
  if (variant < 0 || variant >= looper_n_variants || repeats < 1) {
    fprintf(stderr, "usage: %s [VARIANT 0..%d [REPEATS [save:F|check:F|- [CUTOFF]]]]\n", argv[0],
            looper_n_variants - 1);
    return 2;
  }
  first_touch();  /* every page of every array mapped before anything is timed */
  init_array();
  if (repeats > 1)
    save_state();
#ifdef _OPENMP
  /* Warm: start the thread pool outside the timed region, so that thread creation is not timed. */
  if (!cold) {
    #pragma omp parallel
    {
      if (omp_get_thread_num() < 0)
        abort();
    }
  }
#endif
  for (int r = 0; r < repeats; r++) {
    if (r > 0)
      restore_state();
#ifdef LOOPER_FLUSH_KIB
    looper_flush_cache(looper_starts_team[variant]);
#endif
    double t0 = looper_now();
    looper_kernels[variant]();
    double t1 = looper_now();
#ifdef POLYBENCH_TIME
    printf("%0.9f\n", t1 - t0);
    fflush(stdout);
#endif
    if (r == 0) {
      if (strncmp(mode, "save:", 5) == 0 && save_outputs(mode + 5) != 0) {
        fprintf(stderr, "cannot write %s\n", mode + 5);
        return 3;
      }
      if (strncmp(mode, "check:", 6) == 0) {
        long bad = check_outputs(mode + 6);
        printf("LOOPER_CHECK %ld\n", bad);
        fflush(stdout);
        if (bad != 0)
          return 4;
      }
      if (cutoff > 0 && t1 - t0 > cutoff) {
        printf("LOOPER_CUTOFF\n");
        break;
      }
    }
  }
#ifdef POLYBENCH_DUMP_ARRAYS
  dump_arrays();
#endif
  return 0;
}
