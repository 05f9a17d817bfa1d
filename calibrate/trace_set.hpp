#pragma once
// The per-rank trace files of one traced run, read together: what calibration (profile_fit.hpp) and
// replay (replay_workload.hpp) need to know across ranks.
//
//  - Ranks: Header.rank; when no file names its rank, files are ranks 0, 1, ... in the order given.
//    World size: the largest Header.world_size, at least the number of ranks seen.
//  - Hosts: Header.hostname (files without one share the host ""). A communicator is intra-node
//    when all its ranks share a host.
//  - Collectives: per rank, the records of the most exact source present (the NCCL profiler plugin,
//    then Kineto's NCCL kernels, then the nccl* wrapper, as `trace summary` does), sorted by start.
//    Wrapper records are timed by the kernels they launched (ExternalCorrelation), or by the call
//    itself when none is found. The members of a communicator are, in this order: the record's
//    group_ranks (Kineto's "Process Group Ranks"); the ranks whose traces hold collectives of the
//    same comm_hash, when there are comm_size of them; every rank when comm_size is the world
//    size; this rank alone when comm_size is 1. A collective whose members cannot be told, or whose
//    op is unknown, is counted in `unresolved_collectives` and left out.
//
// Example:
//   TraceSet set = TraceSet::load({"traces/"});
//   for (const TracedRank& r : set.ranks()) for (const TracedCollective& c : r.collectives) ...

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/trace_io.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::calibrate {

struct TracedCollective {
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;
  double bytes = 0;         // nccl-tests' size: the per-rank buffer
  std::vector<int> group;   // global ranks of the communicator, ascending
  uint64_t stream = 0;      // the stream it ran on (CUDA stream id or handle), as recorded
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

struct TracedRank {
  int rank = 0;
  std::string host;
  size_t file = 0;                            // index into TraceSet::files()
  std::vector<TracedCollective> collectives;  // ascending start
  uint64_t unresolved_collectives = 0;
};

class TraceSet {
 public:
  // Reads the trace files of `paths` (files, or folders of *.trace files; core::expand_trace_paths).
  // Throws core::InputError naming the file for an unreadable trace, two files of one rank, or a
  // rank outside the world size. A truncated trace is read up to its last whole record and named in
  // warnings().
  static TraceSet load(const std::vector<std::string>& paths);
  // The same for traces already in memory (tests); paths name them in errors.
  explicit TraceSet(std::vector<core::TraceFile> files);

  const std::vector<core::TraceFile>& files() const { return files_; }
  // The ranks that have a trace, ascending.
  const std::vector<TracedRank>& ranks() const { return ranks_; }
  int world_size() const { return world_size_; }
  // True when every rank of the world has a trace.
  bool complete() const { return static_cast<int>(ranks_.size()) == world_size_; }
  // The traced rank `rank`, or nullptr.
  const TracedRank* find(int rank) const;
  // The host of a traced rank; "" for a rank without a trace.
  std::string host_of(int rank) const;
  // The name of the first GPU the traces describe (Header.devices, then Device records); "" if none.
  std::string device_name() const;
  // One line per truncated trace (core::truncation_warning): the commands print them on stderr.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::vector<std::string> warnings_;
  std::vector<core::TraceFile> files_;
  std::vector<TracedRank> ranks_;
  int world_size_ = 0;
};

}  // namespace trainsim::calibrate
