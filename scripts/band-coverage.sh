#!/usr/bin/env bash
# Held-out check of the error bands (issue 28; docs/validation.md, "Error bands"): every validation
# case is predicted with the analytic backend, and each case's 80% band is computed from the other
# cases alone (leave-one-out); prints, per case, its residual, that band and whether the measured
# value fell inside, then the coverage. The bands are honest when it is 70-90%.
# Usage: scripts/band-coverage.sh [--write] [PATH...]
#        scripts/band-coverage.sh --folders
#   default PATHs: the case folders of validation/ that make the bands (`folders` below, the one list:
#   tests/cli/bands_current.sh reads it with --folders); --write also replaces validation/bands.json
#   with the result (then rebuild: the file is built into trainsim).
set -euo pipefail
folders=(validation/training validation/training-fsdp-dev validation/training-llmfoundry validation/training-llmfoundry-h100
         validation/training-torchtitan validation/training-fms-fsdp validation/training-deepspeed validation/gpu-h200)
if [ "${1:-}" = "--folders" ]; then
  printf '%s\n' "${folders[@]}"
  exit 0
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$repo/build/sim/cli/trainsim
write=0
if [ "${1:-}" = "--write" ]; then
  write=1
  shift
fi
paths=("$@")
if [ ${#paths[@]} -eq 0 ]; then
  cd "$repo"
  paths=("${folders[@]}")
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# validate exits 3 only for --tolerance, which is not given; any other failure stops here.
"$bin" validate "${paths[@]}" --backend analytic --quiet --write-bands "$tmp/bands.json" >"$tmp/table" 2>"$tmp/log" || {
  cat "$tmp/log" >&2
  exit 1
}
python3 - "$tmp/bands.json" <<'PY'
import json, math, sys
doc = json.load(open(sys.argv[1]))
for kind in ("time", "memory"):
    h = doc["held_out"][kind]
    print(f"{kind} residuals (ln predicted/measured), each case's {100 * doc['coverage']:g}% band from the others:")
    # error: the case's prediction against its measurement as a time (memory) error, e^r - 1;
    # band: e^q - 1 of the band computed without it; level and cases: its similarity group.
    print(f"  {'case':<72} {'error':>8} {'band':>8} {'level':>5} {'cases':>5}  inside")
    for c in h["per_case"]:
        print(f"  {c['name']:<72} {100 * (math.exp(c['residual']) - 1):>+7.1f}% {100 * (math.exp(c['band']) - 1):>7.1f}% "
              f"{c['level']:>5} {c['group_cases']:>5}  {'yes' if c['inside'] else 'NO'}")
    print(f"  held-out coverage: {h['inside']}/{h['cases']} = {100 * h['coverage']:.1f}%")
PY
grep '^wrote' "$tmp/log" | sed "s|$tmp/bands.json|the bands|"
if [ "$write" -eq 1 ]; then
  cp "$tmp/bands.json" "$repo/validation/bands.json"
  echo "validation/bands.json replaced: rebuild trainsim to ship it"
fi
