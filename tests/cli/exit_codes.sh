#!/usr/bin/env bash
# End-to-end checks of the trainsim binary: exit codes (STYLE.md: 0 ok, 2 input error, 3 outside
# tolerance), results on stdout, errors on stderr naming the file and JSON pointer.
set -u
bin=$1
src=$2
# shellcheck source=tests/cli/check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"

expect run-json 0 "$bin" run "$src/scenarios/gpt3-175b-a100-1024.json" --format json
contains run-json "$tmp/out" '"schema": "trainsim.report/1"'
contains run-json "$tmp/out" '"iteration_time_s"'

expect run-out 0 "$bin" run "$src/scenarios/gpt3-6.7b-a100-8.json" --out "$tmp/res" --timeline "$tmp/tl.json"
for f in report.json report.txt scenario.resolved.json; do
  if [ -s "$tmp/res/$f" ]; then passes=$((passes + 1)); else echo "FAIL run-out: $f missing"; failures=$((failures + 1)); fi
done
contains timeline "$tmp/tl.json" '"traceEvents"'

expect bad-scenario 2 "$bin" run "$src/tests/data/bad/tp-not-dividing-heads.json"
contains bad-scenario "$tmp/err" "tp-not-dividing-heads.json: /parallelism/tensor:"

expect missing-file 2 "$bin" run "$tmp/nope.json"
contains missing-file "$tmp/err" "nope.json: cannot open file"

expect bad-set 2 "$bin" run "$src/scenarios/gpt3-6.7b-a100-8.json" --set parallelism.tensr=4
contains bad-set "$tmp/err" 'did you mean "tensor"'

expect bad-option 2 "$bin" run "$src/scenarios/gpt3-6.7b-a100-8.json" --frobnicate
expect no-subcommand 2 "$bin"
expect help 0 "$bin" run --help
expect check 0 "$bin" check "$src/scenarios/llama3-70b-h100-64.json"
contains check "$tmp/out" '"kv_heads": 8'
expect describe 0 "$bin" describe gpus
contains describe "$tmp/out" "H200-SXM-141GB"

# optimizations.pruning: 2:4 sparse kernels on a GPU without sparse tensor cores are refused (exit
# 2, naming the key); a pruned run says what pruning changed against dense.
expect pruning-v100 2 "$bin" run "$src/tests/data/bad/pruning-2of4-on-v100.json"
contains pruning-v100 "$tmp/err" "/optimizations/pruning/method: 2:4 sparse kernels need sparse tensor cores"
expect pruning-run 0 "$bin" run "$src/scenarios/llama3-8b-2of4-h100-16.json" --backend analytic
contains pruning-run "$tmp/out" "weights+grads+optimizer"

# optimizations.gradient_compression: a top-k ratio outside [1e-6, 1] is refused (exit 2, naming the
# key); a compressed run reports what it sent and its error-feedback memory.
expect compression-ratio 2 "$bin" run "$src/tests/data/bad/compression-topk-ratio-zero.json"
contains compression-ratio "$tmp/err" "/optimizations/gradient_compression/ratio: expected the fraction"
expect compression-run 0 "$bin" run "$src/scenarios/compression/gpt-1.3b-powersgd-25gbe-32.json" --format json
contains compression-run "$tmp/out" '"bytes_saved_per_iteration"'
contains compression-run "$tmp/out" '"error_feedback"'

# issue 10: version, run --format csv, data "auto", compare (side by side; bad input exits 2).
expect version 0 "$bin" version
contains version "$tmp/out" "trainsim "
small="$src/scenarios/gpt3-6.7b-a100-8.json"
expect run-csv 0 "$bin" run "$small" --backend analytic --format csv --set training.tokens=1e9
contains run-csv "$tmp/out" "scenario,world_size,backend,iteration_time_s,"
expect check-data-auto 0 "$bin" check "$small" --set parallelism.data=auto --set parallelism.tensor=8
contains check-data-auto "$tmp/out" '"data": 1,'
expect data-auto-not-dividing 2 "$bin" run "$small" --set parallelism.data=auto --set parallelism.tensor=3
contains data-auto-not-dividing "$tmp/err" '/parallelism/data: "auto" needs the cluster'"'"'s 8 GPUs'
expect compare-vary 0 "$bin" compare "$small" --vary parallelism.tensor=2,4 --set parallelism.data=auto
contains compare-vary "$tmp/out" "tensor=4"
expect compare-failing-column 0 "$bin" compare "$small" --vary parallelism.tensor=2,4
contains compare-failing-column "$tmp/out" "tensor=4 cannot run:"
expect compare-unknown-key 2 "$bin" compare "$small" --vary parallelism.tensr=2,4
contains compare-unknown-key "$tmp/err" 'did you mean "tensor"'
expect compare-missing-file 2 "$bin" compare "$small" "$tmp/nope.json"
# SimGrid builds one platform per process: two cluster sizes in one compare must still work.
expect compare-simgrid 0 "$bin" compare "$small" --backend simgrid --vary cluster.nodes=1,2 --set parallelism.data=auto
contains compare-simgrid "$tmp/out" "nodes=2"

# validate: a case 1,000x off must exit 3 with a tolerance, 0 without.
sed 's/"iteration_time_s": [0-9.]*/"iteration_time_s": 0.001/' "$src/tests/data/validation/tiny-case.json" >"$tmp/off.json"
expect validate-ok 0 "$bin" validate "$src/tests/data/validation"
contains validate-ok "$tmp/out" "median |error|"
expect validate-off 3 "$bin" validate "$tmp/off.json" --tolerance 10
contains validate-off "$tmp/out" "outside tolerance"
# A folder with a time case, a throughput case, an unreadable case and one with no measured figure:
# every case is a row, then exit 2; CSV is one row per figure.
expect validate-mixed 2 "$bin" validate "$src/tests/data/validate-command"
contains validate-mixed "$tmp/out" "model_tflops_per_gpu"
contains validate-mixed "$tmp/out" "3-unknown-key.json: /parallelism/tensr"
contains validate-mixed "$tmp/out" "2 cases: median |error|"
expect validate-csv 2 "$bin" validate "$src/tests/data/validate-command" --format csv
contains validate-csv "$tmp/out" "throughput-case,"
# Cases on clusters of different shapes with the SimGrid backend (one platform per process: each
# case runs in a child process), and a case whose parallelism does not fit its cluster.
sed -e 's/"nodes": 1, "gpus_per_node": 8/"nodes": 2, "gpus_per_node": 4/' -e 's/"name": "tiny-case"/"name": "two-nodes"/' \
  "$src/tests/data/validation/tiny-case.json" >"$tmp/two-nodes.json"
