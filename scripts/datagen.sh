#!/usr/bin/env bash
# Reproduce the shipped dataset: 1,000+ random synthetic programs, the beam search's own candidates,
# each compiled with gcc -O3 -march=native -fopenmp and timed with OMP_NUM_THREADS=2 on an otherwise
# idle machine (one timing at a time).  Resumable: rerun after an interrupt.
#   scripts/datagen.sh [OUT_DIR] [PROGRAMS]
set -euo pipefail
out=${1:-data/synth-v2}
n=${2:-1050}
OMP_NUM_THREADS=2 looper datagen "$out" --programs "$n" --beam 2 --max-affine 2 --per-level 5 --repeat 3 --threads 2
