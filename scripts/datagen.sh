#!/usr/bin/env bash
# Reproduce the shipped dataset: random synthetic programs, the beam search's own candidates, each
# compiled with gcc -O3 -march=native -fopenmp and timed with OMP_NUM_THREADS=2 on an otherwise
# idle machine (one timing at a time; run nothing else meanwhile: a disturbed machine makes noisy
# labels).  Three parts: 1,050 programs of 3e6-3e7 statement instances (5-50 ms a run), 300 small
# ones of 1e4-3e6 instances (PolyBench's MEDIUM kernels reach down to 1e5, where parallel loops
# cost more than they save) and large ones of 3e7-3e8 instances, whose arrays outgrow the 1 MB L2
# (PolyBench LARGE: 1e8-2e10; a strided inner loop costs there what it does not at 3e7): 150
# seeds, of which five (1359, 1411, 1445, 1472, 1488: over 2 GB of arrays) failed to link before
# looper learnt to build such programs with -mcmodel=medium; a rerun collects them.  A fourth part
# of 200 programs (3e5-3e7 instances) keeps values in kernel-local scalars (accumulators, filter
# state, temporaries: symm, deriche, ludcmp), whose loops are parallel once the scalars are
# privatized; a fifth of 150 such programs at 3e6-1e8 instances (6,308 rows, 3,909 measured points
# in 1,519 s: 2.6 points/s) shows them at sizes where arrays outgrow the caches.  A sixth samples
# matrix products and doitgen-like nests at 1e8-5e8 instances, the sizes of PolyBench LARGE's gemm,
# 2mm and syrk, where loop order and tiling decide (the model trained without it ranked a strided
# interchange of LARGE gemm above the order measurement found: 0.31x of it).  The last three parts
# add exploration lanes guided by the first shipped model (models/looper-v1.pt: its own beam beside
# the measured one, so its mistakes get measured): matrix products at 1e8-3e8 instances, the same
# with products scaled by a scalar or constant (gemm's alpha * A * B; looper-v1 ranked LARGE gemm's
# loop orders upside down only because of alpha), and the default mix, scaled, at 3e6-3e7.  The
# tenth part is guided by models/looper-v2.pt: the default mix, scaled, at the small sizes
# (1e4-3e6) where both earlier models ranked worst (150 programs, 14,096 rows, 12,731 measured
# points in 1,524 s: 8.4 points/s).  The eleventh is guided by models/looper-v3.pt, which ranks held-out
# programs better than looper-v2 but parallelized PolyBench MEDIUM's gesummv (0.73x): small
# matrix-vector and matrix products and element-wise nests, products scaled on about half (150
# programs, 14,169 rows, 13,337 measured points in 1,038 s: 12.8 points/s).  The twelfth is guided by
# models/looper-v4.pt (trained on the first eleven), which fixed gesummv but time-tiled MEDIUM's
# jacobi-1d (skew, 128x128 tiles: 0.29x): small stencils, 1-D to 3-D, most with time loops (95
# programs, stopped there for time: 9,851 rows, 7,968 measured points, 2,425 of them cut off as
# "slow", in about 1,100 s: 7.2 points/s).  The thirteenth is guided by models/looper-v5.pt (the
# first twelve), which interchanged PolyBench LARGE's fdtd-2d (0.34x): fields coupled in one time loop
# (`--patterns coupled`: several nests per time step, one-sided differences, boundary rows, sweeps,
# some nests in a transposed order) at 3e7-3e8 instances (50 programs, stopped there for time: 5,508
# rows, 4,356 measured points, 1,388 of them cut off as "slow", in 2,396 s: 1.8 points/s).
# Resumable: rerun after an interrupt.
#   scripts/datagen.sh [DATA_DIR]
set -euo pipefail
data=${1:-data}
# every part was timed tuned and warm (one process, a warm-up call, the median of three)
common=(--beam 2 --max-affine 2 --per-level 5 --repeat 3 --threads 2 --omp-env tuned --protocol warm)
OMP_NUM_THREADS=2 looper datagen "$data/synth-v2" --programs 1050 --start 0 --instances 3e6:3e7 "${common[@]}"
OMP_NUM_THREADS=2 looper datagen "$data/synth-v2-small" --programs 300 --start 1050 --instances 1e4:3e6 "${common[@]}"
OMP_NUM_THREADS=2 looper datagen "$data/synth-v2-large" --programs 150 --start 1350 --instances 3e7:3e8 "${common[@]}"
OMP_NUM_THREADS=2 looper datagen "$data/synth-v2-scalars" --programs 200 --start 2000 --instances 3e5:3e7 --scalars "${common[@]}"
OMP_NUM_THREADS=2 looper datagen "$data/synth-v2-scalars-large" --programs 150 --start 2200 --instances 3e6:1e8 --scalars "${common[@]}"
OMP_NUM_THREADS=2 looper datagen "$data/synth-v2-matmul-large" --programs 120 --start 2400 --instances 1e8:5e8 \
  --patterns matmul,deep "${common[@]}"
