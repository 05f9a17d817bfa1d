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
//
// Scale reduction (a Reduction: the MPI processes stand for an EmulationSubset of the ranks,
// emulation_subset.hpp). A member of a call is present (an MPI process runs it), stood in for (an
// absent rank that a present rank mirrors: it makes the call when its stand-in makes its own), or
// unmatched (absent with no stand-in: another pipeline stage). Then:
//  - a collective whose members are all present runs as above (measured);
//  - a collective with k >= 2 present of its n members runs on the k present members, with its size
//    chosen so that each present rank sends what it would in the full algorithm: bytes x
//    busbw_factor(op, n) / busbw_factor(op, k) (nccl-tests' bus-bandwidth factors,
//    core::bus_bandwidth_factor) (measured, on the present members' transport);
//  - a collective with one present member is MODELLED: a timed wait of the communication model's
//    time for the whole group (CommunicationModel::collective_time on the group's placement);
//  - a send/recv to a present peer runs as above; to a stood-in peer it goes to the stand-in, which
//    receives it as the mirror image of its own traffic (measured; a distinct MPI tag per axis and
//    offset keeps these channels apart); to an absent peer that stands in for itself (the mirror of
//    the call is the call: a span of 1 on that axis) or to an unmatched peer it is MODELLED: a
//    timed wait of CommunicationModel::p2p_time;
//  - a call with unmatched members does not start before the prediction says they arrive
//    (`not_before`: the latest of their predicted ready times, PredictedTimes::ready, for their
//    matching call: the same group kind and call number, or the same channel and message number).
//    Stood-in members arrive with their stand-ins, so a call with only those waits for no prediction.
//  - A ready pool (workload.hpp, READY POOL) runs in its default order, program order: the plan
//    has no run-time choice among its blocks (the simulators make it).

#include <cstdint>
#include <string>
#include <vector>

#include "network/cluster.hpp"
#include "sim/core/device.hpp"
#include "sim/core/workload.hpp"
#include "sim/engine/communication_model.hpp"
#include "sim/engine/emulation_subset.hpp"
#include "sim/engine/predicted_times.hpp"

namespace trainsim::engine {

enum class EmulatedKind : uint8_t { WAIT, COLLECTIVE, SEND, RECV, NOOP };

struct EmulatedTask {
  EmulatedKind kind = EmulatedKind::NOOP;
  core::Stream stream = core::Stream::COMPUTE;
  uint32_t task = 0;          // index in the rank's program
  bool modelled = false;      // COLLECTIVE, SEND, RECV: a timed wait of `seconds` instead of MPI
  double seconds = 0;         // WAIT: scaled duration; modelled: the communication model's time
  double not_before = 0;      // seconds after the iteration's start before which it does not start
  uint64_t bytes = 0;         // COLLECTIVE, SEND, RECV: scaled size (core::Task::bytes' meaning) of what
                              // runs (a collective on some of its members: resized, above)
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;
  int group = -1;             // COLLECTIVE: index into Workload::groups and EmulationPlan::groups
  int peer = -1;              // SEND/RECV: global rank of the IR's peer
  int stand_in = -1;          // SEND/RECV, not modelled: global rank of the process exchanged with
  int tag = 0;                // SEND/RECV: the IR's tag
  int mpi_tag = 0;            // SEND/RECV, not modelled: the tag on the wire
  uint32_t channel = 0;       // SEND/RECV, not modelled: index into EmulationPlan::channels
  uint32_t seq = 0;           // call number on its group kind (COLLECTIVE) or channel (SEND/RECV)
  std::vector<uint32_t> deps; // indices of earlier tasks (the IR's explicit dependencies)
};

// This rank's communicator of one group kind. color -1: the rank is not a member, or is its group's
// only present member (it still takes part in MPI_Comm_split, with MPI_UNDEFINED).
struct EmulatedGroup {
  std::string name;
  int color = -1;
  int key = -1;
  std::vector<int> ranks;  // global ranks that run its calls (the present members), coordinate order
  int members = 0;         // the group's size in the job
};

struct EmulatedChannel {
  bool send = true;
  int peer = -1;  // global rank of the process at the other end
  int tag = 0;    // the MPI tag
};

// How a reduced emulation completes calls with absent members (above). REQUIRES: `predicted` holds
// the unmatched partners of the planned rank (emulation_partners) and the rank itself.
struct Reduction {
  const EmulationSubset& subset;
  const PredictedTimes& predicted;
  CommunicationModel& model;
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
  uint64_t measured_calls = 0;  // COLLECTIVE, SEND, RECV run through MPI
  uint64_t modelled_calls = 0;  // completed as timed waits
  int max_mpi_tag = 0;
};

// Throws InputError (file "--scale-compute" or "--scale-bytes") unless both factors are in (0, 1]:
// they shrink a scenario to the machine it is emulated on.
void check_emulation_options(const EmulationOptions& options);

// Throws InputError (file `file`, pointer "") unless `mpi_ranks` equals the number of ranks of
// `subset`: too many or too few MPI ranks for the scenario (and --ranks).
void check_emulation_world(const EmulationSubset& subset, int mpi_ranks, const std::string& file);

// The plan of `rank`. Throws InputError (file `file`) when a group the rank's program calls a
// collective on cannot be mapped onto a communicator: the rank is not a member of it, or two
// members disagree on the group's ranks; InputError for non-positive scales. Without a reduction
// every rank is present.
// REQUIRES: 0 <= rank < workload.layout.world_size(); with a reduction, rank is present in it.
EmulationPlan plan_emulation(const core::Workload& workload, int rank, const network::ClusterConfig& cluster,
                             const core::DeviceProfile& device, const EmulationOptions& options,
                             const std::string& file, const Reduction* reduction = nullptr);

// The absent ranks whose predicted times plan_emulation needs for `rank`: the unmatched members of
// its collectives and its unmatched send/recv peers, ascending. Empty when every rank is present.
std::vector<int> emulation_partners(const core::Workload& workload, const EmulationSubset& subset, int rank);

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
