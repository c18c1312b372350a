#!/usr/bin/env bash
# The grown-space parts of the dataset (feature version 5 and later): random synthetic programs of
# the shapes where the grown kinds pay, searched with the whole space (`--grown`: register tiles,
# packs, time tiles, vector loops, cache tiles, isl's schedule, expansions, parallel blocks, one
# parallel region), each level's candidates drawn from every kind in turn, and two exploration
# lanes that follow the default search's ranking (the shipped model for the loop structure, the
# analytic cost terms for the rest: `--explore-ranking`), so the data covers where the default errs.
# The ranking's model is looper-v6 (GUIDE), the model shipped when these parts were collected; its
# weights are in git at 6873984 (`git show 6873984:looper/costmodel/weights/looper-v6.pt > v6.pt`).
# Timed as the first fourteen parts were (tuned OpenMP settings, warm medians), so one model trains
# on all of them; run nothing else meanwhile.  The parts are filled round-robin, CHUNK programs of
# each at a time, so that a run stopped early leaves every part some programs; each part is
# resumable (finished seeds are skipped, an interrupted program is replayed from its memo).
# The committed parts of synth-v7 are two rounds (20 programs each; 12,034 rows, 9,230 usable points,
# in 98 minutes of an AMD EPYC family 25 model 17 with 2 vCPUs, 2026-11-28):
#   GUIDE=v6.pt scripts/datagen-grown.sh data 2
# and a third round of all but the large part (seeds 4020-4029, 4220-4229, 4420-4429, 4620-4629;
# 5,086 rows, 3,941 usable points, the same machine class, 2026-11-30):
#   for p in matmul stencil mv coupled; do ONLY=synth-v7-grown-$p GUIDE=v6.pt scripts/datagen-grown.sh data 3; done
# and synth-v9-grown-columns eight rounds of its own (80 programs, seeds 5000-5079; 10,017 rows, 2,736
# of them with a pack, in about 40 minutes of the same machine class, 2026-11-30):
#   ONLY=synth-v9-grown-columns GUIDE=v6.pt scripts/datagen-grown.sh data 8
#   GUIDE=v6.pt scripts/datagen-grown.sh [DATA_DIR] [ROUNDS]      (env CHUNK, default 10; ONLY=PART: that part alone)
set -euo pipefail
data=${1:-data}
rounds=${2:-1000}
chunk=${CHUNK:-10}
guide=${GUIDE:?GUIDE=looper-v6.pt: the model the lanes ranking used (see above)}
common=(--beam 2 --max-affine 2 --per-level 5 --repeat 3 --threads 2 --omp-env tuned --protocol warm
  --grown --explore 2 --explore-model "$guide" --explore-ranking -q)
# name  first-seed  programs  instances  patterns  extra
parts=(
  "synth-v7-grown-matmul 4000 200 1e5:3e8 matmul,deep --scaled-products"
  "synth-v7-grown-stencil 4200 150 1e5:1e8 stencil"
  "synth-v7-grown-mv 4400 100 1e5:1e8 reduction,elementwise --scaled-products"
  "synth-v7-grown-coupled 4600 60 1e6:1e8 coupled"
  "synth-v7-grown-large 4800 40 3e8:1e9 matmul,deep,stencil --scaled-products"
  # Products whose read-only operand walks a column (syrk's A[j][k], trmm's A[k][i]): the only
  # programs where the pack level proposes a copy, so the only part where a model learns a pack.
  "synth-v9-grown-columns 5000 100 1e5:3e8 columns --scaled-products"
)
for ((r = 0; r < rounds; r++)); do
  left=0
  for spec in "${parts[@]}"; do
    read -r name first total instances patterns extra <<<"$spec"
    [ -z "${ONLY:-}" ] || [ "$name" = "$ONLY" ] || continue
    done_=$((r * chunk))
    [ "$done_" -lt "$total" ] || continue
    left=1
    n=$((total - done_ < chunk ? total - done_ : chunk))
    OMP_NUM_THREADS=2 looper datagen "$data/$name" --programs "$n" --start $((first + done_)) \
      --instances "$instances" --patterns "$patterns" ${extra:-} "${common[@]}"
  done
  [ "$left" = 1 ] || break
done
