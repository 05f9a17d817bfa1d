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
    const ScheduleFlows flows =
        schedule_flows(request.op, r.algorithm, size, request.fidelity, group.ranks, planner, platform, loads.bytes());
    r.time = schedule_time(flows, platform.run(flows.batch));
    r.flows = flows.batch.flows.size();
    r.top_links = loads.top(request.top_links, r.time, topology, platform);
    fill_bandwidths(r, request.op, group.size());
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace trainsim::engine
