#!/usr/bin/env bash
# The GPU checks, as one script for a lent GPU machine (CUDA, NCCL and PyTorch there, nothing else):
#   1. the tracer on a real PyTorch step: each configuration of scripts/gpu/train_step.py runs plain,
#      then under `trainsim trace --nvtx`; the median step times give the tracer's overhead;
#   2. one torch.profiler (Kineto) trace of the same program, for `trace import-kineto`;
#   3. `trainsim emulate --device gpu` on the traced job and on one pipeline stage of a bundled
#      scenario, with the CPU path beside it.
# `device_check.sh tracer` runs step 1 alone, on the two smaller configurations.
# Needs the bundle of scripts/gpu/bundle.sh in .devbundle/ (carried); writes into $OUT (or ./gpu-out):
# log.txt, results.jsonl (one line per train_step run, with "mode"), traces.tar.xz.
#
# What it measured is in docs/gpu-runs.md.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
repo=$PWD
work=/tmp/gpucheck
rm -rf "$work" && mkdir -p "$work"
tar -C "$work" -xJf .devbundle/bundle.tar.xz
B=$work/trainsim
T=$B/bin/trainsim
export OMPI_MCA_mca_base_component_path=$B/openmpi3 OPAL_PKGDATADIR=$B/openmpi-help OMPI_MCA_ess_singleton_isolated=1 \
  OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_osc=sm,pt2pt PMIX_MCA_mca_base_component_path=$B/pmix2/lib/pmix \
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PYTHONUNBUFFERED=1

section() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }
section machine
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
ls /usr/local/cuda/lib* 2>/dev/null | grep -E 'cupti|nccl|cudart' | head
nccl_dir=$(dirname "$(find /opt /usr/local /usr/lib -name 'libnccl.so.2*' 2>/dev/null | head -1)")
cudart_dir=$(dirname "$(find /opt /usr/local /usr/lib -name 'libcudart.so.13*' 2>/dev/null | head -1)")
echo "libnccl in $nccl_dir; libcudart in $cudart_dir"
gpu=$(python3 -c 'import torch; print(torch.cuda.get_device_name())')
$T --version 2>&1 | head -1

# name layers hidden heads seq micro_batch
configs=("tiny 4 256 4 256 2" "gpt-350m 24 1024 16 2048 8" "gpt-1.3b 24 2048 16 2048 4")
only_tracer=false
if [[ ${1:-} == tracer ]]; then
  only_tracer=true
  configs=("${configs[@]:0:2}")
fi
for c in "${configs[@]}"; do
  read -r name L H A S MB <<<"$c"
  args=(--layers "$L" --hidden "$H" --heads "$A" --seq "$S" --micro-batch "$MB" --warmup 3 --steps 10 --nvtx)
  python3 scripts/gpu/scenario.py --layers "$L" --hidden "$H" --heads "$A" --seq "$S" --micro-batch "$MB" \
    --gpu "$gpu" >"$work/$name.json"
  section "$name plain"
  python3 scripts/gpu/train_step.py "${args[@]}" | sed "s/^{/{\"config\": \"$name\", \"mode\": \"plain\", /" |
    tee -a "$OUT/results.jsonl"
  section "$name traced"
  $T trace --nvtx --out "$work/traces/$name" -- python3 scripts/gpu/train_step.py "${args[@]}" |
    sed "s/^{/{\"config\": \"$name\", \"mode\": \"traced\", /" | tee -a "$OUT/results.jsonl"
  ls -la "$work/traces/$name"
  $T trace summary "$work/traces/$name" --top 8 2>&1 | head -60
  section "$name predicted"
  $T run "$work/$name.json" 2>&1 | head -8
done
if $only_tracer; then
  tar -C "$work" -cJf "$OUT/traces.tar.xz" traces
  exit 0
fi

section "kineto gpt-350m"
python3 scripts/gpu/train_step.py --layers 24 --hidden 1024 --heads 16 --seq 2048 --micro-batch 8 --warmup 3 --steps 3 \
  --profile-dir "$work/kineto" | sed 's/^{/{"config": "gpt-350m", "mode": "kineto", /' | tee -a "$OUT/results.jsonl"
ls -la "$work/kineto"
$T trace import-kineto "$work"/kineto/*.json --out "$work/traces/kineto" 2>&1 | tail -3
$T trace summary "$work/traces/kineto" --top 5 2>&1 | head -30

section "emulate --device gpu, gpt-1.3b (1 rank)"
export LD_LIBRARY_PATH=$nccl_dir:$cudart_dir
$T emulate "$work/gpt-1.3b.json" --device gpu --iterations 3 --trace "$work/traces/emulate-gpu" 2>&1 | tail -20
section "emulate --device cpu, gpt-1.3b (1 rank)"
$T emulate "$work/gpt-1.3b.json" --device cpu --iterations 3 2>&1 | tail -8
pp4="scenarios/pipeline/gpt3-2.7b-h100-16-ethernet-pp4.json --set parallelism.tensor=1 --set parallelism.data=1 --set cluster.nodes=1 --set cluster.gpus_per_node=4 --ranks stage:0"
section "emulate --device gpu, gpt3-2.7b pp4 stage:0"
$T emulate $pp4 --device gpu --iterations 3 2>&1 | tail -12
section "emulate --device cpu, gpt3-2.7b pp4 stage:0"
$T emulate $pp4 --device cpu --iterations 3 2>&1 | tail -6
unset LD_LIBRARY_PATH

section pack
tar -C "$work" -cJf "$OUT/traces.tar.xz" traces kineto
cp "$work"/*.json "$OUT/"
ls -la "$OUT"
section done
