#!/usr/bin/env bash
# Reproduce the shipped cost model from the shipped dataset (deterministic split and seeds).
# Two ensemble members train in parallel, one core and one torch thread each.
#   scripts/train.sh [DATA_DIR] [OUT]
set -euo pipefail
data=${1:-data/synth-v2}
out=${2:-models/looper-v1.pt}
looper train "$data" -o "$out" --epochs 30 --members 2 --threads 1 --hidden 128 --lr 0.001 --loss log \
  --rank-weight 1.0 --batch-programs 1 --max-noise 0.05 --seed 0
