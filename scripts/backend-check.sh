#!/usr/bin/env bash
# SimGrid against the analytic backend on every bundled scenario and validation case (issue 32): the
# analytic backend is the same execution without contention, so SimGrid should not come out faster
# by more than rounding; where it does, docs/network.md ("When SimGrid is faster than the analytic
# backend") says why. Prints one row per case: both iteration times and SimGrid / analytic - 1, and
# flags rows below -0.5%. A case SimGrid refuses (simulation.max_flows) or that does not finish in
# TRAINSIM_BENCH_TIMEOUT seconds (default 600) says so.
# TRAINSIM_BIN replaces this build's binary (build/sim/cli/trainsim), e.g. a wrapper that adds --set
# options to every run (scripts/approximate-folding-check.sh).
# Usage: scripts/backend-check.sh [PATH...]   (default: scenarios/ validation/)
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${TRAINSIM_BIN:-$repo/build/sim/cli/trainsim}
limit=${TRAINSIM_BENCH_TIMEOUT:-600}
paths=("$@")
[ ${#paths[@]} -eq 0 ] && paths=("$repo/scenarios" "$repo/validation")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '%-64s %14s %14s %9s\n' case analytic_s simgrid_s diff
find "${paths[@]}" -name '*.json' ! -name 'features.json' ! -name 'hardware-specs.json' ! -name 'bands.json' ! -path '*/collectives/*' |
  sort | while read -r f; do
  name=$(basename "$f" .json)
  a=$("$bin" run "$f" --backend analytic --format json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["iteration_time_s"])' 2>/dev/null)
  if [ -z "$a" ]; then
    printf '%-64s %14s\n' "$name" "(not a scenario run can take)"
    continue
  fi
  status=0
  timeout "$limit" "$bin" run "$f" --backend simgrid --format json >"$tmp/out" 2>"$tmp/err" || status=$?
  if [ "$status" -eq 124 ]; then
    printf '%-64s %14.6g %14s\n' "$name" "$a" "> ${limit} s"
  elif [ "$status" -ne 0 ]; then
    printf '%-64s %14.6g %14s  %s\n' "$name" "$a" "exit $status" "$(grep -m1 -o 'simulation.max_flows\|error: .\{0,60\}' "$tmp/err" | head -1)"
  else
    python3 - "$name" "$a" "$tmp/out" <<'EOF'
import json, sys
name, a, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
s = json.load(open(path))["iteration_time_s"]
d = s / a - 1
print(f"{name:<64} {a:>14.6g} {s:>14.6g} {100 * d:>+8.2f}%{'  SimGrid faster' if d < -0.005 else ''}")
EOF
  fi
done
