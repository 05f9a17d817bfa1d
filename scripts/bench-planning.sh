#!/usr/bin/env bash
# The SimGrid engine at planning scale (issue 32): for each target, the wall time of a SimGrid run
# with call replays (simulation.replay, the default), with node folding on every fabric
# (simulation.node_symmetry "approximate"), without replays, and of the analytic backend, with the
# predicted iteration time of each, in one run of this script (compare within a run: the machines
# are noisy). A case that does not finish within TRAINSIM_BENCH_TIMEOUT seconds (default 300) prints
# "> N" and what it printed; a refusal prints its first line. Each row gives the wall seconds and
# the CPU seconds the command used (user + system): on a shared machine the CPU seconds are the
# steadier figure. With TRAINSIM_BASELINE=/path/to/other/trainsim, every default SimGrid row is run
# with that binary too, right after this build's, so that a before/after pair comes from one run.
# TRAINSIM_BIN replaces this build's binary (build/sim/cli/trainsim).
# Usage: scripts/bench-planning.sh [--quick]    (--quick: the single runs only, no search)
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${TRAINSIM_BIN:-$repo/build/sim/cli/trainsim}
baseline=${TRAINSIM_BASELINE:-}
limit=${TRAINSIM_BENCH_TIMEOUT:-300}
quick=false
[[ ${1:-} == --quick ]] && quick=true
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# measure LABEL MODE COMMAND...: one row (wall seconds, predicted iteration time, flows, replayed calls).
measure() {
  local label=$1 mode=$2
  shift 2
  local start end status=0
  start=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$tmp/cpu" timeout "$limit" "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
  end=$(date +%s.%N)
  local wall
  wall=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')
  wall="$wall/$(awk 'END {printf "%.1f", $1 + $2}' "$tmp/cpu" 2>/dev/null)"
  if [ "$status" -eq 124 ]; then
    printf '%-58s %-16s %8s  %s\n' "$label" "$mode" "> $limit" "(timed out)"
  elif [ "$status" -ne 0 ]; then
    printf '%-58s %-16s %8s  %s\n' "$label" "$mode" "$wall" "exit $status: $(grep -m1 -v '^$' "$tmp/err" | cut -c1-100)"
  else
    python3 - "$label" "$mode" "$wall" "$tmp/out" <<'EOF'
import json, sys
label, mode, wall, path = sys.argv[1:]
try:
    d = json.load(open(path))
except ValueError:
    print(f"{label:<58} {mode:<16} {wall:>8}  (not JSON)")
    sys.exit()
if "ranked" in d:  # search
    best = d["ranked"][0] if d["ranked"] else {}
    fig = best.get("simgrid") or best.get("analytic") or {}
    print(f"{label:<58} {mode:<16} {wall:>8}  {d.get('simgrid_runs', 0)} SimGrid runs; first: "
          f"{json.dumps(best.get('layout', {}), separators=(',', ':'))[:60]} {fig.get('iteration_time_s', float('nan')):.4f} s")
else:
    net = d.get("network", {})
    closed = net.get("closed_form")
    approximated = (f"  closed form: {','.join(g['group'] for g in closed['groups'])} ({closed['calls']} calls)"
                    if closed else "")
    print(f"{label:<58} {mode:<16} {wall:>8}  {d['iteration_time_s']:.6f} s  flows {net.get('flows_simulated', '-')}"
          f"  replayed {net.get('calls_replayed', '-')}{approximated}")
EOF
  fi
}

# one LABEL SCENARIO [--set ...]: the runs of a scenario.
one() {
  local label=$1
  shift
  measure "$label" "simgrid" "$bin" run "$@" --backend simgrid --format json
  measure "$label" "simgrid, folded" "$bin" run "$@" --backend simgrid --set simulation.node_symmetry=approximate \
    --format json
  [ -n "$baseline" ] && measure "$label" "simgrid, baseline" "$baseline" run "$@" --backend simgrid --format json
  measure "$label" "simgrid, no replay" "$bin" run "$@" --backend simgrid --set simulation.replay=false --format json
  measure "$label" "analytic" "$bin" run "$@" --backend analytic --format json
}

