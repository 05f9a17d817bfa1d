#!/usr/bin/env bash
# `mpirun -np 8 trainsim emulate` (docs/emulate.md) on the 8-GPU GPT-3 6.7B scenario over loopback:
# it finishes, rank 0 alone prints the emulated and the simulated iteration, every rank writes a trace
# that `trace summary` reads (its communication counted from the Collective records); bad input (too
# many or too few ranks) exits 2 on every rank with the error printed once. Scale reduction: 8
# processes stand for node 0 of the 64-GPU Llama 3 70B job (--ranks node:0) and for pipeline stage 1
# of a 16-GPU job. --device gpu: exit 2 with the reason where it cannot run (no module, no GPU).
# Usage: emulate_mpi.sh TRAINSIM SOURCE_DIR MPIEXEC GPU_MODULE_BUILT. An empty MPIEXEC means trainsim
# was built without MPI: exit 77, which ctest reports as skipped (tests/cli/CMakeLists.txt).
set -u
gpu_module=${4:-OFF}
# shellcheck source=tests/cli/mpi_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/mpi_lib.sh" "$@"

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
expect trace-summary 0 "$bin" trace summary "$tmp/traces" --format json
# Every rank's communication share comes from its Collective and P2p records (no NCCL kernels).
python3 - "$tmp/out" <<'PY' && passes=$((passes + 1)) || failures=$((failures + 1))
import json, sys
ranks = json.load(open(sys.argv[1]))["ranks"]
comm = [r["time_s"]["communication"] for r in ranks]
assert len(ranks) == 8 and all(c > 0 for c in comm), f"FAIL trace-summary communication: {comm}"
assert all(r["iterations"] == 1 for r in ranks), "FAIL trace-summary: one iteration marker per rank"
PY

# Bad input: every rank exits 2, rank 0 prints the error once.
expect too-many 2 "${mpirun[@]}" -np 9 "$bin" emulate "${small[@]}"
count too-many "$tmp/err" "mpirun started 9" 1
expect too-few 2 "${mpirun[@]}" -np 2 "$bin" emulate "${small[@]}"
count too-few "$tmp/err" "mpirun started 2" 1
expect bad-scale 2 "${mpirun[@]}" -np 8 "$bin" emulate "$scenario" --scale-compute 0
count bad-scale "$tmp/err" "error: --scale-compute" 1

# Scale reduction: 8 processes stand for node 0 (tensor group 0 of stage 0) of the 64-GPU job.
llama="$src/scenarios/llama3-70b-h100-64.json"
node=("$llama" --ranks node:0 --set training.global_batch=16 --scale-compute 0.001 --scale-bytes 1e-5 --iterations 1)
expect node0 0 "${mpirun[@]}" -np 8 "$bin" emulate "${node[@]}" --trace "$tmp/node0"
count node0 "$tmp/out" "standing for --ranks node:0" 1
count node0 "$tmp/out" "simulated, emulated ranks" 1
count node0 "$tmp/out" "calls of rank 0: " 1
count node0 "$tmp/out" "measured  " 2  # the tensor all_gather and reduce_scatter rows
count node0 "$tmp/out" "modelled  " 2  # the data-parallel rows: one member of 2 present
n=$(ls "$tmp/node0" | grep -c '^emulate\.rank[0-7]\.trace$')
if [ "$n" -eq 8 ]; then passes=$((passes + 1)); else echo "FAIL node0 traces: $n of 8"; failures=$((failures + 1)); fi
# Pipeline stage 1 of 4 of a 16-GPU job (TP2 x DP2 x PP4): its tensor and data collectives run in
# full, its sends to stages 0 and 2 are modelled.
stage=("$llama" --ranks stage:1 --set cluster.nodes=2 --set parallelism.tensor=2 --set training.global_batch=8
       --set model.layers=8 --scale-compute 0.001 --scale-bytes 1e-5 --iterations 1)
expect stage1 0 "${mpirun[@]}" -np 4 "$bin" emulate "${stage[@]}"
count stage1 "$tmp/out" "standing for --ranks stage:1" 1
# Wrong -np for the subset, a bad subset: every rank exits 2, rank 0 prints once.
expect node-np 2 "${mpirun[@]}" -np 4 "$bin" emulate "${node[@]}"
count node-np "$tmp/err" "--ranks node:0 selects 8 of the scenario's ranks, mpirun started 4" 1
expect node-range 2 "${mpirun[@]}" -np 2 "$bin" emulate "$llama" --ranks node:8
count node-range "$tmp/err" "error: --ranks: expected a node 0..7" 1

# --device gpu where it cannot run: exit 2 on every rank, the reason printed once.
if [ "$gpu_module" = "ON" ] && command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; then
  echo "note: a GPU is visible; --device gpu is left to the GPU check of docs/emulate.md"
else
  expect gpu 2 "${mpirun[@]}" -np 8 "$bin" emulate "${small[@]}" --device gpu
  if [ "$gpu_module" = "ON" ]; then
    count gpu "$tmp/err" "no usable CUDA GPU" 1
  else
    count gpu "$tmp/err" "trainsim was built without the GPU emulator" 1
  fi
fi

echo "emulate_mpi: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
