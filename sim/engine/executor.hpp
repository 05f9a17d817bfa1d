#pragma once
// The execution semantics of sim/core/workload.hpp, implemented once for every backend that prices
// communication through a CommunicationModel.
//
// How it runs. Task durations do not depend on what else runs at the same time (contention is the
// communication model's business), and each stream's order is fixed by its program (but for ready
// pools, below), so the start of every task is a max-plus function of earlier ends: no event queue
// is needed. A ready-queue sweep advances each simulated rank's streams as far as their dependencies
// allow; a rank blocked at a collective or a send/recv is resumed when the last member arrives,
// which also completes the call for every member:
//   compute   ends at ready + compute_time (sim/engine/compute_model.hpp)
//   copy      ends at ready + its uncontended time (host_model.hpp: bytes over the bottleneck of its
//             route between GPU, host memory and NVMe), or its measured duration (Task::seconds)
//   host compute (stream HOST) ends at ready + host_model.hpp's host_compute_time
//   memory    ends at ready (zero duration)
//   collective  the k-th call of a rank on a communicator matches the k-th call of every other member
//             (program order); it starts when the last member is ready and ends for all at
//             start + model.collective_time
//   send/recv the k-th send from A to B matches B's k-th receive from A (program order); both end at
//             max(ready times) + model.p2p_time
// where a task is ready when it heads its stream, its stream's previous task has ended and its
// dependencies have ended. Tasks of stream STORAGE (a checkpoint's background flush) are background
// work: they run and share links, but a rank's iteration ends with its other tasks and the breakdown
// leaves them out. The sweep touches every task once: O(tasks + dependencies) per simulated
// rank, with one cached cost lookup per collective call.
//
// Ready pools (workload.hpp, READY POOL: AxoNN's message-driven execution). The order of a pool's
// blocks depends on when inputs arrive, and the sweep computes ends out of time order, so a choice
// is made only when no input can still arrive before its time t. When a rank's COMPUTE stream
// waits for a block, it decides with its team (the ranks sharing a communicator that blocks of
// two queues call: they must issue the same blocks): when every candidate's input has arrived, the
// choice is final and the block is issued at once; otherwise it is deferred at its time t. Once
// the sweep can run nothing else, the earliest deferred decision is issued: anything not run yet
// waits, directly or not, for a deferred decision, so every input still unknown arrives at or after
// the earliest time t (ties at t go to the known input), and the sweep resumes. With a launcher,
// a deferred decision waits until the simulated clock reaches t (advance's horizon): calls in flight
// may deliver inputs before then, contention included. A block's tasks start no earlier than its
// issue, the loose tasks (posted receives) run on lanes of their own, a shared communicator's
// calls are numbered in issue order, and memory events at one instant apply in issue order. Cost:
// O(log blocks) per block on top of the sweep.
//
// Symmetry. With options.use_symmetry, an axis counts as symmetric when the workload says so
// (Workload::symmetric_axes) and translating ranks along it maps nodes onto nodes (gpus_per_node
// divides the axis's rank stride, or the axis's whole span fits in a node); otherwise the placement
// would make mirrored ranks see different costs. An axis of which each node holds q = gpus_per_node
// / stride consecutive coordinates, and whose span covers whole nodes, is symmetric with period q:
// shifts by multiples of q map nodes onto nodes (TP2 CP2 DP256 on nodes of 8: data-parallel
// coordinates 0 and 1 stand for all 256). Only ranks whose coordinate on every symmetric axis is
// below its period (0 for most axes) are simulated. A collective over symmetric axes only completes at its representative's ready
// time + cost; one that spans other axes waits for its simulated members. A send/recv to a mirrored
// rank is matched against the representative's own mirrored receive/send. The result equals the
// one without symmetry.
//
// Steady state. When Workload::steady_state is set (a pipeline schedule without a flush), each
// simulated rank's iteration runs from the start of its first COMPUTE-stream compute task to the end
// of its last COMPUTE-stream task (communication still running then overlaps the next period); the
// iteration time is the longest such span and the breakdown is taken over the critical
// rank's span. Otherwise every rank starts at 0 and the iteration time is the last end.
//
// Memory. MEMORY tasks change the rank's running allocation (device, or host for memory_space HOST)
// at their end time; events at one instant apply in program order. Peaks are taken over every
// simulated rank of a program.
//
// Asynchronous communication. With a CommunicationLauncher instead of a model (the SimGrid
// backend), a call whose members have all arrived is handed to the launcher with its start time, and
// its members wait until the launcher reports its end through Executor::complete(); advance() then
// runs what that unblocked, and the pool decisions due by the clock. Every start handed out is >=
// every end reported before it (the call's start is the last member's ready time, which follows
// what unblocked it), so a launcher can schedule calls in start order on a simulated clock. Communication tasks are busy from their
// call's start to its end. Copies go to the launcher too (launch_copy), as calls of one member, so
// that the copies of a node's GPUs can share its host links; a copy with a measured duration (trace
// replay: the contention it met is in the measurement) takes that duration in both backends.
//
// Errors. A workload in which no task can run while some remain (a deadlock: mismatched collectives
// or sends, a cycle through streams) throws core::InternalError naming the stuck tasks of the lowest
// stuck rank. So do members of one call that disagree on its op or size.

