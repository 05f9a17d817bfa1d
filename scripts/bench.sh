#!/usr/bin/env bash
# The engine benchmarks (issue 3): for each case, wall time, peak RSS, simulated events or flows, and
# the predicted time, one run each on this machine. Figures, not pass/fail: compare them in one run.
#   1 GiB all-reduce over 1,024 / 4,096 / 16,384 H100 (8 per node, rail-optimized, 400 Gb/s NICs)
#   one iteration of scenarios/bench/*.json (GPT-3 175B on 1,024 A100; Llama 3 405B on 16,384 H100)
# Each case runs with its address space capped (TRAINSIM_BENCH_MEMORY_GIB, default 8) so that one that
# needs too much memory prints a failed row instead of taking the machine down.
# The events column is the network flows for collectives, and "tasks / flows" (tasks executed over the
# simulated ranks / network flows simulated, images included) for iterations.
# Usage: scripts/bench.sh [--fidelities "analytic flow step"] [--backends "simgrid analytic"]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fidelities="analytic flow"
backends="simgrid analytic"
while [ $# -gt 0 ]; do
  case $1 in
    --fidelities) fidelities=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    *) echo "usage: $0 [--fidelities LIST] [--backends LIST]" >&2; exit 2 ;;
  esac
done

"$repo/scripts/setup.sh" "$repo/build"
bin=$repo/build/sim/cli/trainsim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

memory_kib=$(( ${TRAINSIM_BENCH_MEMORY_GIB:-8} * 1024 * 1024 ))

# run OUT COMMAND...: runs it under /usr/bin/time with the memory cap; sets wall, rss_mib and status.
run() {
  local out=$1
  shift
  status=0
  (ulimit -v "$memory_kib"; /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >"$out" 2>"$tmp/err") || status=$?
  read -r wall rss_kib < <(tail -1 "$tmp/time")
  rss_mib=$((${rss_kib:-0} / 1024))
}
# failed CASE MODE: the row of a case that did not finish.
failed() {
  printf '%-44s %-10s %9s %9s %20s %14s  %s\n' "$1" "$2" "$wall" "$rss_mib" - - \
    "failed (exit $status: $(head -c 80 "$tmp/err" | tr '\n' ' '))"
}
# json_number FILE KEY: the first number after "KEY": in FILE.
json_number() { { grep -o "\"$2\": *[-0-9.e+]*" "$1" || true; } | head -1 | sed 's/.*: *//'; }

printf '%-44s %-10s %9s %9s %20s %14s\n' case mode wall_s rss_MiB events predicted_s
for gpus in 1024 4096 16384; do
  for fidelity in $fidelities; do
    run "$tmp/out" "$bin" collective --op all_reduce --gpus "$gpus" --gpus-per-node 8 --topology rail-optimized \
      --gpu H100-SXM5-80GB --nic-bandwidth "400 Gb/s" --sizes 1G:1G --fidelity "$fidelity" --format json
    if [ "$status" -ne 0 ]; then failed "all_reduce 1 GiB x $gpus GPUs" "$fidelity"; continue; fi
    time_us=$(json_number "$tmp/out" time_us)
    printf '%-44s %-10s %9s %9s %20s %14.6f\n' "all_reduce 1 GiB x $gpus GPUs" "$fidelity" "$wall" "$rss_mib" \
      "$(json_number "$tmp/out" flows)" "$(echo "$time_us" | awk '{print $1 / 1e6}')"
  done
