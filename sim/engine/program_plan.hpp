#pragma once
// What the executor precomputes once per program template, shared by every rank that runs it:
// per-stream task order, the match number of each communication call, and the durations that do not
// depend on the rank. Internal to sim/engine.

#include <array>
#include <cstdint>
#include <vector>

#include "network/cluster.hpp"
#include "sim/core/device.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::engine {

inline constexpr uint32_t NO_INDEX = UINT32_MAX;

// A send or receive endpoint of a program: direction, peer and tag, the peer offset normalized to
// [0, size(axis)) so that every spelling of one peer is one port. The tag is part of the port:
// sends and receives match in order per (sender, receiver, tag) channel (workload.hpp), which
// matters when two kinds of traffic reach one peer (two pipeline stages: next and previous are the
// same rank).
struct Port {
  bool send = true;
  core::Axis axis = core::Axis::PIPELINE;
  int offset = 0;
  uint8_t tag = 0;
};

// What the executor advances one task at a time: lane s < STREAM_COUNT is stream s; lane
// STREAM_COUNT + s holds the loose tasks of a ready pool on stream s (workload.hpp, READY POOL).
inline constexpr size_t LANE_COUNT = 2 * core::STREAM_COUNT;

// A program's ready pool as the executor runs it (empty without one).
struct PoolPlan {
  size_t blocks = 0;
  // The tasks of block b on stream s, program order: tasks[at[b * STREAM_COUNT + s], at[b * STREAM_COUNT + s + 1]).
  std::vector<uint32_t> at;
  std::vector<uint32_t> tasks;
  std::vector<std::vector<uint32_t>> queues;  // per queue: its blocks, program order
  std::vector<uint32_t> block_size;           // per block: its tasks
  std::vector<uint32_t> index_in_block;       // per task of the pool's range: its place in its block
  // Group kinds called by blocks of more than one queue, ascending: their calls in blocks are
  // numbered in issue order, and their members decide together.
  std::vector<uint16_t> shared_groups;
  // calls[b * shared_groups.size() + k]: block b's calls on shared_groups[k].
  std::vector<uint32_t> calls;
  std::vector<uint32_t> calls_before;  // per shared group: its calls before the pool
  // Per task of the pool's range, for calls on a shared group: k (else NO_INDEX) and the call's
  // number among its block's calls on that group.
  std::vector<uint32_t> shared_of;
  std::vector<uint32_t> seq_in_block;

  bool empty() const { return blocks == 0; }
};

struct ProgramPlan {
  // Tasks grouped by lane, program order within: lane l owns order[lane_begin[l], lane_begin[l+1]).
  // A stream lane of a program with a ready pool holds the tasks before the pool (the first
  // pool_at[s]) and after it; the executor runs the issued blocks' tasks between them.
  std::array<uint32_t, LANE_COUNT + 1> lane_begin{};
  std::vector<uint32_t> order;
  std::vector<uint8_t> lane;       // per task
  std::vector<uint8_t> lanes;      // the lanes that hold tasks, ascending
  std::array<uint32_t, core::STREAM_COUNT> pool_at{};     // per stream: its tasks before the pool
  std::array<uint32_t, core::STREAM_COUNT> pool_tasks{};  // per stream: its tasks in the pool's blocks
  PoolPlan pool;
  // Per task: COLLECTIVE, its call number on its group kind; SEND/RECV, its call number on its port
  // (program order: in a ready pool, the order of its default order; PoolPlan has the issue-order
  // numbers of shared groups).
  std::vector<uint32_t> seq;
  std::vector<uint16_t> port;        // per task: SEND/RECV port index into `ports`
  std::vector<Port> ports;
  std::vector<uint16_t> group_kinds;  // group kinds the program calls, ascending
  std::vector<uint32_t> memory_tasks;  // MEMORY tasks, program order
  std::vector<double> duration;      // per task, seconds: compute, copy and memory; 0 for communication
};

// Durations: GPU compute from the compute model, HOST-stream compute and copies from the host model
// (host_model.hpp; a copy's uncontended time: the SimGrid backend runs copies as flows instead).
// REQUIRES: the cluster's GPU supports workload.precision when the program has compute tasks.
ProgramPlan plan_program(const core::Program& program, const core::Workload& workload,
                         const network::ClusterConfig& cluster, const core::DeviceProfile& device);

}  // namespace trainsim::engine
