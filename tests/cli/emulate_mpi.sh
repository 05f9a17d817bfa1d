#!/usr/bin/env bash
# `mpirun -np 8 trainsim emulate` (docs/emulate.md) on the 8-GPU GPT-3 6.7B scenario over loopback:
# it finishes, rank 0 alone prints the emulated and the simulated iteration, every rank writes a trace
# that `trace summary` reads; bad input (too many or too few ranks) exits 2 on every rank with the
# error printed once.
# Usage: emulate_mpi.sh TRAINSIM SOURCE_DIR MPIEXEC. An empty MPIEXEC means trainsim was built without
# MPI: exit 77, which ctest reports as skipped (tests/cli/CMakeLists.txt).
set -u
bin=$1
src=$2
mpiexec=${3:-}
if [ -z "$mpiexec" ]; then
  echo "skipped: trainsim was built without MPI (no libopenmpi-dev when cmake configured)"
  exit 77
fi
# shellcheck source=tests/cli/check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
mpirun=("$mpiexec" --oversubscribe --allow-run-as-root)

count() {  # count NAME FILE TEXT N: TEXT on exactly N lines of FILE
  local n
  n=$(grep -cF -- "$3" "$2")
  if [ "$n" -eq "$4" ]; then passes=$((passes + 1)); else echo "FAIL $1: '$3' on $n lines of $2, expected $4"; sed 's/^/  /' "$2" | head -20; failures=$((failures + 1)); fi
}

scenario="$src/scenarios/gpt3-6.7b-a100-8.json"
# Compute 1000x shorter and messages 10^5x smaller: seconds on 2 cores (docs/emulate.md).
small=("$scenario" --set training.global_batch=32 --scale-compute 0.001 --scale-bytes 1e-5 --iterations 1)

expect emulate 0 "${mpirun[@]}" -np 8 "$bin" emulate "${small[@]}" --trace "$tmp/traces"
count emulate "$tmp/out" "emulated iteration" 1
count emulate "$tmp/out" "simulated (analytic)" 1
count emulate "$tmp/out" "all_gather" 2  # tensor (sequence parallel) and data (ZeRO-1)
count emulate "$tmp/out" "reduce_scatter" 2
n=$(ls "$tmp/traces" | grep -c '^emulate\.rank[0-7]\.trace$')
if [ "$n" -eq 8 ]; then passes=$((passes + 1)); else echo "FAIL traces: $n of 8"; failures=$((failures + 1)); fi
expect trace-summary 0 "$bin" trace summary "$tmp/traces"

# Bad input: every rank exits 2, rank 0 prints the error once.
expect too-many 2 "${mpirun[@]}" -np 9 "$bin" emulate "${small[@]}"
count too-many "$tmp/err" "mpirun started 9" 1
expect too-few 2 "${mpirun[@]}" -np 2 "$bin" emulate "${small[@]}"
count too-few "$tmp/err" "mpirun started 2" 1
expect bad-scale 2 "${mpirun[@]}" -np 8 "$bin" emulate "$scenario" --scale-compute 0
count bad-scale "$tmp/err" "error: --scale-compute" 1

echo "emulate_mpi: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