sed 's/"data": 8/"data": 4/' "$src/tests/data/validation/tiny-case.json" >"$tmp/misfit.json"
expect validate-simgrid 0 "$bin" validate "$src/tests/data/validation/tiny-case.json" "$tmp/two-nodes.json" --backend simgrid
contains validate-simgrid "$tmp/out" "two-nodes"
contains validate-simgrid "$tmp/out" "2 cases: median"
expect validate-misfit 2 "$bin" validate "$tmp/misfit.json" "$tmp/two-nodes.json" --backend simgrid
contains validate-misfit "$tmp/err" "misfit.json: /parallelism"
contains validate-misfit "$tmp/out" "1 case(s) could not be read or run"
contains validate-misfit "$tmp/out" "misfit.json: /parallelism"   # the row carries the problem too

# replay of the two-rank Kineto fixtures, on both backends: every rank simulated, no shared link
# (the traced copies keep their measured durations), so they agree.
expect import-kineto 0 "$bin" trace import-kineto "$src/tests/data/traces/kineto_rank0.json" \
  "$src/tests/data/traces/kineto_rank1.json" --out "$tmp/kineto"
expect replay-simgrid 0 "$bin" replay "$tmp/kineto" --format json
contains replay-simgrid "$tmp/out" '"backend": "simgrid"'
simgrid_s=$(grep -o '"iteration_time_s": [0-9.e+-]*' "$tmp/out" | head -1 | sed 's/.*: //')
expect replay-analytic 0 "$bin" replay "$tmp/kineto" --backend analytic --format json
analytic_s=$(grep -o '"iteration_time_s": [0-9.e+-]*' "$tmp/out" | head -1 | sed 's/.*: //')
if awk -v a="$simgrid_s" -v b="$analytic_s" 'BEGIN { exit !(a > 0 && b > 0 && (a - b) / b < 0.01 && (b - a) / b < 0.01) }'; then
  passes=$((passes + 1))
else
  echo "FAIL replay backends disagree: simgrid $simgrid_s s, analytic $analytic_s s"; failures=$((failures + 1))
fi
expect replay-bad-backend 2 "$bin" replay "$tmp/kineto" --backend simgird
# issue 12: run at step fidelity is refused up front when its collectives alone need more than 2e7
# flows (GPT-3 175B with ZeRO-3 over 256 data-parallel ranks: at least 1.53e8), not after minutes.
expect run-step-too-large 2 timeout 20 "$bin" run "$src/scenarios/gpt3-175b-a100-1024.json" --set parallelism.tensor=2 \
  --set parallelism.pipeline=1 --set parallelism.data=256 --set parallelism.context=2 --set training.micro_batch=3 \
  --set parallelism.sequence_parallel=true --set parallelism.zero_stage=3 --set 'parallelism.stage_layers=[96]' \
  --set simulation.fidelity=step
contains run-step-too-large "$tmp/err" "/simulation/fidelity: expected a step-fidelity simulation of at most 2e+07 flows"
contains run-step-too-large "$tmp/err" 'found "step" for 1024 GPUs, at least 1.53e+08 flows per iteration'

# --format csv (issue 10 item 5): replay's header and one row of as many fields; trace summary's long
# table, every row 11 fields (kernel names with commas quoted), one category row per category and rank.
expect replay-csv 0 "$bin" replay "$tmp/kineto" --backend analytic --format csv
contains replay-csv "$tmp/out" "traced_ranks,world_size,scale_data,iteration,measured_iteration_time_s,iteration_time_s,error,"
csv_shape() {  # csv_shape NAME FILE ROWS FIELDS: FILE parses as RFC 4180 into ROWS rows of FIELDS fields each
  if python3 -c 'import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
sys.exit(0 if len(rows) == int(sys.argv[2]) and all(len(r) == int(sys.argv[3]) for r in rows) else 1)' "$2" "$3" "$4"; then
    passes=$((passes + 1))
  else
    echo "FAIL $1: $2 is not $3 rows of $4 CSV fields"; head -5 "$2"; failures=$((failures + 1))
  fi
}
csv_shape replay-csv "$tmp/out" 2 25
expect summary-csv 0 "$bin" trace summary "$tmp/kineto" --format csv
csv_shape summary-csv "$tmp/out" "$(($(wc -l <"$tmp/out")))" 11
contains summary-csv "$tmp/out" "1,category,communication,,0.00024,,0.3,,,,"
contains summary-csv "$tmp/out" "0,collective,all_reduce,2,,0.0001,,2097152,2,20.97152,20.97152"

# issue 17: calibrate on the shape-less Kineto fixtures fits nothing (exit 3, each reason on stderr,
# no profile written); on the example recorded with shapes it fits GEMMs, attention and bandwidth.
expect calibrate-nothing 3 "$bin" calibrate "$tmp/kineto" -o "$tmp/nothing.json"
contains calibrate-nothing "$tmp/err" "nothing was fitted"
if [ -e "$tmp/nothing.json" ]; then echo "FAIL calibrate-nothing: a profile was written"; failures=$((failures + 1)); fi
expect import-kineto-shapes 0 "$bin" trace import-kineto "$src/tests/data/traces/kineto-shapes/rank0.pt.trace.json" \
  --out "$tmp/kineto-shapes"
expect calibrate-shapes 0 "$bin" calibrate "$tmp/kineto-shapes" -o "$tmp/shapes.json" --format csv
contains calibrate-shapes "$tmp/out" "gemm bf16,90,true,true"
contains calibrate-shapes "$tmp/out" "flash_attention bf16,"
contains calibrate-shapes "$tmp/shapes.json" '"schema": "trainsim.profile/1"'

# search: a small space end to end (table/json/csv, SimGrid re-check), determinism over --jobs,
# shards merged = one process, and bad input.
small=("$src/scenarios/gpt3-6.7b-a100-8.json" --set model.layers=8 --set training.global_batch=32 --max-micro-batch 2
       --refine 8 --top 2 --quiet)
expect search-table 0 "$bin" search "${small[@]}"
contains search-table "$tmp/out" "why #1 wins over #"
contains search-table "$tmp/out" "re-checked with SimGrid"
# ZeRO-1 and ZeRO-2 of the distributed optimizer differ only in memory: one SimGrid run serves both.
expect search-recheck-shared 0 "$bin" search "$src/scenarios/gpt3-6.7b-a100-8.json" --set model.layers=8 \
  --set training.global_batch=32 --max-micro-batch 2 --refine 8 --top 4 --quiet
