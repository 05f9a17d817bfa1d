#!/usr/bin/env bash
# What FSDP costs per layer on one rank, and what torch.compile saves on the host, on a lent GPU
# machine. Host-bound small GPTs (width 256, seq 256, micro-batch 2) at 4, 8 and 16 layers: torch DDP,
# FSDP1 (llm-foundry's FULL_SHARD, BACKWARD_PRE, limit_all_gathers), FSDP2 (torchtitan's fully_shard
# per block) and DDP + torch.compile, 4 + 30 steps plain; the least-squares slope over the three
# depths is the per-layer cost (three points where the earlier host_overhead.sh had two). FSDP1 and
# FSDP2 at 4 and 8 layers also under `trainsim trace`, for the GPU operations FSDP adds per layer.
# Then the GPU-bound 356 M GPT (24 x 1024, seq 2048, micro-batch 8) under DDP, FSDP1 and FSDP2: on one
# rank FSDP's collectives are local copies, so what it adds there is its copy-in/copy-out, casts and
# hooks on the GPU's own time. Needs the bundle of scripts/gpu/bundle.sh in .devbundle/ (carried);
# writes $OUT/fsdp.jsonl (one line per run) and $OUT/fsdp-log.txt. Results: docs/gpu-runs.md.
set -uo pipefail
source scripts/gpu/lib.sh
gpu_run_start fsdp-log.txt /tmp/gpufsdp

tiny=(--hidden 256 --heads 4 --seq 256 --micro-batch 2)
plain() {  # NAME ARGS...: one plain run, its JSON line tagged
  local name=$1
  shift
  printf '\n=== %s (%s)\n' "$name" "$(date +%T)"
  timeout 120 python3 scripts/gpu/train_step.py "$@" |
    sed "s/^{/{\"config\": \"$name\", \"mode\": \"plain\", /" | tee -a "$OUT/fsdp.jsonl"
}
ops() {  # NAME ARGS...: GPU operations per step under the tracer (2 warm-up + 3 steps, all counted)
  local name=$1
  shift
  timeout 120 $T trace --out "$work/$name" -- python3 scripts/gpu/train_step.py "$@" --warmup 2 --steps 3 >/dev/null
  $T trace dump "$work/$name"/*.trace | python3 -c '
import json, sys, collections
c = collections.Counter(next(iter(json.loads(l))) for l in sys.stdin)
print(json.dumps({"config": sys.argv[1], "mode": "ops_per_step",
                  "ops": {k: c[k] / 5 for k in ("kernel", "memcpy", "memset", "gemm", "collective")}}))' "$name" |
    tee -a "$OUT/fsdp.jsonl"
}

for mode in ddp fsdp1 fsdp2; do
  case $mode in ddp) flags=(--ddp) ;; fsdp1) flags=(--fsdp 1) ;; fsdp2) flags=(--fsdp 2) ;; esac
  for l in 4 8 16; do plain "tiny$l-$mode" --layers $l "${tiny[@]}" "${flags[@]}" --warmup 4 --steps 30; done
done
big=(--layers 24 --hidden 1024 --heads 16 --seq 2048 --micro-batch 8 --warmup 3 --steps 10)
plain gpt-350m-ddp "${big[@]}" --ddp
plain gpt-350m-fsdp1 "${big[@]}" --fsdp 1
plain gpt-350m-fsdp2 "${big[@]}" --fsdp 2
for mode in fsdp1 fsdp2; do
  for l in 4 8; do ops "tiny$l-$mode" --layers $l "${tiny[@]}" --fsdp "${mode#fsdp}"; done
done
for l in 4 8 16; do plain "tiny$l-compile" --layers $l "${tiny[@]}" --ddp --compile --warmup 4 --steps 30; done
printf '\n=== done (%s)\n' "$(date +%T)"
