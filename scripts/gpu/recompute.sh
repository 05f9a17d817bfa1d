#!/usr/bin/env bash
# What full activation recomputation costs on a real GPU, and why (the stack fit's open question:
# trainsim prices full recomputation as one more forward, and the published full-recompute runs pay
# less; docs/validation.md). On a lent GPU machine, pure PyTorch (no trainsim bundle needed):
#  1. scripts/gpu/kernels.py: nn.Linear's forward, data- and weight-gradient GEMMs at hidden 768 to
#     8,192 (16,384 tokens), a sweep of the inner dimension K, FlashAttention's backward against its
#     forward by head size;
#  2. scripts/gpu/train_step.py at three GPT sizes, without and with every block checkpointed, with
#     the step split into forward, backward and optimizer by CUDA events.
# `recompute.sh variants` runs only part 2, with the three ways PyTorch re-runs a checkpointed block
# (non-reentrant with early stop, the default; without early stop; reentrant), to isolate early stop.
# `recompute.sh memory` runs part 2 with --memory-phases (torch's allocated memory at each phase of a
# step) on the smallest and the widest job, for the memory model.
# Writes $OUT/kernels.jsonl, $OUT/recompute.jsonl and $OUT/recompute-log.txt. Results: docs/gpu-runs.md.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/recompute-log.txt") 2>&1
export PYTHONUNBUFFERED=1
section() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv
variants=(none full)
extra=()
if [[ ${1:-} == variants ]]; then
  variants=(none full full-no-early-stop full-reentrant)
elif [[ ${1:-} == memory ]]; then
  variants=(none full full-reentrant)
  extra=(--memory-phases)
else
  section kernels
  timeout 150 python3 scripts/gpu/kernels.py | tee "$OUT/kernels.jsonl"
fi

run() {  # NAME ARGS...
  local name=$1
  shift
  for r in "${variants[@]}"; do
    section "$name recompute=$r"
    timeout 120 python3 scripts/gpu/train_step.py "$@" "${extra[@]}" --recompute $r --warmup 3 --steps 10 |
      sed "s/^{/{\"config\": \"$name\", /" | tee -a "$OUT/recompute.jsonl"
  done
}
run gpt-356m --layers 24 --hidden 1024 --heads 16 --seq 2048 --micro-batch 8
[[ ${1:-} == memory ]] || run gpt-l12-h2048 --layers 12 --hidden 2048 --heads 16 --seq 2048 --micro-batch 8
run gpt-l6-h4096 --layers 6 --hidden 4096 --heads 32 --seq 2048 --micro-batch 4
section done