contains search-recheck-shared "$tmp/out" "4 re-checked with SimGrid (2 simulations: layouts with the same workload timing share one)"
expect search-json-1 0 "$bin" search "${small[@]}" --no-recheck --format json --jobs 1
cp "$tmp/out" "$tmp/search1.json"
contains search-json-1 "$tmp/out" '"schema": "trainsim.search/1"'
expect search-json-2 0 "$bin" search "${small[@]}" --no-recheck --format json --jobs 2
if cmp -s "$tmp/out" "$tmp/search1.json"; then passes=$((passes + 1)); else echo "FAIL search differs with --jobs 2"; failures=$((failures + 1)); fi
expect search-shard-0 0 "$bin" search "${small[@]}" --shard 0/2 --out "$tmp/shard0.json"
expect search-shard-1 0 "$bin" search "${small[@]}" --shard 1/2 --out "$tmp/shard1.json"
expect search-merge 0 "$bin" search merge "$tmp/shard1.json" "$tmp/shard0.json" --no-recheck --format json --quiet
if cmp -s "$tmp/out" "$tmp/search1.json"; then passes=$((passes + 1)); else echo "FAIL search merge differs from one process"; failures=$((failures + 1)); fi
expect search-merge-missing 2 "$bin" search merge "$tmp/shard0.json"
contains search-merge-missing "$tmp/err" "shard 1/2 is missing"
expect search-csv 0 "$bin" search "${small[@]}" --no-recheck --format csv
contains search-csv "$tmp/out" "rank,gpu,gpus,tensor,pipeline"
expect search-bad-gpus 2 "$bin" search "${small[@]}" --gpus 4096:512
contains search-bad-gpus "$tmp/err" "--gpus"
expect search-bad-mfu 2 "$bin" search "${small[@]}" --min-mfu 40
expect search-impossible 2 "$bin" search "${small[@]}" --min-mfu 0.99 --no-recheck
contains search-impossible "$tmp/err" "MFU below --min-mfu"
expect search-explodes 2 "$bin" search "$src/scenarios/gpt3-175b-a100-1024.json" --set training.global_batch=720720 \
  --max-micro-batch 1000000 --gpus 1024:16384
contains search-explodes "$tmp/err" "--yes"
expect search-no-scenario 2 "$bin" search
expect search-shard-bad 2 "$bin" search "${small[@]}" --shard 2/2
# Planning constraints and prices (docs/search.md): each bad option exits 2 naming its flag, and a
# deadline no layout meets leaves nothing, with the reason counted.
expect search-bad-price 2 "$bin" search "${small[@]}" --price A100=abc
contains search-bad-price "$tmp/err" 'error: --price: expected NAME=USD per GPU-hour ("H100=2.5"), found "A100=abc"'
expect search-unused-price 2 "$bin" search "${small[@]}" --price H100=2.5 --no-recheck
contains search-unused-price "$tmp/err" '"H100" prices none of the GPUs here (A100-SXM4-80GB)'
expect search-bad-headroom 2 "$bin" search "${small[@]}" --memory-headroom 100%
contains search-bad-headroom "$tmp/err" "error: --memory-headroom: expected a percentage from 0% to below 100%"
expect search-deadline-without-tokens 2 "$bin" search "${small[@]}" --deadline 30 --no-recheck
contains search-deadline-without-tokens "$tmp/err" "--deadline needs training.tokens"
expect search-budget-without-price 2 "$bin" search "${small[@]}" --set training.tokens=1e12 --budget 1e6 --no-recheck
contains search-budget-without-price "$tmp/err" "--budget needs a price"
expect search-deadline-missed 2 "$bin" search "${small[@]}" --set training.tokens=1e15 --deadline 1 --no-recheck
contains search-deadline-missed "$tmp/err" "over --deadline 1 days (analytic backend)"
expect search-deadline-met 0 "$bin" search "${small[@]}" --set training.tokens=1e9 --deadline 1000 --objective cost \
  --price A100=1.5 --no-recheck
contains search-deadline-met "$tmp/out" "objective cost"
# Energy (docs/energy.md): --max-power takes a positive site power; co2 needs the grid's intensity; a
# site budget below every layout's peak power leaves nothing, counted under its reason.
expect search-max-power-bad 2 "$bin" search "${small[@]}" --max-power abc --no-recheck
contains search-max-power-bad "$tmp/err" 'error: --max-power: expected a site power such as "30MW", "30" (MW) or "500 kW", found "abc"'
expect search-max-power-negative 2 "$bin" search "${small[@]}" --max-power=-3 --no-recheck
contains search-max-power-negative "$tmp/err" 'error: --max-power: expected a positive site power, found "-3"'
expect search-co2-without-grid 2 "$bin" search "${small[@]}" --set training.tokens=1e12 --objective co2 --no-recheck
contains search-co2-without-grid "$tmp/err" "--objective co2 needs training.tokens and cluster.power.grid_gco2_per_kwh"
expect search-max-power-missed 2 "$bin" search "${small[@]}" --max-power "1 kW" --no-recheck
contains search-max-power-missed "$tmp/err" "over --max-power 1 kW (analytic backend)"
expect search-energy 0 "$bin" search "${small[@]}" --set training.tokens=1e9 --objective energy --max-power 0.03 \
  --no-recheck
contains search-energy "$tmp/out" "objective energy"
contains search-energy "$tmp/out" "MWh"
expect stage-power-bad-tolerance 2 "$bin" stage-power "$src/scenarios/gpt3-6.7b-a100-8.json" --tolerance 2
expect stage-power-capped 2 "$bin" stage-power "$src/scenarios/gpt3-6.7b-a100-8.json" --set 'cluster.gpu.power_cap="300 W"'
contains stage-power-capped "$tmp/err" "/cluster/gpu/power_cap: per-stage power planning starts from uncapped GPUs"
expect stage-power-plan 0 "$bin" stage-power "$src/scenarios/gpt3-6.7b-a100-8.json" --set parallelism.tensor=2 \
  --set parallelism.pipeline=2 --set parallelism.data=2 --set 'parallelism.stage_layers=[12,20]'
