#include "sim/engine/collective_simulation.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "network/topology.hpp"
#include "sim/core/error.hpp"
#include "sim/engine/schedule_flows.hpp"
#include "sim/engine/simgrid_platform.hpp"

namespace trainsim::engine {
namespace {

using core::Bytes;
using core::Seconds;

std::vector<int> members(const CollectiveRequest& request, const network::Topology& topology) {
  std::vector<int> ranks = request.ranks;
  if (ranks.empty()) {
    ranks.resize(static_cast<size_t>(topology.gpu_count()));
    for (int r = 0; r < topology.gpu_count(); ++r) ranks[static_cast<size_t>(r)] = r;
  }
  TRAINSIM_CHECK(std::is_sorted(ranks.begin(), ranks.end()) &&
                     std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end(),
                 "the members of a collective are sorted and distinct");
  TRAINSIM_CHECK(ranks.front() >= 0 && ranks.back() < topology.gpu_count(),
                 fmt::format("members {}..{} outside the cluster of {} GPUs", ranks.front(), ranks.back(),
                             topology.gpu_count()));
  return ranks;
}

// Whether, at flow fidelity, the first node's intra-node flows and the first member's rail's
// inter-node flows stand for all of `flows` (collective_simulation.hpp); if so, leaves only those.
bool keep_one_node_and_rail(ScheduleFlows& flows, const std::vector<int>& members, const network::Topology& topology,
                            int switch_host) {
  if (!topology.separate_rails() || !flows.batch.deps.empty()) return false;
  const network::ClusterConfig& cluster = topology.cluster();
  // The same local GPUs (hence rails) on every node of the group.
  std::vector<std::vector<int>> locals(static_cast<size_t>(cluster.nodes));
  for (int r : members) locals[static_cast<size_t>(topology.node_of(r))].push_back(topology.rail_of(r));
  const std::vector<int>* pattern = nullptr;
  for (const std::vector<int>& l : locals) {
    if (l.empty()) continue;
    if (pattern == nullptr) pattern = &l;
    if (l != *pattern) return false;
  }
  const int first_node = topology.node_of(members.front());
  const int first_rail = topology.rail_of(members.front());
  std::vector<size_t> per_node(static_cast<size_t>(cluster.nodes), 0);
  std::vector<size_t> per_rail(static_cast<size_t>(cluster.gpus_per_node), 0);
  for (const FlowSpec& f : flows.batch.flows) {
    if (f.src == switch_host || f.dst == switch_host) return false;
    const int node = topology.node_of(f.src);
    if (node == topology.node_of(f.dst)) {
      ++per_node[static_cast<size_t>(node)];
    } else if (topology.rail_of(f.src) == topology.rail_of(f.dst)) {
      ++per_rail[static_cast<size_t>(topology.rail_of(f.src))];
    } else {
      return false;  // crosses rails
    }
  }
  for (size_t n = 0; n < per_node.size(); ++n) {
    if (!locals[n].empty() && per_node[n] != per_node[static_cast<size_t>(first_node)]) return false;
  }
  for (int l : *pattern) {
    if (per_rail[static_cast<size_t>(l)] != per_rail[static_cast<size_t>(first_rail)]) return false;
  }
  ScheduleFlows kept;
  for (size_t i = 0; i < flows.batch.flows.size(); ++i) {
    const FlowSpec& f = flows.batch.flows[i];
    const bool in_first_node = topology.node_of(f.src) == first_node && topology.node_of(f.dst) == first_node;
    const bool on_first_rail = topology.node_of(f.src) != topology.node_of(f.dst) && topology.rail_of(f.src) == first_rail;
    if (!in_first_node && !on_first_rail) continue;
    kept.batch.flows.push_back(f);
    kept.tail_s.push_back(flows.tail_s[i]);
  }
  kept.link_bytes = std::move(flows.link_bytes);
  flows = std::move(kept);
  return true;
}

void fill_bandwidths(CollectiveResult& r, core::CollectiveOp op, int ranks) {
  r.algbw = r.time.value() > 0 ? r.size.value() / r.time.value() : 0.0;
  r.busbw = r.algbw * core::bus_bandwidth_factor(op, ranks);
}

}  // namespace

std::vector<CollectiveResult> simulate_collective(const CollectiveRequest& request,
                                                  const network::ClusterConfig& cluster,
                                                  const core::Profile& profile) {
  const network::Topology topology = network::Topology::build(cluster);
  network::GroupView group;
  group.ranks = members(request, topology);
  group.topology = &topology;
  const core::NetworkProfile& net = profile.network;

  std::vector<CollectiveResult> results;
  results.reserve(request.sizes.size());
  if (request.fidelity == Fidelity::ANALYTIC || group.size() <= 1) {
    const network::GroupPlacement placement = network::GroupPlacement::of(group.ranks, cluster);
    for (Bytes size : request.sizes) {
      CollectiveResult r;
      r.size = size;
      const network::CollectiveCost cost =
          network::collective_cost(request.op, size, placement, cluster, net, request.algorithm);
      r.time = cost.time;
      r.algorithm = cost.algorithm;
      fill_bandwidths(r, request.op, group.size());
      results.push_back(std::move(r));
    }
    return results;
  }

  // Every size in one engine, one after the other: each is measured on the shared clock from its
  // own start (SimGrid allows one Engine per process).
  SimgridPlatform& platform = SimgridPlatform::bind(topology, net);
  RoutePlanner planner(topology, net, platform);
  for (Bytes size : request.sizes) {
    CollectiveResult r;
    r.size = size;
    r.algorithm = request.algorithm == network::Algorithm::AUTO
                      ? network::choose_algorithm(request.op, size, group, cluster, net)
                      : request.algorithm;
    LinkLoads loads(topology.links().size());
    ScheduleFlows flows =
        schedule_flows(request.op, r.algorithm, size, request.fidelity, group.ranks, planner, platform, loads.bytes());
    if (request.use_symmetry && request.fidelity == Fidelity::FLOW) {
      keep_one_node_and_rail(flows, group.ranks, topology, platform.switch_host());
    }
    r.time = schedule_time(flows, platform.run(flows.batch));
    r.flows = flows.batch.flows.size();
    r.top_links = loads.top(request.top_links, r.time, topology, platform);
    fill_bandwidths(r, request.op, group.size());
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace trainsim::engine
