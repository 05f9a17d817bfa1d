#!/usr/bin/env bash
# `trainsim import` and `trainsim export` end to end (docs/import.md): the fixtures of
# tests/data/import become scenarios that `check` and `run` accept, the summary gives the models'
# published parameter counts, bad input exits 2 naming the file and field, and a bundled scenario
# written as Megatron-LM arguments and read back predicts the same iteration time.
set -u
bin=$1
src=$2
# shellcheck source=tests/cli/check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
data="$src/tests/data/import"
h100=(--gpu H100-SXM5-80GB)

# Hugging Face config.json alone: the model, data parallelism over the cluster given by flags.
expect hf-llama3-8b 0 "$bin" import --hf "$data/hf/llama3-8b.json" "${h100[@]}" --nodes 2 --set training.global_batch=128 -o "$tmp/llama.json"
contains hf-llama3-8b "$tmp/err" "model: 8.03B parameters"
contains hf-llama3-8b-notes "$tmp/err" "note: $data/hf/llama3-8b.json: /rope_theta = 500000.0: no counterpart"
contains hf-llama3-8b-file "$tmp/llama.json" "//   $data/hf/llama3-8b.json: /rope_theta = 500000.0: no counterpart"
expect hf-llama3-8b-check 0 "$bin" check "$tmp/llama.json"
contains hf-llama3-8b-check "$tmp/out" '"data": 16'
expect hf-llama3-8b-run 0 "$bin" run "$tmp/llama.json" --backend analytic
expect hf-mixtral 0 "$bin" import --hf "$data/hf/mixtral-8x7b.json" "${h100[@]}" --nodes 4 --set training.global_batch=256 -q
contains hf-mixtral "$tmp/err" "model: 46.70B parameters (12.88B active)"
count hf-mixtral-quiet "$tmp/err" "note:" 0
expect hf-qwen3-moe 0 "$bin" import --hf "$data/hf/qwen3-235b-a22b.json" "${h100[@]}" --nodes 32 --set training.global_batch=2048 -q
contains hf-qwen3-moe "$tmp/err" "model: 235.09B parameters (22.19B active)"
expect hf-deepseek 0 "$bin" import --hf "$data/hf/deepseek-v3.json" "${h100[@]}" --nodes 32 --set training.global_batch=2048
contains hf-deepseek "$tmp/err" "approximated: multi-head latent attention has no counterpart"

# Framework configs: a Megatron-LM launch (the world size from torchrun), Megatron-Bridge overrides
# over a config.json, a torchtitan TOML, a DeepSpeed ZeRO-3 config.
expect megatron-launch 0 "$bin" import --megatron "$data/megatron/llama3-70b-pretrain.sh" "${h100[@]}" -o "$tmp/megatron.json"
contains megatron-launch "$tmp/megatron.json" '"tensor": 8'
contains megatron-launch "$tmp/err" "padded to 129024 as Megatron does"
expect megatron-launch-run 0 "$bin" run "$tmp/megatron.json" --backend analytic
expect bridge 0 "$bin" import --hf "$data/hf/qwen3-235b-a22b.json" --megatron "$data/megatron/qwen3-235b-bridge.args" "${h100[@]}" --nodes 32 -q
contains bridge "$tmp/out" '"expert_tensor": 1'
expect torchtitan 0 "$bin" import --torchtitan "$data/torchtitan/llama3_8b.toml" --cluster-from "$src/scenarios/llama3-70b-h100-64.json" -q
contains torchtitan "$tmp/out" '"zero_impl": "fsdp2"'
expect deepspeed 0 "$bin" import --hf "$data/hf/llama3-8b.json" --deepspeed "$data/deepspeed/zero3.json" "${h100[@]}" --nodes 8 -q
contains deepspeed "$tmp/out" '"zero_impl": "deepspeed"'
# Megatron arguments on the command line, after --.
expect inline-args 0 "$bin" import "${h100[@]}" --nodes 1 -q -- --num-layers 4 --hidden-size 1024 --num-attention-heads 16 \
  --vocab-size 32000 --seq-length 2048 --micro-batch-size 2 --global-batch-size 64 --bf16 --tensor-model-parallel-size 2
contains inline-args "$tmp/out" '"data": 4'
contains inline-args "$tmp/out" '"name": "imported"'

# Bad input: exit 2, each problem naming its file and field.
expect conflict 2 "$bin" import --hf "$data/hf/llama3-8b.json" "${h100[@]}" -- --hidden-size 8192 --global-batch-size 64
contains conflict "$tmp/err" "error: command line: --hidden-size: 8192 contradicts $data/hf/llama3-8b.json: /hidden_size = 4096"
expect no-cluster 2 "$bin" import --hf "$data/hf/llama3-8b.json"
contains no-cluster "$tmp/err" "the cluster is unknown"
expect nothing 2 "$bin" import "${h100[@]}"
contains nothing "$tmp/err" "nothing to import"
expect base-and-cluster 2 "$bin" import --hf "$data/hf/llama3-8b.json" --base "$src/scenarios/llama3-70b-h100-64.json" \
  --cluster-from "$src/scenarios/llama3-70b-h100-64.json"