contains stage-power-plan "$tmp/out" "per-stage power plan"
expect compare-unused-price 2 "$bin" compare "$src/scenarios/gpt3-6.7b-a100-8.json" --price B200=4 --quiet
contains compare-unused-price "$tmp/err" '"B200" prices none of the GPUs here'
# sweep: a scaling curve; bad ranges, unknown keys and huge sweeps are input errors.
sweep_scenario="$src/scenarios/gpt3-6.7b-a100-8.json"
expect sweep-csv 0 "$bin" sweep "$sweep_scenario" --set-range training.micro_batch=1,2,3 --format csv
contains sweep-csv "$tmp/out" "training.micro_batch,gpus,iteration_time_s"
contains sweep-csv "$tmp/out" "3,,,,,,"          # micro-batch 3 cannot run: an error row
expect sweep-malformed 2 "$bin" sweep "$sweep_scenario" --set-range training.micro_batch=4:1:x2
contains sweep-malformed "$tmp/err" 'error: --set-range: "training.micro_batch=4:1:x2": END (1) is below START (4)'
expect sweep-unknown-key 2 "$bin" sweep "$sweep_scenario" --set-range parallelism.tensr=1,2
contains sweep-unknown-key "$tmp/err" 'did you mean "tensor"'
expect sweep-too-many 2 "$bin" sweep "$sweep_scenario" --set-range training.micro_batch=1:200:+1 --set-range cluster.nodes=1:100:+1
contains sweep-too-many "$tmp/err" "pass --yes"
expect sweep-bad-plot 2 "$bin" sweep "$sweep_scenario" --set-range training.micro_batch=1,2 --plot "$tmp/curve.pdf"
contains sweep-bad-plot "$tmp/err" "ending in .svg or .png"
expect sweep-no-point 2 "$bin" sweep "$sweep_scenario" --set-range training.micro_batch=3,5
expect run-html 0 "$bin" run "$sweep_scenario" --backend analytic --html "$tmp/r.html"
contains run-html "$tmp/r.html" "<!DOCTYPE html>"
expect timeline-window-bad 2 "$bin" run "$sweep_scenario" --backend analytic --timeline "$tmp/t.json" --timeline-window 2:1
contains timeline-window-bad "$tmp/err" "--timeline-window: expected START:END"
expect timeline-mb-bad 2 "$bin" run "$sweep_scenario" --backend analytic --timeline "$tmp/t.json" --timeline-micro-batches 99
contains timeline-mb-bad "$tmp/err" "micro-batch 99 is outside 0..15"
expect timeline-window-alone 2 "$bin" run "$sweep_scenario" --backend analytic --timeline-window 0:1
contains timeline-window-alone "$tmp/err" "give --timeline FILE too"

# --plot on search and compare: pictures checked for their path before the work, then written.
expect search-plot 0 "$bin" search "${small[@]}" --no-recheck --plot "$tmp/search.svg"
contains search-plot "$tmp/search.svg" "<svg"
expect search-plot-no-folder 2 "$bin" search "${small[@]}" --no-recheck --plot "$tmp/none/search.svg"
contains search-plot-no-folder "$tmp/err" "does not exist"
expect search-ttt-needs-tokens 2 "$bin" search "${small[@]}" --no-recheck --objective time_to_train
contains search-ttt-needs-tokens "$tmp/err" "needs training.tokens"
expect search-cost 0 "$bin" search "${small[@]}" --no-recheck --objective cost --set training.tokens=1e11 \
  --set cluster.price_per_gpu_hour=2.5
contains search-cost "$tmp/out" "objective cost"
expect compare-plot 0 "$bin" compare "$sweep_scenario" --vary training.micro_batch=1,2 --plot "$tmp/compare.svg"
contains compare-plot "$tmp/compare.svg" "<svg"
contains compare-plot "$tmp/compare.svg" "iteration time by training.micro_batch"
expect compare-plot-days 0 "$bin" compare "$sweep_scenario" --vary training.micro_batch=1,2 --set training.tokens=1e11 \
  --plot "$tmp/days.svg" --plot-figure days --html "$tmp/compare.html"
contains compare-plot-days "$tmp/days.svg" "time to train by training.micro_batch"
contains compare-plot-days "$tmp/compare.html" "time to train (days)"
expect compare-plot-cost-no-price 2 "$bin" compare "$sweep_scenario" --vary training.micro_batch=1,2 \
  --set training.tokens=1e11 --plot "$tmp/cost.svg" --plot-figure cost
contains compare-plot-cost-no-price "$tmp/err" "--plot-figure: cost needs training.tokens and a price"
expect compare-plot-figure-unknown 2 "$bin" compare "$sweep_scenario" --plot "$tmp/x.svg" --plot-figure watts
expect compare-html-no-folder 2 "$bin" compare "$sweep_scenario" --html "$tmp/none/compare.html"

# sweep under SimGrid across cluster sizes: each point in its own process (one platform per process).
expect sweep-simgrid-nodes 0 "$bin" sweep "$sweep_scenario" --set parallelism.data=auto --set-range cluster.nodes=1,2 \
  --backend simgrid --format csv
contains sweep-simgrid-nodes "$tmp/out" "2,16,"

# CSV wherever a table is printed: collective, describe gpus / models.
expect collective-csv 0 "$bin" collective --op all_reduce --gpus 8 --gpu A100-SXM4-80GB --sizes 1M:4M --fidelity analytic --format csv
contains collective-csv "$tmp/out" "size_bytes,count,time_us,algbw_GB/s,busbw_GB/s,algorithm"
expect describe-gpus-csv 0 "$bin" describe gpus --format csv
contains describe-gpus-csv "$tmp/out" "H100-SXM5-80GB,"
expect describe-models-csv 0 "$bin" describe models --format csv
contains describe-models-csv "$tmp/out" "gpt3-175b,96,12288"
expect describe-profile-csv 2 "$bin" describe profile --format csv
# Resource limits: a workload above simulation.max_tasks is refused before anything is built (it
# used to run for minutes and grow to gigabytes), and runs once the budget is raised (check only).
expect task-budget 2 timeout 20 "$bin" run "$src/scenarios/gpt3-6.7b-a100-8.json" --backend analytic \
  --set training.global_batch=8000000
contains task-budget "$tmp/err" "/simulation/max_tasks: the workload would have about"
expect task-budget-raised 0 "$bin" check "$src/scenarios/gpt3-6.7b-a100-8.json" --set training.global_batch=8000000 \
  --set simulation.max_tasks=1000000000000
# A --set number beyond a double's range is the flag's input error (it was a bare library message, exit 1).
expect set-beyond-double 2 "$bin" check "$src/scenarios/gpt3-6.7b-a100-8.json" --set training.global_batch=1e309
contains set-beyond-double "$tmp/err" "--set: training.global_batch: expected a number within a double's range, found 1e309"
expect sweep-beyond-double 2 "$bin" sweep "$src/scenarios/gpt3-6.7b-a100-8.json" --set-range training.global_batch=1e309,2
contains sweep-beyond-double "$tmp/err" "1e309 is beyond a double's range"
# simulation.max_flows: with simulation.over_budget "refuse", a SimGrid run whose flows (a lower
# bound, counted before simulating) exceed the budget is refused with the bound and its CPU time, and
# the analytic backend is suggested; by default ("approximate") the costliest collectives are priced
# in closed form and the run says so.
expect flow-budget 2 timeout 20 "$bin" run "$src/scenarios/gpt3-6.7b-a100-8.json" --set simulation.max_flows=10 \
  --set simulation.over_budget=refuse
