#pragma once
// `mpirun -np N trainsim search SCENARIO ...` (docs/search.md, "Under MPI"): rank R evaluates shard
// R/N of the candidates (the `--shard` machinery), rank 0 gathers the N shard documents, merges them
// as `search merge` does, re-checks the top with SimGrid and prints the result; the other ranks print
// nothing. MPI is optional at build time (TRAINSIM_MPI in sim/cli/CMakeLists.txt): MPI_Init is only
// called here, so `run` and every other command never touch MPI even in an MPI build.

#include <ostream>

#include "sim/cli/search_command.hpp"

namespace trainsim::cli {

// Whether this binary was built with MPI.
bool mpi_built();
// The number of ranks mpirun started (OMPI_COMM_WORLD_SIZE, set by Open MPI's launcher), 1 when not
// started by mpirun or when the variable is not a number.
int mpi_world_size();
// The MPI search. REQUIRES: mpi_world_size() > 1. Without MPI in the build: InputError telling how to
// rebuild or to use --shard (printed by rank 0 only). Rank 0: the exit codes of search_command, for
// the whole search (an error on any rank is printed there, once); the other ranks print nothing and
// exit 0 (mpirun would abort rank 0 if another rank exited non-zero first).
int search_mpi_command(SearchArgs args, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
