#!/usr/bin/env bash
# The second call of the power round (same machine, warm): host-to-device copies and FlashAttention
# by power (scripts/gpu/power.py --extra), and two plain steps near the calibration fixture of
# power_check.sh (8 layers; 4 layers at micro-batch 16), measured to judge a band from it.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log2.txt") 2>&1
export PYTHONUNBUFFERED=1
python3 scripts/gpu/power.py --extra --seconds 6 | tee -a "$OUT/power.jsonl"
gpu=$(python3 -c 'import torch; print(torch.cuda.get_device_name())')
for c in "fixture-8l 8 1024 16 1024 8" "fixture-mb16 4 1024 16 1024 16"; do
  read -r name L H A S MB <<<"$c"
  python3 scripts/gpu/scenario.py --layers "$L" --hidden "$H" --heads "$A" --seq "$S" --micro-batch "$MB" --gpu "$gpu" >"$OUT/$name-scenario.json"
  python3 scripts/gpu/train_step.py --layers "$L" --hidden "$H" --heads "$A" --seq "$S" --micro-batch "$MB" --warmup 3 --steps 20 |
    sed "s/^{/{\"config\": \"$name\", \"mode\": \"plain\", /" | tee -a "$OUT/results.jsonl"
done