contains flow-budget "$tmp/err" "/simulation/max_flows: expected a SimGrid simulation of at most 10 flows"
contains flow-budget "$tmp/err" "use --backend analytic"
contains flow-budget "$tmp/err" "simulation.over_budget"
expect flow-budget-approximated 0 timeout 20 "$bin" run "$src/scenarios/gpt3-6.7b-a100-8.json" --set simulation.max_flows=10
contains flow-budget-approximated "$tmp/out" "approximated: "
expect flow-budget-bad-policy 2 "$bin" check "$src/scenarios/gpt3-6.7b-a100-8.json" --set simulation.over_budget=maybe
contains flow-budget-bad-policy "$tmp/err" "over_budget"

# replay of ranks whose traces disagree on a collective: an input error naming the rank and the call,
# not "this is a bug".
sed '0,/"In msg nelems": 1048576/s//"In msg nelems": 524288/; 0,/"Out msg nelems": 1048576/s//"Out msg nelems": 524288/' \
  "$src/tests/data/traces/kineto_rank1.json" >"$tmp/kineto_rank1_other.json"
expect import-kineto-disagree 0 "$bin" trace import-kineto "$src/tests/data/traces/kineto_rank0.json" \
  "$tmp/kineto_rank1_other.json" --out "$tmp/kineto-disagree"
for backend in analytic simgrid; do
  expect "replay-disagree-$backend" 2 "$bin" replay "$tmp/kineto-disagree" --backend "$backend"
  contains "replay-disagree-$backend" "$tmp/err" "rank 1 disagrees with rank 0 ($tmp/kineto-disagree/rank00000.kineto_rank0.trace) on call 1 of the communicator of ranks 0,1: all_reduce of 1048576 bytes here, all_reduce of 2097152 bytes there"
done

# issue 17: a profile fitted on another GPU warns (stderr and report), --strict-profile refuses it;
# calibrate records the GPU; described GPUs and the catalog's sources.
expect calibrate-a100 0 "$bin" calibrate --nccl-tests "$src/tests/data/nccl-tests/all_reduce_perf_8xA100.txt" \
  -o "$tmp/a100-profile.json"
contains calibrate-a100 "$tmp/a100-profile.json" '"fitted_on": {'
contains calibrate-a100 "$tmp/a100-profile.json" '"gpu": "A100-SXM4-80GB",'
h100="$src/scenarios/llama3-70b-h100-64.json"
expect profile-mismatch 0 "$bin" run "$h100" --backend analytic --set simulation.profile="$tmp/a100-profile.json" --format json
contains profile-mismatch "$tmp/err" "warning: the profile $tmp/a100-profile.json was fitted on A100-SXM4-80GB, not on the scenario's H100-SXM5-80GB"
contains profile-mismatch "$tmp/out" '"warnings": ['
expect strict-profile 2 "$bin" run "$h100" --backend analytic --set simulation.profile="$tmp/a100-profile.json" --strict-profile
contains strict-profile "$tmp/err" "/simulation/profile: the profile $tmp/a100-profile.json was fitted on A100-SXM4-80GB"
expect strict-profile-same-gpu 0 "$bin" run "$small" --backend analytic --set simulation.profile="$tmp/a100-profile.json" --strict-profile
expect described-gpu 0 "$bin" run "$h100" --backend analytic --set 'cluster.gpu={"base": "H100-SXM5-80GB", "hbm_bandwidth": "6.7 TB/s"}'
contains described-gpu "$tmp/out" "64 x H100-SXM5-80GB (custom)"
expect described-gpu-bad 2 "$bin" run "$h100" --set 'cluster.gpu={"name": "X1"}'
contains described-gpu-bad "$tmp/err" "/cluster/gpu/hbm_bandwidth: missing:"
expect describe-sources 0 "$bin" describe gpus
contains describe-sources "$tmp/out" "MI300X: AMD Instinct MI300X accelerator data sheet"
expect describe-profile-new-gpu 0 "$bin" describe profile --gpu GB200
contains describe-profile-new-gpu "$tmp/out" '"gpu": "GB200"'

# issue 13: checkpoints and failures (docs/resilience.md): the goodput and the simulated distribution
# in the report; an interval shorter than an iteration, or --simulate-failures on a scenario without
# training.checkpoint, are input errors (exit 2).
llama_ckpt="$src/scenarios/resilience/llama3-405b-h100-16384-failures.json"
expect resilience-run 0 "$bin" run "$llama_ckpt" --backend analytic --simulate-failures 20 --seed 3
contains resilience-run "$tmp/out" "with failures"
contains resilience-run "$tmp/out" "20 runs, seed 3"
expect resilience-short-interval 2 "$bin" run "$llama_ckpt" --backend analytic --set "training.checkpoint.interval=1 ms"
contains resilience-short-interval "$tmp/err" "/training/checkpoint/interval: 0.001 s is shorter than one iteration"
expect resilience-no-checkpoint 2 "$bin" run "$src/scenarios/gpt3-6.7b-a100-8.json" --backend analytic --simulate-failures 5
contains resilience-no-checkpoint "$tmp/err" "--simulate-failures: needs training.checkpoint"

# Layer-graph models (docs/cnn.md): search enumerates spatial x data x micro-batch (it died with
# SIGFPE in the transformer closed form); tokens objectives are input errors for them.
for cnn in "$src"/scenarios/cnn/*.json; do
  name=search-$(basename "$cnn" .json)
  expect "$name" 0 "$bin" search "$cnn" --no-recheck --refine 3 --top 3 --quiet
  contains "$name" "$tmp/out" "samples/s"
done
expect search-cnn-tokens 2 "$bin" search "$src/scenarios/cnn/resnet50-a100-8.json" --objective tokens_per_s
contains search-cnn-tokens "$tmp/err" "--objective: tokens_per_s counts tokens"


# Messages (issue 34): a sweep whose ranges multiply past what it can run, even with --yes (10^21
# points were read as 0: "none of the 0 points could run"); a folder given as a JSON file.
expect sweep-product 2 "$bin" sweep "$sweep_scenario" --yes --set-range training.global_batch=1:10000000:+1 \
  --set-range training.micro_batch=1:10000000:+1 --set-range training.sequence_length=1:10000000:+1
contains sweep-product "$tmp/err" "the ranges make 1e+21 points, more than the 10000000 a sweep can run"
expect sweep-infinite-range 2 "$bin" sweep "$sweep_scenario" --set-range training.global_batch=1e-320:1:x2
contains sweep-infinite-range "$tmp/err" "more values than the 10000000 a sweep can hold"
for cmd in check run compare; do
  expect "folder-$cmd" 2 "$bin" "$cmd" "$src/scenarios/cnn"
  contains "folder-$cmd" "$tmp/err" "error: $src/scenarios/cnn: is a folder; expected a JSON file"
done

# Reports given to compare are validated like input (issue 34): an edited report's negative time,
# MFU above 1 or wrapped world size is refused, naming the pointer.
"$bin" run "$src/scenarios/gpt3-6.7b-a100-8.json" --backend analytic --format json >"$tmp/report.json"
# (top-level keys only: two spaces of indentation; "bands" has keys of the same names)
sed -e 's/^  "iteration_time_s": [0-9.e+-]*/  "iteration_time_s": -5/' -e 's/^  "mfu": [0-9.e+-]*/  "mfu": 7.5/' \
  -e 's/^  "world_size": [0-9]*/  "world_size": 18446744073709551615/' "$tmp/report.json" >"$tmp/edited.json"
