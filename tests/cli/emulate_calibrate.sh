#!/usr/bin/env bash
# The loopback calibration loop of docs/emulate.md ("Calibrating the simulator on the emulator's
# machine"): `mpirun -np 8 trainsim emulate --trace DIR`, then `trainsim calibrate DIR` fits the
# intra-node network of this machine from the emulator's own Collective records (and only those:
# modelled calls are markers), then the emulator runs again with that profile, whose prediction must
# differ from the nominal one (the fitted network is this machine's, not NVSwitch's).
# Usage: emulate_calibrate.sh TRAINSIM SOURCE_DIR MPIEXEC. An empty MPIEXEC means trainsim was built
# without MPI: exit 77, which ctest reports as skipped (tests/cli/CMakeLists.txt).
set -u
# shellcheck source=tests/cli/mpi_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/mpi_lib.sh" "$@"

scenario="$src/scenarios/gpt3-6.7b-a100-8.json"
run=("$scenario" --set training.global_batch=32 --scale-compute 0.001 --scale-bytes 1e-3 --iterations 2)

expect emulate 0 "${mpirun[@]}" -np 8 "$bin" emulate "${run[@]}" --trace "$tmp/traces"
nominal=$(sed -n 's/^  simulated (analytic) *\([0-9.]*\) s.*/\1/p' "$tmp/out")
sed -n '/emulated iteration/p;/simulated (analytic)/p' "$tmp/out"

expect calibrate 0 "$bin" calibrate "$tmp/traces" --scenario "$scenario" -o "$tmp/profile.json" --format json
# The intra-node network is fitted (in_profile) from the emulator's collectives.
python3 - "$tmp/out" "$tmp/profile.json" <<'PY' && passes=$((passes + 1)) || failures=$((failures + 1))
import json, sys
fit = json.load(open(sys.argv[1]))
intra = [c for c in fit["categories"] if c["name"] == "intra_node"]
assert intra and intra[0]["in_profile"] and intra[0]["samples"] > 0, f"FAIL calibrate: {intra}"
profile = json.load(open(sys.argv[2]))
print(f"  intra_node: {intra[0]['samples']} samples, {intra[0]['parameters']}")
PY

expect again 0 "${mpirun[@]}" -np 8 "$bin" emulate "${run[@]}" --set "simulation.profile=$tmp/profile.json"
calibrated=$(sed -n 's/^  simulated (analytic) *\([0-9.]*\) s.*/\1/p' "$tmp/out")
sed -n '/emulated iteration/p;/simulated (analytic)/p' "$tmp/out"
if [ -n "$nominal" ] && [ -n "$calibrated" ] && [ "$nominal" != "$calibrated" ]; then
  passes=$((passes + 1))
else
  echo "FAIL again: the calibrated prediction ($calibrated s) should differ from the nominal one ($nominal s)"
  failures=$((failures + 1))
fi

echo "emulate_calibrate: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
