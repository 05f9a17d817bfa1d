#pragma once
// What the tracer learns from the process environment: where to write, which rank this process is,
// and what to record. Pure functions of an environment lookup, so that tests can pass their own.
//
// Variables read (first one set wins):
//   TRAINSIM_TRACE_DIR     output folder (default "trainsim-trace"); created when missing
//   TRAINSIM_TRACE_NVTX    "1": record NVTX ranges as markers (also needs NVTX_INJECTION64_PATH,
//                          which `trainsim trace --nvtx` sets); default off
//   TRAINSIM_TRACE_WRAPPERS "1" / "0": the nccl* and cuBLAS wrappers are in LD_PRELOAD (set by
//                          `trainsim trace`); unset: whether LD_PRELOAD names libtrainsim_tracer
//   TRAINSIM_TRACE_API     "all": CUPTI API records for every driver and runtime call (default: the
//                          launches, copies and sets that external correlation needs)
//   rank:        RANK, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID, MV2_COMM_WORLD_RANK
//   local rank:  LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID,
//                MV2_COMM_WORLD_LOCAL_RANK
//   world size:  WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS, MV2_COMM_WORLD_SIZE
// (torchrun sets RANK / LOCAL_RANK / WORLD_SIZE; mpirun, srun and MVAPICH set theirs.)

#include <cstdint>
#include <functional>
#include <string>

namespace trainsim::tracer {

// Returns the value of a variable, or nullptr when it is not set.
using EnvLookup = std::function<const char*(const char*)>;
// The process environment (getenv).
EnvLookup process_environment();

struct RankInfo {
  int32_t rank = -1;        // -1: unknown
  int32_t local_rank = -1;
  int32_t world_size = -1;
};

// Reads the launcher variables above; a value that is not a non-negative integer counts as unset.
RankInfo discover_rank(const EnvLookup& env);

struct TracerOptions {
  std::string dir = "trainsim-trace";
  bool nvtx = false;
  // The nccl* and cuBLAS wrappers are in the process: TRAINSIM_TRACE_WRAPPERS (0 or 1, which
  // `trainsim trace` sets), else whether LD_PRELOAD names libtrainsim_tracer.
  bool wrappers = false;
  // TRAINSIM_TRACE_API=all: CUPTI records every driver and runtime API call instead of the launches,
  // copies and sets only (the external correlation needs one of those; the rest cost host time).
  bool all_api_records = false;
};
TracerOptions read_options(const EnvLookup& env);

// The file of one process: "rank00003.host-a.12345.trace", or "norank.host-a.12345.trace" when the
// rank is unknown. The pid keeps two processes of one rank (a launcher and its worker, or a
// restarted worker) from writing to the same file; characters other than [A-Za-z0-9._-] in the
// host name become '_'.
std::string trace_file_name(const RankInfo& rank, const std::string& hostname, uint32_t pid);

}  // namespace trainsim::tracer
