#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang + ASan + UBSan and runs each for a given time,
# seeded from the repository's own inputs (docs/hardening.md).
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET ...]
#   TARGET: scenario, kineto, trace, nccl_tests, shard, report, layer_graph, resilience, import (default: all,
#   run at the same time).
# Environment: FUZZ_DIR (default /tmp/trainsim-fuzz) keeps each target's growing corpus, its log
#   and the inputs that failed (FUZZ_DIR/TARGET-findings/); BUILD (default REPO/build-fuzz).
# Prints, per target: executions, coverage (edges), features, corpus size, this run's findings and the
# earlier runs' still in the folder. Exit status
# 0 when no target found anything, 3 otherwise.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-60}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then targets=(scenario kineto trace nccl_tests shard report layer_graph resilience import); fi
fuzz_dir=${FUZZ_DIR:-/tmp/trainsim-fuzz}
build=${BUILD:-"$repo/build-fuzz"}

# clang 16 (Debian 12's clang-16): clang 14 lacks std::source_location, which trainsim uses.
if ! command -v clang++-16 >/dev/null || [ ! -e /usr/lib/llvm-16/lib/clang/16/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "fuzz: installing clang-16 and its runtime (libFuzzer, sanitizers)" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang-16 libclang-rt-16-dev >&2
fi
# The normal set-up installs the libraries; the fuzz build only changes the compiler and flags.
"$repo/scripts/setup.sh" "$build" -DCMAKE_CXX_COMPILER=clang++-16 -DTRAINSIM_FUZZ=ON -DTRAINSIM_BUILD_TESTS=OFF \
  -DTRAINSIM_MPI=OFF -DTRAINSIM_TRACER=OFF -DTRAINSIM_EMULATE_GPU=OFF

# Seeds: every input of the given kind the repository holds, good and bad. Files are copied under a
# name made from their path, so that two with the same base name both go in.
copy_seeds() {  # copy_seeds DIR FILE...
  local dir=$1 f
  shift
  for f in "$@"; do cp "$f" "$dir/seed-$(echo "$f" | md5sum | cut -c1-12)-$(basename "$f")"; done
}
seed() {
  local target=$1 dir=$fuzz_dir/$1
  mkdir -p "$dir"
  case $target in
    scenario) mapfile -t files < <(find "$repo/scenarios" "$repo/tests/data/bad" "$repo/tests/data/validation" \
                                     -name '*.json' -size -64k) ;;
    kineto) mapfile -t files < <(find "$repo/tests/data/traces" -name '*.json' -size -256k) ;;
    trace)
      mapfile -t files < <(find "$repo/tests/data/traces" -name '*.trace')
      local tmp k
      tmp=$(mktemp -d)
      for k in "$repo"/tests/data/traces/kineto_rank*.json "$repo"/tests/data/traces/kineto-shapes/*.json; do
        "$build/sim/cli/trainsim" trace import-kineto "$k" --out "$tmp" >/dev/null 2>&1 || true
      done
      mapfile -t -O "${#files[@]}" files < <(find "$tmp" -name '*.trace')
      copy_seeds "$dir" "${files[@]}"
      rm -rf "$tmp"
      return ;;
    nccl_tests) mapfile -t files < <(find "$repo/tests/data/nccl-tests" -name '*.txt') ;;
    import)
      # The first byte picks the format (tests/fuzz/import_fuzz.cpp): each fixture and bad case behind its byte.
      local format byte f
      for format in megatron:0 torchtitan:1 deepspeed:2 hf:3; do
        byte=${format#*:}
        for f in "$repo/tests/data/import/${format%:*}"/* "$repo/tests/data/bad/import/${format%:*}"/*; do
          case $f in *.expected) continue ;; esac
          { printf '%s' "$byte"; cat "$f"; } >"$dir/seed-$byte-$(basename "$f")"
        done
      done
      return ;;
    shard | report | layer_graph | resilience)
      # Made by trainsim itself from the bundled scenarios (tests/fuzz/make_seeds.py).
      python3 "$repo/tests/fuzz/make_seeds.py" "$target" "$build/sim/cli/trainsim" "$repo" "$dir"
      return ;;
    *) echo "fuzz: unknown target '$target' (expected scenario, kineto, trace, nccl_tests, shard, report," \
         "layer_graph, resilience or import)" >&2; exit 2 ;;
  esac
  copy_seeds "$dir" "${files[@]}"
}

# Findings of earlier runs stay in FUZZ_DIR/TARGET-findings/; this run counts only what it adds.
started=$(mktemp)
trap 'rm -f "$started"' EXIT
pids=()
for t in "${targets[@]}"; do
  seed "$t"
  mkdir -p "$fuzz_dir/$t-findings"
  # -timeout: an input that takes longer is a finding (the issue's "runs for minutes");
  # -rss_limit_mb: so is one that grows past 4 GB.
  "$build/tests/fuzz/fuzz_$t" "$fuzz_dir/$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$fuzz_dir/$t-findings/" \
    >"$fuzz_dir/$t.log" 2>&1 &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=3; done

printf '%-11s %12s %8s %8s %8s %9s %9s\n' target executions cov ft corpus findings earlier
for t in "${targets[@]}"; do
  log=$fuzz_dir/$t.log
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | grep -o 'cov: [0-9]* ft: [0-9]*' | tail -1)
  cov=$(echo "$last" | awk '{print $2}')
  ft=$(echo "$last" | awk '{print $4}')
  corpus=$(find "$fuzz_dir/$t" -type f | wc -l)
  findings=$(find "$fuzz_dir/$t-findings" -type f -newer "$started" | wc -l)
  earlier=$(find "$fuzz_dir/$t-findings" -type f ! -newer "$started" | wc -l)
  printf '%-11s %12s %8s %8s %8s %9s %9s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$corpus" "$findings" "$earlier"
done
exit $status
