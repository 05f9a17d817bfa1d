#!/usr/bin/env bash
# The shipped error bands are those of this build (issue 28; docs/validation.md, "Error bands"):
# validation/bands.json holds each validation case's residual as the analytic backend predicted it
# when the file was written, and `run` builds its bands from it. A change that moves a validation
# prediction without rewriting the file leaves stale bands; this test recomputes the records with
# `trainsim validate --write-bands` and compares them with the shipped file, case by case.
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src" || exit 1
# The folders that make the bands, from the script that writes them (one list).
mapfile -t folders < <(scripts/band-coverage.sh --folders)
[ ${#folders[@]} -gt 0 ] || { echo "scripts/band-coverage.sh --folders listed nothing" >&2; exit 1; }
"$bin" validate "${folders[@]}" \
  --backend analytic --quiet --write-bands "$tmp/bands.json" >"$tmp/table" 2>"$tmp/log" || {
  echo "validate failed:" >&2
  cat "$tmp/log" >&2
  exit 1
}
python3 - "$tmp/bands.json" validation/bands.json <<'PY'
import json, sys

now, shipped = (json.load(open(p)) for p in sys.argv[1:3])
problems = []
old = {c["name"]: c for c in shipped["cases"]}
new = {c["name"]: c for c in now["cases"]}
for name in sorted(set(old) | set(new)):
    if name not in old:
        problems.append(f"{name}: a validation case the shipped file lacks")
        continue
    if name not in new:
        problems.append(f"{name}: in the shipped file, no longer a validation case")
        continue
    a, b = old[name], new[name]
    for key in ("time_residual", "memory_residual"):
        x, y = a.get(key), b.get(key)
        if (x is None) != (y is None) or (x is not None and abs(x - y) > 1e-9):
            problems.append(f"{name}: {key} shipped {x}, this build {y}")
    if a.get("traits") != b.get("traits"):
        problems.append(f"{name}: its traits (stack, generation, mix, GPUs, mechanisms) changed")
if problems:
    print("validation/bands.json is stale: regenerate it with scripts/band-coverage.sh --write and rebuild", file=sys.stderr)
    for p in problems:
        print("  " + p, file=sys.stderr)
    sys.exit(1)
print(f"validation/bands.json is current: {len(new)} cases")
PY
