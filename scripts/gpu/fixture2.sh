#!/usr/bin/env bash
# More held-out points for the stack fit (sim/plan/stack_fit.hpp) on a lent GPU machine: three more
# plain neighbours of the eager calibration fixture (tests/data/traces/h200-fixture: 4 layers, hidden
# 1024, seq 1024, micro-batch 8), and a second fixture of the same job under torch.compile, traced
# whole under `trainsim trace --nvtx`, with two compiled neighbours run plain. Needs the bundle of
# scripts/gpu/bundle.sh in .devbundle/ (carried); writes into $OUT: results.jsonl (one line per run),
# *-scenario.json, traces.tar.xz, fixture2-log.txt. What it measured is in docs/gpu-runs.md.
set -uo pipefail
source scripts/gpu/lib.sh
gpu_run_start fixture2-log.txt /tmp/gpufixture2
mkdir -p "$work/traces"
section() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }
gpu=$(python3 -c 'import torch; print(torch.cuda.get_device_name())')

scenario() {  # NAME COMPILE(0|1) LAYERS SEQ MICRO_BATCH
  python3 scripts/gpu/scenario.py --layers "$3" --hidden 1024 --heads 16 --seq "$4" --micro-batch "$5" --gpu "$gpu" |
    python3 -c 'import json,sys; s=json.load(sys.stdin); s["training"]["compile"]=sys.argv[1]=="1"; s["name"]=sys.argv[2]; print(json.dumps(s, indent=2))' "$2" "$1" \
    >"$OUT/$1-scenario.json"
}
plain() {  # NAME COMPILE LAYERS SEQ MICRO_BATCH
  section "$1 plain"
  scenario "$@"
  local flags=()
  [[ $2 == 1 ]] && flags=(--compile)
  timeout 150 python3 scripts/gpu/train_step.py --layers "$3" --hidden 1024 --heads 16 --seq "$4" --micro-batch "$5" \
    "${flags[@]}" --warmup 4 --steps 20 | sed "s/^{/{\"config\": \"$1\", \"mode\": \"plain\", /" | tee -a "$OUT/results.jsonl"
}

plain eager-l12 0 12 1024 8
plain eager-mb4 0 4 1024 4
plain eager-s2048-mb4 0 4 2048 4
section "compiled fixture traced"
scenario compiled-fixture 1 4 1024 8
timeout 200 $T trace --nvtx --out "$work/traces/compiled-fixture" -- python3 scripts/gpu/train_step.py --layers 4 \
  --hidden 1024 --heads 16 --seq 1024 --micro-batch 8 --compile --warmup 4 --steps 10 --nvtx |
  sed 's/^{/{"config": "compiled-fixture", "mode": "traced", /' | tee -a "$OUT/results.jsonl"
ls -la "$work/traces/compiled-fixture"
tar -C "$work" -cJf "$OUT/traces.tar.xz" traces
plain compiled-l8 1 8 1024 8
plain compiled-mb16 1 4 1024 16
plain compiled-fixture 1 4 1024 8
section done
