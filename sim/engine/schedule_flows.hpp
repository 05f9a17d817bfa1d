#pragma once
// The one executor of collective schedules on the SimGrid platform, shared by `trainsim collective`
// (sim/engine/collective_simulation.hpp) and the SimGrid backend: a network::TransferSchedule turned
// into the flows of a fidelity, and those flows' completion times into the collective's time.
// Internal to sim/engine; no SimGrid type crosses this header.
//
//   step   every transfer is a flow, with the schedule's dependencies; the collective ends with its
//          last flow
//   flow   one flow per algorithm edge (network::flow_edges) carrying all its bytes, all started
//          together, so that the bandwidth share of every edge comes from the simulated network;
//          the latency is the algorithm's per-step latencies along its critical path (phase after
//          phase), as the closed form of network/collective_cost.hpp counts them: a flow pays its
//          route's latency when it starts, and the rest of that total after it ends
// Routes carry the per-step software latency of their scope (the profile's intra- or inter-node
// step_latency), paid where a step starts: on routes that leave a GPU, not on those that leave the
// in-network switch.

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "network/schedule.hpp"
#include "network/topology.hpp"
#include "sim/core/device.hpp"
#include "sim/core/units.hpp"
#include "sim/engine/backend.hpp"
#include "sim/engine/simgrid_platform.hpp"

namespace trainsim::engine {

// Declares routes on the platform on first use and remembers their links. Routes between GPUs
// depend only on the pair; a route to or from the in-network switch also on where the group
// reduces (the node's NVSwitch for a group inside one node, else the first network switch), and is
// declared again when that changes.
class RoutePlanner {
 public:
  // REQUIRES: the arguments outlive the planner; `platform` is bound to `topology`.
  RoutePlanner(const network::Topology& topology, const core::NetworkProfile& profile, SimgridPlatform& platform);

  // The links of the route between two hosts (GPU indices or platform.switch_host()) for a group
  // that lies in one node or not.
  const std::vector<uint32_t>& links(int from, int to, bool one_node_group);
  // Whether the route between two hosts is intra-node (NVLink, the intra-node profile): both GPUs
  // on one node, or the NVSwitch of a group that lies in one node.
  bool intra_node(int from, int to, bool one_node_group) const;
  const network::Topology& topology() const { return topology_; }
  const core::NetworkProfile& profile() const { return profile_; }

 private:
  const network::Topology& topology_;
  const core::NetworkProfile& profile_;
  SimgridPlatform& platform_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> routes_;  // by route key (see links())
  std::unordered_map<uint64_t, uint64_t> declared_;             // by host pair: the route key declared
};

// The flows of one collective on one group, and how their completion times make its time.
struct ScheduleFlows {
  FlowBatch batch;
  std::vector<double> tail_s;  // per flow: latency still due after it completes (`flow` fidelity)
  std::vector<std::pair<uint32_t, double>> link_bytes;  // bytes each topology link carries per run
                                                       // of these flows (links that carry none omitted)
};

// Bytes carried per link by a set of flows, and the most utilized links over a time.
class LinkLoads {
 public:
  explicit LinkLoads(size_t links) : bytes_(links, 0.0) {}

  std::vector<double>* bytes() { return &bytes_; }
  // Adds one run of `flows`.
  void add(const ScheduleFlows& flows) {
    for (const auto& [link, bytes] : flows.link_bytes) bytes_[link] += bytes;
  }
  // The `count` most utilized links over `time` (ties broken by name, so the output is reproducible).
  std::vector<LinkLoad> top(size_t count, core::Seconds time, const network::Topology& topology,
                            const SimgridPlatform& platform) const;

 private:
  std::vector<double> bytes_;
};

// The non-zero entries of a dense per-link byte count, for ScheduleFlows::link_bytes.
std::vector<std::pair<uint32_t, double>> nonzero_links(const std::vector<double>& bytes);

// The flows of `op` with `algorithm` on a per-rank buffer of `size` bytes among `members` (the
// group's GPUs, sorted): at STEP fidelity network::make_schedule's transfers with their dependencies,
// at FLOW fidelity network::flow_edges (O(edges), no step schedule). When `link_bytes` is not null,
// adds the bytes each flow carries to its route's links. Where the profile's efficiency depends on
// the size (a calibrated curve), a flow carries its bytes scaled by the scope's constant efficiency
// over the curve's at `size`: the platform's links run at the constant efficiency, so the flow
// takes the time the curve gives (link_bytes keeps the true bytes). REQUIRES: fidelity is STEP or FLOW; the
// algorithm is in network::algorithms_for(op, group).
ScheduleFlows schedule_flows(core::CollectiveOp op, network::Algorithm algorithm, core::Bytes size, Fidelity fidelity,
                             const std::vector<int>& members, RoutePlanner& planner, SimgridPlatform& platform,
                             std::vector<double>* link_bytes);

// Appends `part`'s flows to `into` as flows of the same batch (dependencies renumbered), with
// their tails; link_bytes is left alone.
void append(ScheduleFlows& into, const ScheduleFlows& part);

// The collective's time: the latest completion plus its tail. REQUIRES: done.size() equals the
// batch's flow count.
core::Seconds schedule_time(const ScheduleFlows& flows, const std::vector<core::Seconds>& done);

}  // namespace trainsim::engine