done
# Collective speed on the default fabric (issue 12): a 1 GiB all-reduce at flow fidelity on the
# default fat-tree (A100, 8 per node, 200 Gb/s), with symmetry and, for the ratio in one run, without;
# a flat ring over single-GPU nodes of an ideal switch; and the step fidelity's up-front refusal.
# The `timing:` lines split the wall time into topology, SimGrid platform, flows and simulation.
collective_case() {
  local name=$1
  shift
  run "$tmp/out" "$bin" collective --op all_reduce --sizes 1G:1G --format json --timings "$@"
  if [ "$status" -ne 0 ]; then failed "$name" flow; sed 's/^/    /' "$tmp/err" | head -3; return; fi
  printf '%-44s %-10s %9s %9s %20s %14.6f\n' "$name" flow "$wall" "$rss_mib" "$(json_number "$tmp/out" flows)" \
    "$(json_number "$tmp/out" time_us | awk '{print $1 / 1e6}')"
  grep -h "^timing:" "$tmp/err" | sed 's/^/    /' || true
}
echo
printf '%-44s %-10s %9s %9s %20s %14s\n' case mode wall_s rss_MiB flows predicted_s
collective_case "all_reduce 1 GiB x 4,096 GPUs, fat-tree" --gpus 4096
collective_case "same, --no-symmetry" --gpus 4096 --no-symmetry
collective_case "all_reduce 1 GiB x 16,384 GPUs, fat-tree" --gpus 16384
collective_case "flat ring 1 GiB x 16,384 1-GPU nodes, ideal" --gpus 16384 --gpus-per-node 1 --topology ideal \
  --algorithm ring
collective_case "NCCL ring 1 GiB x 4,096 GPUs, fat-tree" --gpus 4096 --algorithm ring
run "$tmp/out" "$bin" collective --op all_reduce --sizes 1G:1G --gpus 4096 --fidelity step
printf '%-44s %-10s %9s %9s  %s\n' "all_reduce 1 GiB x 4,096 GPUs" step "$wall" "$rss_mib" \
  "exit $status: $(head -c 160 "$tmp/err" | tr '\n' ' ')"
echo

for scenario in "$repo"/scenarios/bench/*.json; do
  for backend in $backends; do
    run "$tmp/out" "$bin" run "$scenario" --backend "$backend" --format json
    if [ "$status" -ne 0 ]; then failed "$(basename "$scenario" .json)" "$backend"; continue; fi
    flows=$(json_number "$tmp/out" flows_simulated)
    printf '%-44s %-10s %9s %9s %20s %14.6f\n' "$(basename "$scenario" .json)" "$backend" "$wall" "$rss_mib" \
      "$(json_number "$tmp/out" events)/${flows:-0}" "$(json_number "$tmp/out" iteration_time_s)"
  done
done

# Search (issue 10). First pass on one core: closed-form estimates per minute (--jobs 1, every valid
# layout of GPT-3 175B on 1,024 A100). Then exhaustive searches with all cores, wall time including
# the analytic backend on the best 30 estimates and the SimGrid re-check of the top 10.
echo
printf '%-52s %9s %9s %12s %12s  %s\n' "search case" wall_s rss_MiB candidates valid winner
search_case() {
  local name=$1
  shift
  run "$tmp/out" "$bin" search "$@" --format json
  if [ "$status" -ne 0 ]; then failed "$name" search; return; fi
  local winner
  winner=$(grep -m1 -o '"iteration_time_s": *[0-9.e+-]*' "$tmp/out" | sed 's/.*: *//')
  printf '%-52s %9s %9s %12s %12s  %s\n' "$name" "$wall" "$rss_mib" "$(json_number "$tmp/out" candidates)" \
    "$(json_number "$tmp/out" valid)" "estimate of #1 ${winner}s"
  grep -h "^search:" "$tmp/err" | sed 's/^/    /' || true
}
search_case "first pass, 1 core: gpt3-175b-a100-1024" "$repo/scenarios/gpt3-175b-a100-1024.json" \
  --jobs 1 --refine 1 --no-recheck
search_case "gpt3-175b on 1,024 A100 (top 10 re-checked)" "$repo/scenarios/gpt3-175b-a100-1024.json"
search_case "llama3-70b on 256-4,096 H100 (top 10 re-checked)" "$repo/scenarios/llama3-70b-h100-64.json" \
  --gpus 256:4096
