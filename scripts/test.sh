#!/usr/bin/env bash
# Installs what is missing, builds with the tests, and runs the whole suite with ctest.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$repo/scripts/setup.sh" "$repo/build" -DTRAINSIM_BUILD_TESTS=ON
cd "$repo/build"
ctest --output-on-failure -j"$(nproc)"