# exploration lanes beside the beam: the given model's own favourites, measured.  looper-v1 to -v5's
# weights are no longer in the tree (their metadata is, in models/): train each first with the
# command in scripts/train.sh's header; looper-v6's are in git
# (`git show 6873984:looper/costmodel/weights/looper-v6.pt > models/looper-v6.pt`).
guided_by() { echo --explore 2 --explore-model "$1"; }
OMP_NUM_THREADS=2 looper datagen "$data/synth-v2-explore" --programs 35 --start 2600 --instances 1e8:3e8 \
  --patterns matmul,deep $(guided_by models/looper-v1.pt) "${common[@]}"
OMP_NUM_THREADS=2 looper datagen "$data/synth-v2-scaled" --programs 50 --start 2700 --instances 1e8:3e8 \
  --patterns matmul,deep --scaled-products $(guided_by models/looper-v1.pt) "${common[@]}"
OMP_NUM_THREADS=2 looper datagen "$data/synth-v2-scaled-mix" --programs 50 --start 2900 --instances 3e6:3e7 \
  --scaled-products $(guided_by models/looper-v1.pt) "${common[@]}"
OMP_NUM_THREADS=2 looper datagen "$data/synth-v2-small-guided" --programs 150 --start 3100 --instances 1e4:3e6 \
  --scaled-products $(guided_by models/looper-v2.pt) "${common[@]}"
OMP_NUM_THREADS=2 looper datagen "$data/synth-v3-small-guided" --programs 150 --start 3300 --instances 1e4:3e6 \
  --patterns reduction,matmul,elementwise --scaled-products $(guided_by models/looper-v3.pt) "${common[@]}"
OMP_NUM_THREADS=2 looper datagen "$data/synth-v4-small-stencil" --programs 95 --start 3500 --instances 1e4:3e6 \
  --patterns stencil $(guided_by models/looper-v4.pt) "${common[@]}"
OMP_NUM_THREADS=2 looper datagen "$data/synth-v5-large-coupled" --programs 50 --start 3700 --instances 3e7:3e8 \
  --patterns coupled $(guided_by models/looper-v5.pt) "${common[@]}"
# The fourteenth part is guided by looper-v6.pt (the model shipped then), whose MEDIUM syrk answer is slower than the original's fast
# mode: small matrix products, triangular ones among them, scaled on about half (seeds 3800-3949: 16,334 rows,
# 15,561 measured points in 1,202 s over two sessions, 965 s + 237 s: 12.9 points/s).
OMP_NUM_THREADS=2 looper datagen "$data/synth-v6-small-matmul" --programs 150 --start 3800 --instances 1e5:1e7 \
  --patterns matmul --scaled-products $(guided_by models/looper-v6.pt) "${common[@]}"
