#!/usr/bin/env bash
# The tracer's overhead on a host-bound step with CUPTI API records for the launches only (the
# default) and for every API call (TRAINSIM_TRACE_API=all), and whether kernels join their cuBLAS
# calls in each: the check behind tracer/cuda/injection.cpp's enable_api_records (docs/gpu-runs.md).
# Needs the bundle of scripts/gpu/bundle.sh in .devbundle/ (carried).
set -uo pipefail
work=/tmp/gpuapi
rm -rf "$work" && mkdir -p "$work" && tar -C "$work" -xJf .devbundle/bundle.tar.xz
T=$work/trainsim/bin/trainsim
args=(--layers 4 --hidden 256 --heads 4 --seq 256 --micro-batch 2 --warmup 3 --steps 20)
median() { python3 -c 'import json,sys; print(round(json.loads(sys.stdin.read())["median_s"]*1e3, 3), "ms")'; }
joined() {  # external correlation records, and GEMM kernels whose correlation id one of them names
  $T trace dump "$1"/*.trace | python3 -c '
import json, sys
ext, gemm_kernels, joined = set(), 0, 0
recs = [json.loads(l) for l in sys.stdin]
for r in recs:
    if "external_correlation" in r: ext.add(int(r["external_correlation"].get("correlation_id", 0)))
for r in recs:
    k = r.get("kernel")
    if k and any(s in k.get("name", "") for s in ("nvjet", "gemm", "xmma", "cutlass")):
        gemm_kernels += 1
        joined += int(k.get("correlation_id", 0)) in ext
print("external_correlation", len(ext), "gemm kernels", gemm_kernels, "joined", joined)'
}
for i in 1 2; do
  echo "plain: $(python3 scripts/gpu/train_step.py "${args[@]}" | median)"
  $T trace --out "$work/launches$i" -- python3 scripts/gpu/train_step.py "${args[@]}" | median | sed 's/^/traced, launch API records: /'
  TRAINSIM_TRACE_API=all $T trace --out "$work/all$i" -- python3 scripts/gpu/train_step.py "${args[@]}" | median |
    sed 's/^/traced, all API records: /'
done
joined "$work/launches1"
joined "$work/all1"
[[ -n ${OUT:-} ]] && tar -C "$work" -cJf "$OUT/api-traces.tar.xz" launches1 all1
