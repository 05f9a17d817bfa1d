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

struct ProgramPlan {
  // Tasks grouped by stream, program order within: stream s owns order[stream_begin[s], stream_begin[s+1]).
  std::array<uint32_t, core::STREAM_COUNT + 1> stream_begin{};
  std::vector<uint32_t> order;
  std::vector<uint32_t> stream_pos;  // per task: its position within its stream
  // Per task: COLLECTIVE, its call number on its group kind; SEND/RECV, its call number on its port.
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
