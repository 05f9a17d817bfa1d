#!/usr/bin/env bash
# The second round of GPU checks, as one script for a lent GPU machine:
#   1. power by activity (scripts/gpu/power.py): idle, a spinning kernel, bf16 GEMMs, HBM-bound adds,
#      with NVML's energy counter: the figures behind sim/core/power.hpp's activity shares;
#   2. the energy of real training steps (the 1.32 B and 356 M GPTs of device_check.sh, 30 timed steps),
#      to set beside `trainsim run`'s energy object for the same scenarios (validation/gpu-h200);
#   3. a traced run with per-step NVTX markers (ProfilerStep#N) of a small GPT that is not host-bound,
#      kept whole as a calibration fixture (tests/data/traces/), with its scenario, and NCCL's INFO
#      log of that run (does NCCL load the tracer's profiler plugin for a one-rank communicator?).
# Needs the bundle of scripts/gpu/bundle.sh in .devbundle/ (carried); writes into $OUT (or ./gpu-out).
# What it measured is in docs/gpu-runs.md.
set -uo pipefail
source scripts/gpu/lib.sh
gpu_run_start log.txt /tmp/gpucheck
mkdir -p "$work/traces"
section() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

section machine
nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit,power.max_limit,clocks.max.sm,clocks.max.mem,temperature.gpu --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
gpu=$(python3 -c 'import torch; print(torch.cuda.get_device_name())')

section "power by activity"
python3 scripts/gpu/power.py --seconds 8 | tee -a "$OUT/power.jsonl"

# name layers hidden heads seq micro_batch
for c in "gpt-1.3b 24 2048 16 2048 4" "gpt-350m 24 1024 16 2048 8"; do
  read -r name L H A S MB <<<"$c"
  section "$name energy per step"
  python3 scripts/gpu/train_step.py --layers "$L" --hidden "$H" --heads "$A" --seq "$S" --micro-batch "$MB" \
    --warmup 3 --steps 30 | sed "s/^{/{\"config\": \"$name\", \"mode\": \"plain\", /" | tee -a "$OUT/results.jsonl"
done

fix=(--layers 4 --hidden 1024 --heads 16 --seq 1024 --micro-batch 8)
python3 scripts/gpu/scenario.py "${fix[@]}" --gpu "$gpu" >"$OUT/fixture-scenario.json"
section "fixture plain"
python3 scripts/gpu/train_step.py "${fix[@]}" --warmup 3 --steps 10 --nvtx |
  sed 's/^{/{"config": "fixture", "mode": "plain", /' | tee -a "$OUT/results.jsonl"
section "fixture traced (NCCL INFO log in nccl-debug.*.txt)"
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,PROFILE NCCL_DEBUG_FILE="$OUT/nccl-debug.%p.txt" \
  $T trace --nvtx --out "$work/traces/fixture" -- python3 scripts/gpu/train_step.py "${fix[@]}" --warmup 3 --steps 10 --nvtx |
  sed 's/^{/{"config": "fixture", "mode": "traced", /' | tee -a "$OUT/results.jsonl"
ls -la "$work/traces/fixture"
grep -i -h "profiler\|plugin" "$OUT"/nccl-debug.*.txt | head -20
$T trace summary "$work/traces/fixture" --top 6 2>&1 | head -40
section "predicted"
for f in "$OUT/fixture-scenario.json"; do $T run "$f" 2>&1 | head -12; done
section pack
tar -C "$work" -cJf "$OUT/traces.tar.xz" traces
ls -la "$OUT"
section done
