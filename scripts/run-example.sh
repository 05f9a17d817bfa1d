#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and predicts GPT-3 175B on 1,024 A100s (TP8 PP8 DP16).
# Extra arguments go to `trainsim run` (e.g. --format json).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$repo/scripts/setup.sh" "$repo/build" -DTRAINSIM_BUILD_TESTS=OFF
exec "$repo/build/sim/cli/trainsim" run "$repo/scenarios/gpt3-175b-a100-1024.json" "$@"