expect impossible 2 "$bin" import --hf "$data/hf/llama3-8b.json" "${h100[@]}" --nodes 3 --set training.global_batch=64 -- --tensor-model-parallel-size 3
contains impossible "$tmp/err" "(from command line: --tensor-model-parallel-size)"
contains impossible "$tmp/err" "write it anyway with --no-check"
expect impossible-no-check 0 "$bin" import --hf "$data/hf/llama3-8b.json" "${h100[@]}" --nodes 3 --set training.global_batch=64 --no-check -q \
  -- --tensor-model-parallel-size 3
expect missing-file 2 "$bin" import --deepspeed "$tmp/nope.json" "${h100[@]}"
contains missing-file "$tmp/err" "nope.json: cannot open file"
expect import-stdout-full 2 bash -c '"$0" import --hf "$1" --gpu H100-SXM5-80GB --set training.global_batch=8 -q >/dev/full' "$bin" "$data/hf/llama3-8b.json"
contains import-stdout-full "$tmp/err" "error: standard output: cannot write the results"

# Export: the Megatron arguments of a bundled scenario read back to the same prediction.
scenario="$src/scenarios/llama3-70b-h100-64.json"
expect export-megatron 0 "$bin" export --to megatron "$scenario" -o "$tmp/llama70b.args"
contains export-megatron "$tmp/llama70b.args" "--tensor-model-parallel-size 8"
contains export-megatron "$tmp/err" "everything expressed; read it back with: trainsim import --megatron $tmp/llama70b.args --cluster-from $scenario"
expect export-import 0 "$bin" import --megatron "$tmp/llama70b.args" --cluster-from "$scenario" -q -o "$tmp/back.json"
"$bin" run "$scenario" --backend analytic --format json | grep -o '"iteration_time_s": [0-9.e+-]*' | head -1 >"$tmp/time.orig"
"$bin" run "$tmp/back.json" --backend analytic --format json | grep -o '"iteration_time_s": [0-9.e+-]*' | head -1 >"$tmp/time.back"
same export-round-trip "$tmp/time.orig" "$tmp/time.back"
expect export-lossy 0 "$bin" export --to megatron "$src/scenarios/llama3-405b-h100-16384.json"
contains export-lossy "$tmp/err" "not expressed: parallelism.zero_stage: 2:"
contains export-lossy "$tmp/out" "#   parallelism.zero_stage: 2:"
expect export-strict 2 "$bin" export --to megatron "$src/scenarios/llama3-405b-h100-16384.json" --strict
contains export-strict "$tmp/err" "error: $src/scenarios/llama3-405b-h100-16384.json: parallelism.zero_stage: not expressible as Megatron-LM arguments"
expect export-cnn 2 "$bin" export --to hf "$src/scenarios/cnn/resnet50-a100-8.json"
contains export-cnn "$tmp/err" "resnet50 is a model of layers"
expect export-bad-format 2 "$bin" export --to nemo "$scenario"
expect export-deepspeed 0 "$bin" export --to deepspeed "$src/scenarios/sanity/zero-sc20-13b-v100-128.json" -o "$tmp/ds.json"
contains export-deepspeed "$tmp/err" "--set training.sequence_length=1024"
expect export-hf 0 "$bin" export --to hf "$src/scenarios/sanity/zero-sc20-13b-v100-128.json" -o "$tmp/config.json"
# The frameworks read strict JSON (no comments), and the DeepSpeed pair reads back to the same time.
for f in ds.json config.json; do
  expect "strict-json-$f" 0 python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/$f"
done
expect export-deepspeed-back 0 "$bin" import --deepspeed "$tmp/ds.json" --hf "$tmp/config.json" -q -o "$tmp/ds-back.json" \
  --cluster-from "$src/scenarios/sanity/zero-sc20-13b-v100-128.json" --set training.sequence_length=1024
"$bin" run "$src/scenarios/sanity/zero-sc20-13b-v100-128.json" --backend analytic --format json | grep -o '"iteration_time_s": [0-9.e+-]*' | head -1 >"$tmp/time.orig"
"$bin" run "$tmp/ds-back.json" --backend analytic --format json | grep -o '"iteration_time_s": [0-9.e+-]*' | head -1 >"$tmp/time.back"
same export-deepspeed-round-trip "$tmp/time.orig" "$tmp/time.back"
# Megatron arguments continue their lines: the file is a valid piece of a launch script.
expect megatron-args-shell 0 bash -c 'set -- $(grep -v "^#" "$0" | tr -d "\\"); [ "$1" = "--num-layers" ]' "$tmp/llama70b.args"

report
