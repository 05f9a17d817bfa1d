#!/usr/bin/env bash
# Installs the Debian 12 packages trainsim needs (only those missing), then configures and builds.
# Usage: scripts/setup.sh [BUILD_DIR] [extra cmake arguments...]
# Environment: CI=true turns warnings into errors.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-"$repo/build"}
shift || true

packages=(cmake g++ make pkg-config libsimgrid-dev nlohmann-json3-dev libfmt-dev libprotobuf-dev
          protobuf-compiler libgtest-dev libcli11-dev libeigen3-dev libtomlplusplus-dev
          coinor-libclp-dev   # COIN-OR CLP: the linear programs of `trainsim schedule` (docs/schedule.md)
          librsvg2-bin   # rsvg-convert: --plot FILE.png
          pybind11-dev python3-dev)  # the Python module (python/, docs/python.md; -DTRAINSIM_PYTHON=OFF: without)
# Only for the test suite (-DTRAINSIM_BUILD_TESTS=ON): python3 checks the SVG/HTML files and headless
# Chromium renders the HTML report once; Open MPI (optional for a build: `mpirun -np N trainsim
# search`, docs/search.md) so that cli.search_mpi runs instead of being skipped.
for arg in "$@"; do
  if [ "$arg" = "-DTRAINSIM_BUILD_TESTS=ON" ]; then packages+=(python3 chromium libopenmpi-dev openmpi-bin); fi
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing missing packages: ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

werror=OFF
if [ "${CI:-}" = "true" ]; then werror=ON; fi
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTRAINSIM_WERROR="$werror" "$@" >&2
cmake --build "$build" -j"$(nproc)" >&2
