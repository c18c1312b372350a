#!/usr/bin/env bash
# Reproduce the shipped cost model from the shipped dataset (deterministic split and seeds).
# Two ensemble members train in parallel, one core and one torch thread each.
#   scripts/train.sh [OUT] [DATA_DIR...]
set -euo pipefail
out=${1:-models/looper-v1.pt}
shift || true
data=("$@")
[ ${#data[@]} -gt 0 ] || data=(data/synth-v2 data/synth-v2-small data/synth-v2-large)
looper train "${data[@]}" -o "$out" --epochs 30 --members 2 --threads 1 --hidden 128 --lr 0.001 --loss log \
  --rank-weight 1.0 --batch-programs 1 --max-noise 0.05 --seed 0
