# Shared by the end-to-end scripts run under mpirun (search_mpi.sh, emulate_mpi.sh,
# emulate_calibrate.sh), whose arguments start TRAINSIM SOURCE_DIR MPIEXEC: sets bin, src and mpiexec,
# exits 77 (ctest: skipped, tests/cli/CMakeLists.txt) when MPIEXEC is empty, i.e. trainsim was built
# without MPI, sources check_lib.sh and sets mpirun, the command line to start ranks with.
# Source it with the script's arguments: source mpi_lib.sh "$@".
bin=$1
src=$2
mpiexec=${3:-}
if [ -z "$mpiexec" ]; then
  echo "skipped: trainsim was built without MPI (no libopenmpi-dev when cmake configured)"
  exit 77
fi
# shellcheck source=tests/cli/check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
mpirun=("$mpiexec" --oversubscribe --allow-run-as-root)
