#!/usr/bin/env bash
# Reproduce the candidate looper-v12: all twenty parts of data/ (the six grown ones weighted 5, four
# of them with a third round of ten programs), 8 epochs on feature version 7 warm-started from
# looper-v10, whose weights are in git (deterministic split and seeds).  Two ensemble members train
# in parallel, one core and one torch thread each (about 45 minutes on this 2-core machine):
#   git show 9d67dca:looper/costmodel/weights/looper-v10.pt > /tmp/looper-v10.pt
#   INIT=/tmp/looper-v10.pt scripts/train.sh /tmp/looper-v12.pt   (COMPARE=/tmp/looper-v10.pt: its metrics beside)
# looper-v11 (not shipped either) the same way at e138e71 (feature version 6; `git checkout e138e71` first).
# looper-v10 (shipped at 77c4365) the same way on the parts without their third round (`git checkout
# 77c4365` first: its data/ and scripts/train.sh), warm-started from looper-v9:
#   git show c9a2b0a:looper/costmodel/weights/looper-v9.pt > /tmp/looper-v9.pt
#   INIT=/tmp/looper-v9.pt scripts/train.sh
# looper-v9 (shipped before looper-v10) the same way without the columns part, 12 epochs, warm-started
# from looper-v8 (`git checkout c9a2b0a` first: its scripts/train.sh):
#   git show 7fb51cd:looper/costmodel/weights/looper-v8.pt > /tmp/looper-v8.pt
#   INIT=/tmp/looper-v8.pt scripts/train.sh looper/costmodel/weights/looper-v9.pt
# looper-v8 (shipped before looper-v9, feature version 5: `git checkout 7fb51cd` first) the same way,
# warm-started from looper-v6:
#   git show 6873984:looper/costmodel/weights/looper-v6.pt > /tmp/looper-v6.pt
#   INIT=/tmp/looper-v6.pt scripts/train.sh looper/costmodel/weights/looper-v8.pt
# Without INIT (or with DATA_DIRs) it trains the older recipe from scratch:
#   scripts/train.sh [OUT] [DATA_DIR...]
# looper-v6 (shipped before looper-v8; it guided the grown parts' lanes, scripts/datagen-grown.sh):
#   scripts/train.sh models/looper-v6.pt @nine data/synth-v2-small-guided data/synth-v3-small-guided \
#     data/synth-v4-small-stencil data/synth-v5-large-coupled
# `@nine` among the DATA_DIRs stands for the first nine parts, on which the earlier models trained:
#   EPOCHS=30 DROPOUT=0.05 WEIGHT_DECAY=0.00001 scripts/train.sh models/looper-v1.pt data/synth-v2 \
#     data/synth-v2-small data/synth-v2-large
#   DROPOUT=0.05 WEIGHT_DECAY=0.00001 scripts/train.sh models/looper-v2.pt @nine
#   scripts/train.sh models/looper-v3.pt @nine
#   scripts/train.sh models/looper-v4.pt @nine data/synth-v2-small-guided data/synth-v3-small-guided
#   scripts/train.sh models/looper-v5.pt @nine data/synth-v2-small-guided data/synth-v3-small-guided \
#     data/synth-v4-small-stencil
# looper-v7 (not committed: held-out Spearman 0.746, docs/design/cost-model.md) adds the fourteenth part:
#   scripts/train.sh /tmp/looper-v7.pt @nine data/synth-v2-small-guided data/synth-v3-small-guided \
#     data/synth-v4-small-stencil data/synth-v5-large-coupled data/synth-v6-small-matmul
# Each model from looper-v1 to looper-v5 guided the exploration lanes of a later data part
# (scripts/datagen.sh); their metadata stays in models/, their weights are made by the lines above.
# The ranking-weight and capacity experiments of docs/design/cost-model.md (not shipped), on the nine parts:
#   RANK_WEIGHT=3 EPOCHS=30 DROPOUT=0.05 WEIGHT_DECAY=0.00001 scripts/train.sh /tmp/looper-rw3e30.pt @nine
#   HIDDEN=192 DROPOUT=0.05 WEIGHT_DECAY=0.00001 scripts/train.sh /tmp/looper-h192.pt @nine
set -euo pipefail
if [ -n "${INIT:-}" ] && [ $# -le 1 ]; then
  out=${1:-/tmp/looper-v12.pt}
  grown=(data/synth-v7-grown-matmul data/synth-v7-grown-stencil data/synth-v7-grown-mv data/synth-v7-grown-coupled
    data/synth-v7-grown-large data/synth-v9-grown-columns)
  weights=()
  for part in "${grown[@]}"; do weights+=(--weight "$(basename "$part")=5"); done
  exec looper train data/synth-v2* data/synth-v3-small-guided data/synth-v4-small-stencil data/synth-v5-large-coupled \
    data/synth-v6-small-matmul "${grown[@]}" -o "$out" --init "$INIT" "${weights[@]}" --epochs 8 --members 2 \
    --threads 1 --hidden 128 --dropout 0.2 --weight-decay 0.001 --lr 0.001 --loss log --rank-weight 1.0 \
    --batch-programs 1 --max-noise 0.05 --seed 0 ${COMPARE:+--compare "$COMPARE"}
fi
out=${1:-models/looper-v6.pt}
shift || true
nine=(data/synth-v2 data/synth-v2-small data/synth-v2-large data/synth-v2-scalars data/synth-v2-scalars-large
  data/synth-v2-matmul-large data/synth-v2-explore data/synth-v2-scaled data/synth-v2-scaled-mix)
data=()
for arg in "$@"; do
  if [ "$arg" = @nine ]; then data+=("${nine[@]}"); else data+=("$arg"); fi
done
[ ${#data[@]} -gt 0 ] || data=("${nine[@]}" data/synth-v2-small-guided data/synth-v3-small-guided
  data/synth-v4-small-stencil data/synth-v5-large-coupled)
looper train "${data[@]}" -o "$out" --epochs "${EPOCHS:-20}" --members 2 --threads 1 --hidden "${HIDDEN:-128}" \
  --dropout "${DROPOUT:-0.2}" --weight-decay "${WEIGHT_DECAY:-0.001}" --lr 0.001 --loss log \
  --rank-weight "${RANK_WEIGHT:-1.0}" --batch-programs 1 --max-noise 0.05 --seed 0
