#!/usr/bin/env bash
# The whole bad-input corpus through the real binary (issue 16, "Done when"): every file the tests
# keep as bad input goes through every subcommand that reads its kind of file, and must end with
# exit 0, 2 or 3 (never 1 = a trainsim bug, never a signal, never a hang), with no "internal error"
# on stderr. Each case's .expected lines must appear on stderr ("{file}" stands for the case's path):
# of `check` for scenarios, `trace import-kineto` for Kineto traces, `replay` for trace files/folders.
#
#   tests/data/bad/*.json              scenarios: check, run --backend analytic; the JSON-level cases
#                                      also to validate, the Kineto importer, the nccl-tests parser and
#                                      import --hf / --deepspeed
#   tests/data/traces/*.json,
#   tests/data/traces/bad/*.json       Kineto traces: trace import-kineto
#   tests/data/traces/bad/*.trace and
#   tests/data/traces/bad/*/           trace files / folders: replay (analytic), calibrate, trace summary,
#                                      trace dump (files), and the nccl-tests parser as foreign input
#   tests/data/nccl-tests/*.txt        calibrate --nccl-tests
#   tests/data/bad/import/FORMAT/*     import --FORMAT (megatron, torchtitan, deepspeed, hf)
set -u
bin=$1
src=$2
# shellcheck source=tests/cli/check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"

# survives NAME COMMAND...: exit 0, 2 or 3 within 20 s, and no "internal error" on stderr.
survives() {
  local name=$1
  shift
  timeout 20 "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  case $got in
    0 | 2 | 3) ;;
    *)
      echo "FAIL $name: exit $got (bad input may only end with 0, 2 or 3; 124 = over 20 s)"
      sed 's/^/  stderr: /' "$tmp/err" | head -10
      failures=$((failures + 1))
      return 1
      ;;
  esac
  if grep -q "internal error" "$tmp/err"; then
    echo "FAIL $name: \"internal error\" on stderr"; sed 's/^/  stderr: /' "$tmp/err" | head -10
    failures=$((failures + 1))
    return 1
  fi
  passes=$((passes + 1))
}

# expected_lines NAME CASE EXPECTED_FILE: every line of EXPECTED_FILE ({file} = CASE) is on stderr.
expected_lines() {
  local name=$1 case_path=$2 expected=$3 line
  [ -f "$expected" ] || return 0
  while IFS= read -r line || [ -n "$line" ]; do
    [ -n "$line" ] || continue
    contains "$name" "$tmp/err" "${line//\{file\}/$case_path}"
  done <"$expected"
}

bad="$src/tests/data/bad"
scenarios=0
for f in "$bad"/*.json; do
  name=$(basename "$f" .json)
  scenarios=$((scenarios + 1))
  survives "check $name" "$bin" check "$f" && expected_lines "check $name" "$f" "$bad/$name.expected"
  survives "run $name" "$bin" run "$f" --backend analytic
done
# The cases that are bad as JSON (not as a scenario) also go to the other JSON and text readers.
for name in syntax-error nested-too-deep number-beyond-double; do
  survives "validate $name" "$bin" validate "$bad/$name.json"
  survives "import-kineto $name" "$bin" trace import-kineto "$bad/$name.json" --out "$tmp/import"
  survives "nccl-tests $name" "$bin" calibrate --nccl-tests "$bad/$name.json" -o "$tmp/profile.json"
  survives "import-hf $name" "$bin" import --hf "$bad/$name.json" --gpu H100-SXM5-80GB
  survives "import-deepspeed $name" "$bin" import --deepspeed "$bad/$name.json" --gpu H100-SXM5-80GB
done

# Configurations for `trainsim import` (tests/data/bad/import/FORMAT/NAME.*): each read with
# --FORMAT, and NAME.expected's lines on stderr.
import_cases=0
for dir in "$bad"/import/*/; do
  format=$(basename "$dir")
  for f in "$dir"*; do
    case $f in *.expected) continue ;; esac
    name="import-$format $(basename "$f")"
    import_cases=$((import_cases + 1))
    survives "$name" "$bin" import "--$format" "$f" --gpu H100-SXM5-80GB && expected_lines "$name" "$f" "${f%.*}.expected"
  done
done

# The inputs of `trainsim schedule` (tests/data/bad/schedule): NAME.cluster.json with the good trace,
# NAME.jobs.json with the good cluster; NAME.expected's lines on stderr.
schedule_cases=0
good="$src/tests/data/schedule"
for f in "$bad"/schedule/*.json; do
  name=$(basename "$f" .json)
  schedule_cases=$((schedule_cases + 1))
  case $name in
    *.cluster) args=("$f" "$good/jobs-3.json") ;;
    *) args=("$good/cluster-3types.json" "$f") ;;
  esac
  survives "schedule $name" "$bin" schedule "${args[@]}" --matrix &&
    expected_lines "schedule $name" "$f" "$bad/schedule/${name%.*}.expected"
done

traces="$src/tests/data/traces"
for f in "$traces"/*.json "$traces"/bad/*.json; do
  name=$(basename "$f" .json)
  survives "import-kineto $name" "$bin" trace import-kineto "$f" --out "$tmp/import" &&
    expected_lines "import-kineto $name" "$f" "${f%.json}.expected"
done
trace_cases=0
for f in "$traces"/bad/*.trace "$traces"/bad/*/; do
  [ -e "$f" ] || continue
  f=${f%/}
  name=$(basename "$f")
  trace_cases=$((trace_cases + 1))
  survives "replay $name" "$bin" replay "$f" --backend analytic && expected_lines "replay $name" "$f" "${f%.trace}.expected"
  survives "calibrate $name" "$bin" calibrate "$f" -o "$tmp/profile.json"
  survives "trace summary $name" "$bin" trace summary "$f"
  if [ -f "$f" ]; then
    survives "trace dump $name" "$bin" trace dump "$f"
    survives "nccl-tests $name" "$bin" calibrate --nccl-tests "$f" -o "$tmp/profile.json"
  fi
done
for f in "$src"/tests/data/nccl-tests/*.txt; do
  survives "nccl-tests $(basename "$f")" "$bin" calibrate --nccl-tests "$f" -o "$tmp/profile.json"
done
echo "corpus: $scenarios scenarios, $trace_cases trace cases, $import_cases import cases, $schedule_cases schedule cases"
report
