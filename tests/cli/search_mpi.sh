#!/usr/bin/env bash
# `mpirun -np 2 trainsim search` (docs/search.md, "Under MPI"): the result printed by rank 0 equals the
# one-process result (--jobs 1) byte for byte, with and without the SimGrid re-check; the other rank
# prints nothing; an input error is printed once and exits 2; --shard is refused under mpirun.
# Usage: search_mpi.sh TRAINSIM SOURCE_DIR MPIEXEC. An empty MPIEXEC means trainsim was built without
# MPI: exit 77, which ctest reports as skipped (tests/cli/CMakeLists.txt).
set -u
# shellcheck source=tests/cli/mpi_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/mpi_lib.sh" "$@"
mpirun+=(-np 2)

# The small search of tests/cli/exit_codes.sh.
small=("$src/scenarios/gpt3-6.7b-a100-8.json" --set model.layers=8 --set training.global_batch=32 --max-micro-batch 2
       --refine 8 --top 2)

expect one-json 0 "$bin" search "${small[@]}" --no-recheck --format json --jobs 1 --quiet
cp "$tmp/out" "$tmp/one.json"
expect mpi-json 0 "${mpirun[@]}" "$bin" search "${small[@]}" --no-recheck --format json --quiet
same mpi-json "$tmp/one.json" "$tmp/out"
count mpi-json "$tmp/out" '"schema": "trainsim.search/1"' 1

# The table with the SimGrid re-check (on rank 0), --jobs threads in each rank, timing on stderr.
expect one-table 0 "$bin" search "${small[@]}" --jobs 1 --quiet
cp "$tmp/out" "$tmp/one.txt"
expect mpi-table 0 "${mpirun[@]}" "$bin" search "${small[@]}" --jobs 2
same mpi-table "$tmp/one.txt" "$tmp/out"
count mpi-table "$tmp/err" "search: 2 MPI ranks" 1
count mpi-table "$tmp/err" "search: first pass:" 1

# Bad input: exit 2, the error once (every rank finds it; rank 0 prints it).
expect mpi-bad-gpus 2 "${mpirun[@]}" "$bin" search "${small[@]}" --gpus 4096:512
count mpi-bad-gpus "$tmp/err" "error: --gpus" 1
expect mpi-shard 2 "${mpirun[@]}" "$bin" search "${small[@]}" --shard 0/2
count mpi-shard "$tmp/err" "cannot be used under mpirun" 1

echo "search_mpi: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