printf '%-58s %-16s %8s  %s\n' case mode wall/cpu "predicted iteration / best layout"
fsdp=(--set cluster.nodes=128 --set parallelism.tensor=1 --set parallelism.pipeline=1 --set parallelism.data=256
      --set parallelism.context=4 --set parallelism.zero_stage=3 --set parallelism.zero_impl=fsdp
      --set parallelism.sequence_parallel=false --set training.global_batch=512)
one "Llama 3 70B, 1,024 H100, TP1 PP1 DP256 CP4 ZeRO-3 fsdp" "$repo/scenarios/llama3-70b-h100-64.json" "${fsdp[@]}"
one "Qwen3-235B-A22B validation case, 256 H100" \
  "$repo/validation/training/megatron-bridge-26.04-qwen3_235b_a22b-h100-256gpu-fp8.json"
one "Llama 3 405B, 16,384 H100 (bench scenario)" "$repo/scenarios/bench/llama3-405b-h100-16384.json"
one "Llama 3 405B, 131,072 H100 (nodes 16384, data auto)" "$repo/scenarios/bench/llama3-405b-h100-16384.json" \
  --set cluster.nodes=16384 --set parallelism.data=auto
one "GPT-3 175B, 1,024 A100 (bench scenario)" "$repo/scenarios/bench/gpt3-175b-a100-1024.json"
# Beyond the targets: FSDP over 4,096 ranks on three-level rail trees, over simulation.max_seconds by
# its estimate, so its data group is priced in closed form (docs/network.md, "Over the flow budget").
fsdp16k=(--set cluster.nodes=2048 --set parallelism.tensor=1 --set parallelism.pipeline=1 --set parallelism.data=4096
         --set parallelism.context=4 --set parallelism.zero_stage=3 --set parallelism.zero_impl=fsdp
         --set parallelism.sequence_parallel=false --set training.global_batch=8192)
measure "Llama 3 70B, 16,384 H100, TP1 CP4 DP4096 fsdp (not a target)" "simgrid" \
  "$bin" run "$repo/scenarios/llama3-70b-h100-64.json" "${fsdp16k[@]}" --backend simgrid --format json
measure "Llama 3 70B, 16,384 H100, TP1 CP4 DP4096 fsdp (not a target)" "analytic" \
  "$bin" run "$repo/scenarios/llama3-70b-h100-64.json" "${fsdp16k[@]}" --backend analytic --format json
if ! $quick; then
  measure "search Llama 3 70B --gpus 1024,2048 --top 5" "simgrid re-check" \
    "$bin" search "$repo/scenarios/llama3-70b-h100-64.json" --gpus 1024,2048 --top 5 --quiet --format json
  measure "search GPT-3 175B 1,024 A100 --top 10" "simgrid re-check" \
    "$bin" search "$repo/scenarios/bench/gpt3-175b-a100-1024.json" --gpus 1024 --quiet --format json
  measure "search Llama 3 70B --gpus 1024,2048 --top 5" "re-check, folded" \
    "$bin" search "$repo/scenarios/llama3-70b-h100-64.json" --gpus 1024,2048 --top 5 --quiet --format json \
    --set simulation.node_symmetry=approximate
  measure "search GPT-3 175B 1,024 A100 --top 10" "re-check, folded" \
    "$bin" search "$repo/scenarios/bench/gpt3-175b-a100-1024.json" --gpus 1024 --quiet --format json \
    --set simulation.node_symmetry=approximate
  if [ -n "$baseline" ]; then
    measure "search Llama 3 70B --gpus 1024,2048 --top 5" "re-check, baseline" \
      "$baseline" search "$repo/scenarios/llama3-70b-h100-64.json" --gpus 1024,2048 --top 5 --quiet --format json
    measure "search GPT-3 175B 1,024 A100 --top 10" "re-check, baseline" \
      "$baseline" search "$repo/scenarios/bench/gpt3-175b-a100-1024.json" --gpus 1024 --quiet --format json
  fi
fi