expect compare-edited-report 2 "$bin" compare "$tmp/report.json" "$tmp/edited.json"
contains compare-edited-time "$tmp/err" "edited.json: /iteration_time_s: expected a positive number of seconds"
contains compare-edited-mfu "$tmp/err" "edited.json: /mfu: expected a fraction in [0, 1] (a report of \`trainsim run\`), found 7.5"
contains compare-edited-world "$tmp/err" "edited.json: /world_size: expected an integer from 1 to 16777216"
sed -e 's/"breakdown_s": {/"breakdown_s": 5, "x": {/' "$tmp/report.json" >"$tmp/edited.json"
expect compare-section-not-object 2 "$bin" compare "$tmp/report.json" "$tmp/edited.json"
contains compare-section-not-object "$tmp/err" "edited.json: /breakdown_s: expected an object"
expect compare-report-unedited 0 "$bin" compare "$tmp/report.json" "$tmp/report.json"

# Budgets (issue 34, docs/hardening.md "Budgets"): work that would explode is refused up front, exit 2
# with the estimate and the flag or key to change. Streams: the size from stat() is not trusted.
for dev in /dev/zero /dev/urandom; do
  expect "stream-$dev" 2 "$bin" run "$dev"
  contains "stream-$dev" "$tmp/err" "error: $dev: byte "
  contains "stream-$dev" "$tmp/err" "this is binary data"
  expect "nccl-stream-$dev" 2 "$bin" calibrate --nccl-tests "$dev" -o "$tmp/net.json"
  contains "nccl-stream-$dev" "$tmp/err" "not nccl-tests output"
done
expect stream-invalid-json 2 bash -c 'yes "{\"a\": 1," | "$0" run /dev/stdin' "$bin"
contains stream-invalid-json "$tmp/err" "error: /dev/stdin: invalid JSON at line"
expect stream-endless-string 2 bash -c '{ printf "{\"name\": \""; yes aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa | tr -d "\n"; } | "$0" run /dev/stdin' "$bin"
contains stream-endless-string "$tmp/err" "more than 16777216 bytes (16 MiB) read and the stream goes on"
expect stream-scenario-ok 0 bash -c '"$0" check /dev/stdin <"$1"' "$bin" "$src/scenarios/gpt3-6.7b-a100-8.json"
# A scenario file above 16 MiB (a layer graph of 100,000 layers takes about 10 MB) before parsing.
python3 -c 'import sys; sys.stdout.write("{\"name\": \"" + "x" * (17 << 20) + "\"}")' >"$tmp/huge.json"
expect scenario-file-size 2 "$bin" check "$tmp/huge.json"
contains scenario-file-size "$tmp/err" "JSON is limited to 16777216 bytes (a scenario: the largest layer graph"
rm -f "$tmp/huge.json"
# collective: the cluster's GPUs per fidelity, the number of sizes.
expect collective-million-flow 2 "$bin" collective --gpus 1000000 --fidelity flow
contains collective-million-flow "$tmp/err" "--fidelity: expected a SimGrid platform of at most 131072 GPUs"
contains collective-million-flow "$tmp/err" "found 1000000 GPUs at flow fidelity (the platform alone: about 18 GB"
expect collective-million-step 2 "$bin" collective --gpus 1000000 --fidelity step
contains collective-million-step "$tmp/err" "at most 131072 GPUs"
expect collective-analytic-too-many 2 "$bin" collective --gpus 2000000 --fidelity analytic
contains collective-analytic-too-many "$tmp/err" "--gpus: expected a cluster of at most 1048576 GPUs at analytic fidelity"
expect collective-sizes 2 "$bin" collective --gpus 8 --sizes 1:16G --factor 1.000001 --fidelity analytic
contains collective-sizes "$tmp/err" "--factor: expected at most 1000 sizes from MIN to MAX"
# replay --scale-data: the replayed world, and its rank-group memberships (square of the scale).
eager=("$src/tests/data/traces/h200-eager" --backend analytic --set cluster.gpu=H200-SXM-141GB)
expect replay-scale-world 2 "$bin" replay "${eager[@]}" --scale-data 2000000000
contains replay-scale-world "$tmp/err" "--scale-data: expected at most 16777216 replicas of the 1 traced ranks"
# Two ranks that all-reduce over the data axis: each replica adds a member to every rank's group.
"$bin" trace import-kineto "$src/tests/data/traces/kineto_rank0.json" "$src/tests/data/traces/kineto_rank1.json" \
  --out "$tmp/kineto" >/dev/null
expect replay-scale-cost 2 "$bin" replay "$tmp/kineto" --scale-data 100000
contains replay-scale-cost "$tmp/err" "--scale-data: expected a replay of at most 3e+07 rank-group memberships"
contains replay-scale-cost "$tmp/err" "found 100000 (world 200000: 4e+10 memberships, about 12000 CPU-seconds with the simgrid backend)"
expect replay-scale-cost-ok 0 "$bin" replay "$tmp/kineto" --scale-data 64
expect replay-scale-ok 0 "$bin" replay "${eager[@]}" --scale-data 64
# These traces name no GPU: the message names --scenario (or --set cluster.gpu), not a --set that
# was never given.
expect replay-no-gpu 2 "$bin" replay "$src/tests/data/traces/h200-eager" --backend analytic
contains replay-no-gpu "$tmp/err" "error: --scenario: /cluster/gpu: the traces name no GPU"
# emulate's factors shrink a scenario: above 1 is refused (1e300 waited forever).
expect emulate-scale-above-one 2 "$bin" emulate "$src/scenarios/offload/zero-offload-10b-v100-1.json" --scale-compute 1e300
contains emulate-scale-above-one "$tmp/err" "--scale-compute: expected a factor in (0, 1]"

# Messages that go into JSON outputs are valid UTF-8 (issue 34: a byte that is not made `validate
# --format json` end with an internal error).
printf '{"name": "x\xff", ' >"$tmp/bad-utf8.json"
expect validate-invalid-utf8 2 "$bin" validate "$tmp/bad-utf8.json" --format json
python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$tmp/out" &&
  passes=$((passes + 1)) || { echo "FAIL validate-invalid-utf8: the JSON output is not UTF-8 JSON"; failures=$((failures + 1)); }
