#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* PolyBench's dump format; -DLOOPER_EXACT_DUMP prints every bit (differential tests). */
#ifdef LOOPER_EXACT_DUMP
#define LOOPER_FMT_F64 "%.17g "
#define LOOPER_FMT_F32 "%.9g "
#else
#define LOOPER_FMT_F64 "%0.2lf "
#define LOOPER_FMT_F32 "%0.2f "
#endif
#define LOOPER_FMT_I64 "%ld "
#define LOOPER_FMT_I32 "%d "
#define LOOPER_FMT_I8 "%d "

#ifndef floord
#define floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) : (n) / (d))
#endif
#ifndef min
#define min(x, y) ((x) < (y) ? (x) : (y))
#endif
#ifndef max
#define max(x, y) ((x) > (y) ? (x) : (y))
#endif