#include <cstdint>
#include <functional>
#include <memory>

#include "network/cluster.hpp"
#include "sim/core/device.hpp"
#include "sim/core/workload.hpp"
#include "sim/engine/backend.hpp"
#include "sim/engine/communication_model.hpp"
#include "sim/engine/rank_table.hpp"

namespace trainsim::engine {

// Where an asynchronous executor hands its communication calls.
class CommunicationLauncher {
 public:
  virtual ~CommunicationLauncher() = default;
  // Call `call` of meeting `meeting` (RankTable::meetings()) starts at `start`: its last member
  // arrived. `task` is one member's task (the members agree on kind, op and size). The launcher
  // must later call Executor::complete(call, end) with end >= start, outside this function.
  virtual void launch(uint32_t call, uint32_t meeting, const core::Task& task, double start) = 0;
  // COPY task `task` of rank `rank` starts at `start` (its stream and dependencies allow it); the
  // launcher calls Executor::complete(call, end) as for launch().
  virtual void launch_copy(uint32_t call, int rank, const core::Task& task, double start) = 0;
};

// A communication task of a simulated rank as a launcher will be handed it: its rank's slot in
// RankTable::ranks(), the lane that runs it (a rank runs one task per lane at a time: the lane's
// next task starts when this one's call has ended), and its meeting (RankTable::meetings(); NO_INDEX
// for a copy, a call of its rank alone).
struct CallSite {
  uint32_t slot = 0;
  uint8_t lane = 0;
  uint32_t meeting = 0;
  const core::Task* task = nullptr;
};

// The execution semantics above as a state machine that an event loop can drive.
class Executor {
 public:
  // Prices communication with `model`: one advance() runs the whole workload.
  Executor(const core::Workload& workload, const network::ClusterConfig& cluster, const core::Profile& profile,
           const SimulationOptions& options, CommunicationModel& model);
  // Hands communication to `launcher`. REQUIRES: every argument outlives the executor.
  Executor(const core::Workload& workload, const network::ClusterConfig& cluster, const core::Profile& profile,
           const SimulationOptions& options, CommunicationLauncher& launcher);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs every task that can run now, and issues the deferred ready-pool decisions due at or before
  // `horizon`, earliest first (with a launcher: the simulated clock, after every completion up to
  // it has been reported; with a model: infinity).
  void advance(double horizon);
  // The time of the earliest deferred ready-pool decision, or infinity: a launcher must call
  // advance() again when its clock reaches it, even if no call completes.
  double next_decision();
  // Ends a launched call for all its members at `end`; call advance() afterwards.
  void complete(uint32_t call, double end);
  // Whether every task of every simulated rank has run.
  bool finished() const;
  // Tasks of the simulated ranks not run yet, and all of them: the run's progress.
  size_t unfinished() const;
  size_t total_tasks() const;
  // Throws core::InternalError naming the stuck tasks of the lowest rank with tasks left.
  [[noreturn]] void report_deadlock() const;
  // The result (iteration time, breakdown, memory, events, timeline). REQUIRES: finished().
  SimulationResult result();
  const RankTable& table() const;
  // Calls `visit` with every task of the simulated ranks that a launcher would be handed (collectives,
  // sends, receives, and copies without a measured duration), slot by slot in program order,
  // before or during a run.
  void for_each_call_site(const std::function<void(const CallSite&)>& visit) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// REQUIRES: workload.validate() passes, workload.layout.world_size() == cluster.world_size(), and the
// GPU supports the workload's precision.
SimulationResult execute(const core::Workload& workload, const network::ClusterConfig& cluster,
                         const core::Profile& profile, const SimulationOptions& options, CommunicationModel& model);

}  // namespace trainsim::engine
