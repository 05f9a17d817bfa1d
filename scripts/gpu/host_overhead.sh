#!/usr/bin/env bash
# The host's cost per kernel in eager and compiled PyTorch, on a lent GPU machine: small GPTs whose
# step is bound by the host (4 and 8 layers of width 256), run plain for the step time and under
# `trainsim trace` for the GPU operations per step; eager with torch DDP, eager with the hand-written
# bucketed all-reduce, and torch.compile. The slope between 4 and 8 layers separates the per-layer
# cost from the per-step one. Needs the bundle of scripts/gpu/bundle.sh in .devbundle/ (carried);
# writes $OUT/host.jsonl (one line per run) and $OUT/host-log.txt. Results: docs/gpu-runs.md.
set -uo pipefail
source scripts/gpu/lib.sh
gpu_run_start host-log.txt /tmp/gpuhost

ops_per_step() {  # kernels, copies and sets per step in a trace of WARMUP + STEPS steps
  $T trace dump "$1"/*.trace | python3 -c '
import json, sys, collections
c = collections.Counter(next(iter(json.loads(l))) for l in sys.stdin)
n = int(sys.argv[1])
print(json.dumps({k: c[k] / n for k in ("kernel", "memcpy", "memset", "gemm", "collective")}))' "$2"
}

run() {  # NAME LAYERS MODE_FLAGS...
  local name=$1 layers=$2
  shift 2
  local args=(--layers "$layers" --hidden 256 --heads 4 --seq 256 --micro-batch 2 "$@")
  printf '\n=== %s (%s)\n' "$name" "$(date +%T)"
  python3 scripts/gpu/train_step.py "${args[@]}" --warmup 4 --steps 20 |
    sed "s/^{/{\"config\": \"$name\", \"mode\": \"plain\", /" | tee -a "$OUT/host.jsonl"
  $T trace --out "$work/$name" -- python3 scripts/gpu/train_step.py "${args[@]}" --warmup 2 --steps 3 >/dev/null
  echo "{\"config\": \"$name\", \"mode\": \"ops_per_step\", \"ops\": $(ops_per_step "$work/$name" 5)}" |
    tee -a "$OUT/host.jsonl"
}

run tiny4-ddp 4 --ddp
run tiny8-ddp 8 --ddp
run tiny4-compile 4 --ddp --compile
run tiny8-compile 8 --ddp --compile
run tiny8-manual 8
printf '\n=== gpt-350m compile (%s)\n' "$(date +%T)"
python3 scripts/gpu/train_step.py --layers 24 --hidden 1024 --heads 16 --seq 2048 --micro-batch 8 --ddp --compile \
  --warmup 4 --steps 10 | sed 's/^{/{"config": "gpt-350m-compile", "mode": "plain", /' | tee -a "$OUT/host.jsonl"
printf '\n=== gpt-350m ddp (%s)\n' "$(date +%T)"
python3 scripts/gpu/train_step.py --layers 24 --hidden 1024 --heads 16 --seq 2048 --micro-batch 8 --ddp \
  --warmup 3 --steps 10 | sed 's/^{/{"config": "gpt-350m-ddp", "mode": "plain", /' | tee -a "$OUT/host.jsonl"
printf '\n=== done (%s)\n' "$(date +%T)"
