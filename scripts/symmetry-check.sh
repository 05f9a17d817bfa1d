#!/usr/bin/env bash
# Symmetry against the full simulation: GPT-3 6.7B on 64 A100 (8 nodes of 8) under a set of layouts
# (tensor, context, pipeline, data; ZeRO 0-3 in its implementations; offload) on the fat-tree, the
# rail-optimized fabric and the ideal switch, each run twice with SimGrid at flow fidelity: with
# `simulation.symmetry` (the default) and without (every rank simulated). Prints both iteration
# times, their relative difference and the flows each simulated. Figures, not pass/fail; about 2
# minutes on 2 cores. Usage: scripts/symmetry-check.sh [TRAINSIM_BINARY]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$repo/build/sim/cli/trainsim}
[ -x "$bin" ] || { "$repo/scripts/setup.sh" "$repo/build"; bin=$repo/build/sim/cli/trainsim; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# json_number FILE KEY: the first number after "KEY": in FILE, as written (the shortest text that
# reads back as the same double, so equal texts are equal times). The same helper as scripts/bench.sh.
json_number() { { grep -o "\"$2\": *[-0-9.e+]*" "$1" || true; } | head -1 | sed 's/.*: *//'; }

printf '%-15s %-52s %-44s %20s %20s %10s %9s %9s\n' fabric layout option symmetric_s full_s diff flows full_flows
same=0
total=0
# fabric TP CP PP ZeRO-stage ZeRO-implementation [KEY=VALUE]
while read -r fabric tp cp pp zero impl extra; do
  dp=$((64 / (tp * cp * pp)))
  args=(run "$repo/scenarios/gpt3-6.7b-a100-8.json" --format json --set cluster.nodes=8
    --set cluster.network.topology="$fabric" --set simulation.backend=simgrid --set simulation.fidelity=flow
    --set parallelism.tensor="$tp" --set parallelism.context="$cp" --set parallelism.pipeline="$pp"
    --set parallelism.data="$dp" --set parallelism.zero_stage="$zero" --set parallelism.sequence_parallel=$([ "$tp" -gt 1 ] && echo true || echo false)
    --set training.micro_batch=1 --set training.global_batch=$((dp * pp * 2)))
  [ "$impl" != - ] && args+=(--set parallelism.zero_impl="$impl")
  [ -n "${extra:-}" ] && args+=(--set "$extra")
  "$bin" "${args[@]}" >"$tmp/sym.json"
  "$bin" "${args[@]}" --set simulation.symmetry=false >"$tmp/full.json"
  t_sym=$(json_number "$tmp/sym.json" iteration_time_s)
  t_full=$(json_number "$tmp/full.json" iteration_time_s)
  flows_sym=$(json_number "$tmp/sym.json" flows_simulated)
  flows_full=$(json_number "$tmp/full.json" flows_simulated)
  diff=$(awk -v a="$t_sym" -v b="$t_full" 'BEGIN { printf "%+.2e", (a - b) / b }')
  total=$((total + 1))
  [ "$t_sym" = "$t_full" ] && same=$((same + 1))
  layout="TP$tp CP$cp PP$pp DP$dp ZeRO-$zero"
  [ "$impl" != - ] && layout+="/$impl"
  printf '%-15s %-52s %-44s %20s %20s %10s %9s %9s\n' "$fabric" "$layout" \
    "${extra:--}" "$t_sym" "$t_full" "$diff" "$flows_sym" "$flows_full"
done <<'LAYOUTS'
fat-tree 2 2 1 3 fsdp
fat-tree 2 4 1 3 fsdp
fat-tree 4 2 1 3 fsdp
fat-tree 2 2 2 3 fsdp
fat-tree 1 4 1 3 fsdp
fat-tree 2 2 1 0 -
fat-tree 2 2 2 0 - parallelism.pipeline_schedule=interleaved-1f1b
fat-tree 2 2 2 1 megatron-distributed-optimizer
fat-tree 4 2 2 1 megatron-distributed-optimizer
fat-tree 2 2 1 3 fsdp cluster.network.radix=12
fat-tree 2 2 1 2 deepspeed optimizations.offload.preset=zero-offload
rail-optimized 2 2 1 3 fsdp
rail-optimized 2 4 2 3 fsdp
rail-optimized 4 2 1 1 megatron-distributed-optimizer
rail-optimized 2 2 2 3 deepspeed
rail-optimized 2 1 2 3 fsdp
rail-optimized 2 2 1 3 fsdp parallelism.recompute=full
rail-optimized 2 2 1 2 deepspeed
rail-optimized 2 2 1 3 fsdp2
rail-optimized 1 2 1 3 fsdp
rail-optimized 4 1 2 3 fsdp
rail-optimized 2 2 4 1 megatron-distributed-optimizer
rail-optimized 2 2 1 3 fsdp optimizations.offload.activations=cpu
ideal 2 2 1 3 fsdp
ideal 2 4 1 1 megatron-distributed-optimizer
LAYOUTS
echo "identical to every digit: $same of $total"