# A report holds no null (the null rule): an edited one is refused where the null is.
sed -e 's/"scenario": "[^"]*"/"scenario": null/' "$tmp/report.json" >"$tmp/edited.json"
expect compare-report-null 2 "$bin" compare "$tmp/report.json" "$tmp/edited.json"
contains compare-report-null "$tmp/err" "edited.json: /scenario: expected a value (a report of \`trainsim run\` holds no null), found null"

# Write errors on every output (issue 34): exit 2 naming the path, and no partial file left behind.
# /dev/full fails every write with ENOSPC; a file-size limit (ulimit -f, SIGXFSZ ignored so that
# write() returns EFBIG) fails a regular file part-way, as a full disk does.
small="$src/scenarios/gpt3-6.7b-a100-8.json"
expect stdout-full 2 bash -c '"$0" run "$1" --backend analytic >/dev/full' "$bin" "$small"
contains stdout-full "$tmp/err" "error: standard output: cannot write the results"
expect stdout-closed-pipe 2 bash -c '"$0" check "$1" | true; exit "${PIPESTATUS[0]}"' "$bin" "$small"
contains stdout-closed-pipe "$tmp/err" "error: standard output: cannot write the results"
for flag in --timeline --html; do
  expect "full$flag" 2 "$bin" run "$small" --backend analytic "$flag" /dev/full
  contains "full$flag" "$tmp/err" "error: /dev/full: cannot write the file"
  echo previous >"$tmp/kept$flag"
  expect "partial$flag" 2 bash -c 'trap "" XFSZ; ulimit -f 4; "$0" run "$1" --backend analytic "$2" "$3"' \
    "$bin" "$small" "$flag" "$tmp/kept$flag"
  contains "partial$flag" "$tmp/err" "error: $tmp/kept$flag: cannot write the file"
  contains "partial$flag-untouched" "$tmp/kept$flag" "previous"
  count "partial$flag-no-temp" <(ls -A "$tmp") ".tmp-" 0
done
expect partial-out 2 bash -c 'trap "" XFSZ; ulimit -f 4; "$0" run "$1" --backend analytic --out "$2"' "$bin" "$small" "$tmp/outdir"
contains partial-out "$tmp/err" "cannot write the file"
count partial-out-nothing <(ls -A "$tmp/outdir") "report" 0
expect shard-full 2 "$bin" search "$small" --shard 0/2 --out /dev/full --quiet
contains shard-full "$tmp/err" "error: /dev/full: cannot write the file"

# Error bands (issue 28): validate --write-bands writes the cases' residuals and says the held-out
# coverage; run --bands adds a user's cases (a case of a built-in name replaces it: here the 1.7B
# case alone cannot form a group of 4, so the time band still comes from the built-in cases); a bad
# bands file is an input error naming the file and field.
expect write-bands 0 "$bin" validate "$src/validation/training/megatron-sc21-t1-1.7B.json" --backend analytic --quiet \
  --write-bands "$tmp/bands.json"
contains write-bands "$tmp/bands.json" '"schema": "trainsim.bands/1"'
contains write-bands "$tmp/err" "wrote $tmp/bands.json: 1 cases; held-out coverage of the 80% band: time 0/0"
expect run-bands 0 "$bin" run "$src/scenarios/gpt3-6.7b-a100-8.json" --backend analytic --bands "$tmp/bands.json" --format json
contains run-bands "$tmp/out" "\"source\": \"validation/bands.json (built in) + $tmp/bands.json\""
contains run-bands "$tmp/out" '"envelope": {'
sed 's/"trainsim.bands\/1"/"trainsim.bands\/9"/' "$tmp/bands.json" >"$tmp/bad-bands.json"
expect run-bad-bands 2 "$bin" run "$src/scenarios/gpt3-6.7b-a100-8.json" --backend analytic --bands "$tmp/bad-bands.json"
contains run-bad-bands "$tmp/err" "bad-bands.json: /schema: expected \"trainsim.bands/1\""
expect run-missing-bands 2 "$bin" run "$src/scenarios/gpt3-6.7b-a100-8.json" --backend analytic --bands "$tmp/none.json"
contains run-missing-bands "$tmp/err" "none.json: cannot open file"
# search and compare take the same --bands: the ranking's bands name the user's file.
expect compare-bands 0 "$bin" compare "$src/scenarios/gpt3-6.7b-a100-8.json" --vary training.micro_batch=1,2 \
  --bands "$tmp/bands.json" --format json
contains compare-bands "$tmp/out" "\"source\": \"validation/bands.json (built in) + $tmp/bands.json\""
expect compare-bad-bands 2 "$bin" compare "$src/scenarios/gpt3-6.7b-a100-8.json" --bands "$tmp/bad-bands.json"
contains compare-bad-bands "$tmp/err" "bad-bands.json: /schema: expected \"trainsim.bands/1\""
expect search-bands 0 "$bin" search "$small" --no-recheck --top 3 --quiet --bands "$tmp/bands.json"
contains search-bands "$tmp/out" "+ $tmp/bands.json"
expect search-missing-bands 2 "$bin" search "$small" --no-recheck --top 3 --quiet --bands "$tmp/none.json"
contains search-missing-bands "$tmp/err" "none.json: cannot open file"
# search says which of its best layouts are tied within the bands, in the table and in JSON.
expect search-accuracy 0 "$bin" search "$small" --no-recheck --top 3 --quiet
contains search-accuracy "$tmp/out" "accuracy (analytic backend residuals of"
expect search-accuracy-json 0 "$bin" search "$small" --no-recheck --top 3 --quiet --format json
contains search-accuracy-json "$tmp/out" '"accuracy": {'

# schedule (docs/schedule.md): policies compared in one table, the JCT CDF; bad flags exit 2.
sched_c="$src/tests/data/schedule/cluster-3types.json"
sched_j="$src/tests/data/schedule/jobs-3.json"
expect schedule-table 0 "$bin" schedule "$sched_c" "$sched_j" --policy fifo,gavel-las --plot "$tmp/cdf.svg" \
  --gantt "$tmp/gantt.svg"
