#!/usr/bin/env bash
# `trainsim export --to chakra` and `trainsim replay --chakra` end to end (docs/chakra.md): a 16-rank
# scenario exported and replayed gives the scenario's own iteration time under both backends, the
# files are named as ASTRA-sim reads them, the hand-made fixture replays, and bad input exits 2
# naming the file and what was expected.
set -u
bin=$1
src=$2
# shellcheck source=tests/cli/check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
data="$src/tests/data/chakra"
scenario="$data/gpt-16-pp.json"

expect export 0 "$bin" export --to chakra "$scenario" -o "$tmp/et"
contains export "$tmp/err" "wrote 16 Chakra traces"
contains export "$tmp/err" "read them back with: trainsim replay --chakra $tmp/et/gpt-16-pp --scenario $scenario"
contains export-memory-note "$tmp/err" "not expressed: memory:"
for f in gpt-16-pp.0.et gpt-16-pp.15.et gpt-16-pp.comm_groups.json; do
  expect "export-file-$f" 0 test -s "$tmp/et/$f"
done
expect comm-groups-json 0 python3 -c 'import json, sys; g = json.load(open(sys.argv[1])); assert g["1"] == [0, 1], g' "$tmp/et/gpt-16-pp.comm_groups.json"
expect export-strict 2 "$bin" export --to chakra "$scenario" -o "$tmp/et-strict" --strict
contains export-strict "$tmp/err" "$scenario: memory: not expressible as Chakra traces"

# The round trip: `run` and `replay --chakra` print the same iteration time (to 1e-6) per backend.
time_of() { python3 -c 'import json, sys; print(json.load(sys.stdin)["iteration_time_s"])'; }
for backend in analytic simgrid; do
  run=$("$bin" run "$scenario" --backend "$backend" --format json | time_of)
  back=$("$bin" replay --chakra "$tmp/et/gpt-16-pp" --scenario "$scenario" --backend "$backend" --format json | time_of)
  expect "round-trip-$backend" 0 python3 -c 'import sys; a, b = map(float, sys.argv[1:]); assert abs(a - b) <= 1e-6 * a, (a, b)' "$run" "$back"
done
expect replay-folder 0 "$bin" replay --chakra "$tmp/et" --scenario "$scenario" --backend analytic
contains replay-folder "$tmp/out" "layout tensor 2 x context 1 x expert 1 x data 4 x pipeline 2 from trainsim metadata"
# ASTRA-sim's communicator-group file agrees with the metadata nodes; one that contradicts them is refused.
expect comm-groups 0 "$bin" replay --chakra "$tmp/et" --comm-groups "$tmp/et/gpt-16-pp.comm_groups.json" --scenario "$scenario" --backend analytic
echo '{"1": [0, 2]}' >"$tmp/groups.json"
expect comm-groups-contradict 2 "$bin" replay --chakra "$tmp/et" --comm-groups "$tmp/groups.json" --scenario "$scenario" --backend analytic
contains comm-groups-contradict "$tmp/err" "process group \"1\" has ranks 0,1 here and 0,2 in $tmp/groups.json"
expect replay-csv 0 "$bin" replay --chakra "$tmp/et" --scenario "$scenario" --backend analytic --format csv
contains replay-csv "$tmp/out" "iteration_time_s"

# The hand-made fixture (encoded from the public field numbers) on a cluster given by --set.
expect handmade 0 "$bin" replay --chakra "$data/handmade" --set cluster.gpu=H100-SXM5-80GB --backend analytic --format json
contains handmade "$tmp/out" '"untimed": 1'
contains handmade "$tmp/out" '"cluster_from": "cluster"'
expect handmade-no-gpu 2 "$bin" replay --chakra "$data/handmade" --backend analytic
contains handmade-no-gpu "$tmp/err" "the traces name no GPU"

# Bad input: exit 2 with the file and what was expected.
expect export-no-out 2 "$bin" export --to chakra "$scenario"
contains export-no-out "$tmp/err" "give the folder to write them in with -o"
mkdir -p "$tmp/missing"
cp "$tmp/et/gpt-16-pp.0.et" "$tmp/et/gpt-16-pp.2.et" "$tmp/missing/"
expect missing-rank 2 "$bin" replay --chakra "$tmp/missing" --scenario "$scenario"
contains missing-rank "$tmp/err" "gpt-16-pp.1.et: rank 1 has no file"
head -c 1000 "$tmp/et/gpt-16-pp.0.et" >"$tmp/missing/gpt-16-pp.1.et"
expect truncated 2 "$bin" replay --chakra "$tmp/missing" --scenario "$scenario"
contains truncated "$tmp/err" "gpt-16-pp.1.et: truncated: the node message at byte"
expect both-inputs 2 "$bin" replay "$tmp/missing" --chakra "$tmp/missing"
contains both-inputs "$tmp/err" "give either trainsim traces or --chakra, not both"
expect no-input 2 "$bin" replay
contains no-input "$tmp/err" "give trainsim trace files or folders, or --chakra FOLDER"

report
