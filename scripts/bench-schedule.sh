#!/usr/bin/env bash
# The cluster scheduler at scale (issue 29, "Done when"): a synthetic trace of 1,000 jobs on a
# three-type cluster of 10,000 GPUs (examples/schedule/cluster-10k.json, philly-1000.json), simulated
# under each policy given (default: fifo, las, gavel-las). Prints the wall time of the whole command
# (throughput matrix included) and the simulation's own time per policy, from its stderr; the target
# is under a minute on the development machine (2 shared cores).
# Usage: scripts/bench-schedule.sh [POLICY,POLICY,...]
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${TRAINSIM:-$repo/build/sim/cli/trainsim}
policies=${1:-fifo,las,gavel-las}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s.%N)
"$bin" schedule "$repo/examples/schedule/cluster-10k.json" "$repo/examples/schedule/philly-1000.json" \
  --policy "$policies" >"$tmp/out" 2>"$tmp/err"
status=$?
end=$(date +%s.%N)
if [ "$status" -ne 0 ]; then
  echo "bench-schedule: trainsim exited $status" >&2
  cat "$tmp/err" >&2
  exit "$status"
fi
cat "$tmp/out"
sed 's/^schedule: /  /' "$tmp/err"
awk -v a="$start" -v b="$end" -v p="$policies" \
  'BEGIN {printf "1000 jobs, 10000 GPUs of 3 types, policies %s: %.1f s wall (target < 60 s)\n", p, b - a}'