contains schedule-table "$tmp/gantt.svg" "<svg"
contains schedule-table "$tmp/gantt.svg" "gpt3-6.7b: "
contains schedule-table "$tmp/out" "gavel-las"
contains schedule-table "$tmp/out" "average JCT over gavel-las's: fifo "
contains schedule-table "$tmp/cdf.svg" "<svg"
expect schedule-csv 0 "$bin" schedule "$sched_c" "$sched_j" --policy las --format csv
count schedule-csv "$tmp/out" "las," 3
expect schedule-matrix-csv 0 "$bin" schedule "$sched_c" "$sched_j" --matrix --format csv
contains schedule-matrix-csv "$tmp/out" "job,pool,gpu,gpus,feasible,iteration_time_s"
expect schedule-bad-policy 2 "$bin" schedule "$sched_c" "$sched_j" --policy gavel
contains schedule-bad-policy "$tmp/err" '--policy: unknown policy "gavel"'
expect schedule-restart-above-round 2 "$bin" schedule "$sched_c" "$sched_j" --restart-s 400
contains schedule-restart-above-round "$tmp/err" "--restart-s: expected less than the round (360 s), found 400"
sed 's/"price_per_gpu_hour": 2.5,//' "$sched_c" >"$tmp/unpriced.json"
expect schedule-min-cost-unpriced 2 "$bin" schedule "$tmp/unpriced.json" "$sched_j" --policy min-cost
contains schedule-min-cost-unpriced "$tmp/err" "unpriced.json: /pools/2/price_per_gpu_hour: the policy min-cost needs a price on every pool"

# --vs: the same jobs on other cluster files, side by side. A cluster against itself is 1.00x on every
# figure; each cluster's table is what a run on that cluster alone prints.
sed 's/"nodes": 1, "gpus_per_node": 8, "price_per_gpu_hour": 2.5/"nodes": 2, "gpus_per_node": 8, "price_per_gpu_hour": 2.5/' \
  "$sched_c" >"$tmp/bigger.json"
expect schedule-alone 0 "$bin" schedule "$tmp/bigger.json" "$sched_j" --policy fifo,gavel-las
grep '^gavel-las ' "$tmp/out" >"$tmp/bigger-gavel-line.txt"
count schedule-alone "$tmp/bigger-gavel-line.txt" "gavel-las " 1
expect schedule-vs 0 "$bin" schedule "$sched_c" "$sched_j" --vs "$sched_c" --vs "$tmp/bigger.json" --policy fifo,gavel-las \
  --plot "$tmp/vs.svg"
contains schedule-vs "$tmp/out" "side by side, over $sched_c's:"
contains schedule-vs "$tmp/out" "$sched_c gavel-las: average JCT 1.00x, p95 JCT 1.00x, makespan 1.00x, GPU-hours 1.00x, cost 1.00x"
contains schedule-vs "$tmp/out" "$tmp/bigger.json: 3 pools,"
contains schedule-vs "$tmp/out" "$(cat "$tmp/bigger-gavel-line.txt")"
contains schedule-vs "$tmp/vs.svg" "bigger gavel-las"
expect schedule-vs-csv 0 "$bin" schedule "$sched_c" "$sched_j" --vs "$tmp/bigger.json" --policy las --format csv
contains schedule-vs-csv "$tmp/out" "cluster,policy,"
count schedule-vs-csv "$tmp/out" ",las," 6
expect schedule-vs-json 0 "$bin" schedule "$sched_c" "$sched_j" --vs "$tmp/bigger.json" --format json
contains schedule-vs-json "$tmp/out" '"schema": "trainsim.schedule-clusters/1"'
expect schedule-vs-gantt 2 "$bin" schedule "$sched_c" "$sched_j" --vs "$tmp/bigger.json" --gantt "$tmp/g.svg"
contains schedule-vs-gantt "$tmp/err" "--gantt: draws the jobs of one cluster: leave out --vs"
expect schedule-vs-missing 2 "$bin" schedule "$sched_c" "$sched_j" --vs "$tmp/none.json"
contains schedule-vs-missing "$tmp/err" "none.json: cannot open file"

# Checkpoint costs (scheduler.checkpoint_costs): a table line per policy, the job rows' last CSV
# columns, the matrix's figures, and a round too short for a restart and a checkpoint (exit 2).
cat >"$tmp/ckpt-cluster.json" <<'JSON'
{ "pools": [ { "name": "a100", "gpu": "A100-SXM4-80GB", "nodes": 1,
               "storage": { "parallel_fs": { "write_bandwidth": "1 GB/s", "read_bandwidth": "1 GB/s" } } } ],
  "scheduler": { "round_s": 360, "restart_s": 30, "checkpoint_costs": true } }
JSON
cat >"$tmp/ckpt-jobs.json" <<'JSON'
{ "jobs": [ { "name": "ckpt", "work": { "iterations": 3000 }, "gpus": [8],
              "scenario": { "model": "gpt3-125m", "training": { "sequence_length": 1024, "global_batch": 32,
                            "checkpoint": { "interval": 500, "mode": "sync" } } } },
            { "name": "plain", "work": { "iterations": 3000 }, "gpus": [8],
              "scenario": { "model": "gpt3-125m", "training": { "sequence_length": 1024, "global_batch": 32 } } } ] }
JSON
expect schedule-checkpoints 0 "$bin" schedule "$tmp/ckpt-cluster.json" "$tmp/ckpt-jobs.json" --policy fifo --refine 2
contains schedule-checkpoints "$tmp/out" "fifo: 5 checkpoint(s), "
expect schedule-checkpoints-csv 0 "$bin" schedule "$tmp/ckpt-cluster.json" "$tmp/ckpt-jobs.json" --policy fifo --refine 2 \
  --format csv
contains schedule-checkpoints-csv "$tmp/out" "met_deadline,checkpoints,checkpoint_stall_s,checkpoint_gpu_hours"
expect schedule-checkpoints-matrix 0 "$bin" schedule "$tmp/ckpt-cluster.json" "$tmp/ckpt-jobs.json" --matrix --refine 2 \
  --format csv
contains schedule-checkpoints-matrix "$tmp/out" "reason,checkpoint_stall_s,checkpoint_load_s,checkpoint_interval_s"
expect schedule-checkpoints-round 2 "$bin" schedule "$tmp/ckpt-cluster.json" "$tmp/ckpt-jobs.json" --refine 2 --round-s 31
contains schedule-checkpoints-round "$tmp/err" "ckpt-jobs.json: /jobs/0: job \"ckpt\" on 8 x a100: a restart (restart_s 30 s"

# A synthetic trace written out (--write-trace) reads back to the same schedule, byte for byte.
expect schedule-write-trace 0 "$bin" schedule "$sched_c" "$src/tests/data/schedule/synthetic-20.json" --format json \
  --policy fifo,gavel-las --write-trace "$tmp/trace.json"
cp "$tmp/out" "$tmp/schedule-synthetic.json"
expect schedule-read-trace 0 "$bin" schedule "$sched_c" "$tmp/trace.json" --format json --policy fifo,gavel-las
same schedule-trace-roundtrip "$tmp/schedule-synthetic.json" "$tmp/out"
contains schedule-read-trace "$tmp/out" '"schema": "trainsim.schedule/1"'
count schedule-trace-roundtrip "$tmp/trace.json" '"reference_hours"' 20

report
