#!/usr/bin/env bash
# Reproduce the shipped dataset: random synthetic programs, the beam search's own candidates, each
# compiled with gcc -O3 -march=native -fopenmp and timed with OMP_NUM_THREADS=2 on an otherwise
# idle machine (one timing at a time; run nothing else meanwhile: a disturbed machine makes noisy
# labels).  Two parts: 1,050 programs of 3e6-3e7 statement instances (5-50 ms a run) and 300 small
# ones of 1e4-3e6 instances (PolyBench's MEDIUM kernels reach down to 1e5, where parallel loops
# cost more than they save).  Resumable: rerun after an interrupt.
#   scripts/datagen.sh [DATA_DIR]
set -euo pipefail
data=${1:-data}
common=(--beam 2 --max-affine 2 --per-level 5 --repeat 3 --threads 2)
OMP_NUM_THREADS=2 looper datagen "$data/synth-v2" --programs 1050 --start 0 --instances 3e6:3e7 "${common[@]}"
OMP_NUM_THREADS=2 looper datagen "$data/synth-v2-small" --programs 300 --start 1050 --instances 1e4:3e6 "${common[@]}"
