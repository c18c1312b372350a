/* The user's program runs this before its timer starts (`ir.program.Preamble`): PolyBench's
   polybench_flush_cache, whose OpenMP loop also starts the thread team when built with OpenMP,
   which PolyBench's build of a parallel answer is and of a sequential one is not (`team`). */
static void looper_flush_cache(int team)
{
  int cs = LOOPER_FLUSH_KIB * 1024 / sizeof(double);
  double *flush = (double *)calloc(cs, sizeof(double));
  int i;
  double tmp = 0.0;
  if (!flush)
    return;
#ifdef _OPENMP
  #pragma omp parallel for reduction(+:tmp) private(i) if(team)
#endif
  for (i = 0; i < cs; i++)
    tmp += flush[i];
  if (tmp > 10.0)
    abort();
  free(flush);
}
