#pragma once
// What one MPI rank of `trainsim emulate` (docs/emulate.md) executes: its program of the Workload IR
// turned into timed waits, real collectives and real point-to-point messages. Plain C++ (no MPI):
// sim/cli/emulate_mpi.cpp runs the plan; this header builds and checks it, so that the mapping of
// the IR onto MPI is tested without MPI.
//
// Mapping (workload.hpp's execution semantics):
//  - COMPUTE and COPY tasks are WAITs of the duration the engine gives them (program_plan.hpp:
//    compute model, host model, or the task's measured seconds), times scale_compute.
//  - MEMORY tasks are NOOPs (accounted in the plan, nothing executed).
//  - COLLECTIVE tasks run on a communicator per group (core::GroupKind::ranks_of): every member
//    splits MPI_COMM_WORLD with color = the group's lowest rank and key = its position. `seq` is
//    the task's call number on its group kind; the executor issues a group's collectives in seq
//    order (NCCL order), whatever stream they are on.
//  - SEND/RECV tasks resolve their peer (layout.peer) to a global rank and a channel per
//    (direction, peer rank, tag); `seq` is the call number on that channel and the executor issues
//    a channel's calls in seq order, which with MPI's non-overtaking rule keeps the IR's FIFO
//    channels per (sender, receiver, tag).
//  - bytes are scaled by scale_bytes (rounded up; 0 stays 0).
//  - A ready pool (workload.hpp, READY POOL) runs in its default order, program order: the plan
//    has no run-time choice among its blocks (the simulators make it).

#include <cstdint>
#include <string>
#include <vector>

#include "network/cluster.hpp"
#include "sim/core/device.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::engine {

enum class EmulatedKind : uint8_t { WAIT, COLLECTIVE, SEND, RECV, NOOP };

struct EmulatedTask {
  EmulatedKind kind = EmulatedKind::NOOP;
  core::Stream stream = core::Stream::COMPUTE;
  uint32_t task = 0;          // index in the rank's program
  double seconds = 0;         // WAIT: scaled duration
  uint64_t bytes = 0;         // COLLECTIVE, SEND, RECV: scaled size (core::Task::bytes' meaning)
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;
  int group = -1;             // COLLECTIVE: index into Workload::groups and EmulationPlan::groups
  int peer = -1;              // SEND/RECV: global rank of the peer
  int tag = 0;                // SEND/RECV: the IR's tag
  uint32_t channel = 0;       // SEND/RECV: index into EmulationPlan::channels
  uint32_t seq = 0;           // call number on its group kind (COLLECTIVE) or channel (SEND/RECV)
  std::vector<uint32_t> deps; // indices of earlier tasks (the IR's explicit dependencies)
};

// This rank's communicator of one group kind. color -1: the rank is not a member (it still takes
// part in MPI_Comm_split, with MPI_UNDEFINED).
struct EmulatedGroup {
  std::string name;
  int color = -1;
  int key = -1;
  std::vector<int> ranks;  // global ranks, coordinate order
};

struct EmulatedChannel {
  bool send = true;
  int peer = -1;
  int tag = 0;
};

struct EmulationOptions {
  double scale_compute = 1;  // > 0
  double scale_bytes = 1;    // > 0
};

struct EmulationPlan {
  int rank = 0;
  int world_size = 1;
  std::vector<EmulatedTask> tasks;  // program order
  std::vector<EmulatedGroup> groups;  // one per Workload::groups entry
  std::vector<EmulatedChannel> channels;
  double wait_seconds = 0;  // sum of WAIT durations (scaled)
  uint64_t noop_count = 0;  // MEMORY tasks
};

// Throws InputError (file `file`, pointer "") unless `mpi_ranks` equals the workload's world size:
// too many or too few MPI ranks for the scenario.
void check_emulation_world(const core::Workload& workload, int mpi_ranks, const std::string& file);

// The plan of `rank`. Throws InputError (file `file`) when a group the rank's program calls a
// collective on cannot be mapped onto a communicator: the rank is not a member of it, or two
// members disagree on the group's ranks; InputError for non-positive scales.
// REQUIRES: 0 <= rank < workload.layout.world_size().
EmulationPlan plan_emulation(const core::Workload& workload, int rank, const network::ClusterConfig& cluster,
                             const core::DeviceProfile& device, const EmulationOptions& options,
                             const std::string& file);

}  // namespace trainsim::engine

namespace trainsim::engine {

// The job as the emulator runs it, for the simulator to predict: every COMPUTE and COPY task of
// `workload` gets Task::seconds = its duration (program_plan.hpp) times scale_compute, every
// COLLECTIVE, SEND and RECV its bytes times scale_bytes (rounded up as the emulator does). A HOST
// stream compute task keeps its host-model time unscaled in the simulators (they ignore seconds
// there); the emulator scales it.
core::Workload scaled_workload(const core::Workload& workload, const network::ClusterConfig& cluster,
                               const core::DeviceProfile& device, const EmulationOptions& options);

}  // namespace trainsim::engine
