#!/usr/bin/env bash
# Reproduce the shipped cost model from the shipped dataset (deterministic split and seed).
#   scripts/train.sh [DATA_DIR] [OUT]
set -euo pipefail
data=${1:-data/synth-v2}
out=${2:-models/looper-v1.pt}
looper train "$data" -o "$out" --epochs 40 --members 2 --threads 1 --hidden 128 --lr 0.002 --loss mape --rank-weight 1.0 --max-noise 0.05 --seed 0
