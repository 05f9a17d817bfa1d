#!/usr/bin/env bash
# How far the over-budget approximation (simulation.over_budget "approximate": the costliest classes
# of collectives priced in closed form, docs/network.md "Over the flow budget") moves a SimGrid
# prediction. For each scenario, runs the full SimGrid simulation and the analytic backend, then
# SimGrid again under each flow budget of BUDGETS (simulation.max_flows), which makes it price the
# costliest classes in closed form; prints one row per budget: the classes approximated, the
# iteration time, its difference from the full SimGrid run and from the analytic backend.
# Usage: scripts/approximation-check.sh [SCENARIO...]   (default: the bundled scenarios that SimGrid
#        runs in full within a minute)
# Environment: BUDGETS (default "100000 10000 1000"), TRAINSIM_BENCH_TIMEOUT (default 600 s a run).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$repo/build/sim/cli/trainsim
limit=${TRAINSIM_BENCH_TIMEOUT:-600}
read -r -a budgets <<<"${BUDGETS:-100000 10000 1000}"
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  files=("$repo"/scenarios/gpt3-6.7b-a100-8.json "$repo"/scenarios/llama3-70b-h100-64.json
         "$repo"/scenarios/llama3-8b-2of4-h100-16.json "$repo"/scenarios/gpt3-175b-a100-1024.json)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

calc() { python3 -c "print($1)"; }
figure() {  # figure JSON_FILE -> "iteration_time_s|classes|calls"
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r.get("network", {}).get("closed_form")
groups = ",".join(g["group"] for g in c["groups"]) if c else "-"
print(f'{r["iteration_time_s"]!r}|{groups}|{c["calls"] if c else 0}')
PY
}

printf '%-28s %9s %-20s %8s %14s %10s %10s %8s\n' scenario budget approximated calls iteration_s vs_full vs_analytic wall_s
for f in "${files[@]}"; do
  name=$(basename "$f" .json)
  "$bin" run "$f" --backend analytic --format json >"$tmp/a.json" 2>"$tmp/err" || { echo "$name: analytic run failed"; continue; }
  analytic=$(figure "$tmp/a.json" | cut -d'|' -f1)
  start=$(date +%s.%N)
  if ! timeout "$limit" "$bin" run "$f" --backend simgrid --format json >"$tmp/s.json" 2>"$tmp/err"; then
    echo "$name: full SimGrid run failed or took over ${limit} s"
    continue
  fi
  wall=$(calc "$(date +%s.%N) - $start")
  full=$(figure "$tmp/s.json" | cut -d'|' -f1)
  printf '%-28s %9s %-20s %8s %14.6g %10s %+9.3f%% %8.1f\n' "$name" full - 0 "$full" - \
    "$(calc "100 * ($full / $analytic - 1)")" "$wall"
  for b in "${budgets[@]}"; do
    start=$(date +%s.%N)
    if ! timeout "$limit" "$bin" run "$f" --backend simgrid --format json --set simulation.max_flows="$b" \
        >"$tmp/b.json" 2>"$tmp/err"; then
      printf '%-28s %9s %s\n' "$name" "$b" "$(grep -m1 -o 'error: .\{0,70\}' "$tmp/err")"
      continue
    fi
    wall=$(calc "$(date +%s.%N) - $start")
    IFS='|' read -r t classes calls <<<"$(figure "$tmp/b.json")"
    printf '%-28s %9s %-20s %8s %14.6g %+9.3f%% %+9.3f%% %8.1f\n' "$name" "$b" "$classes" "$calls" "$t" \
      "$(calc "100 * ($t / $full - 1)")" "$(calc "100 * ($t / $analytic - 1)")" "$wall"
  done
done
