#include "sim/engine/collective_simulation.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <unordered_map>

#include "network/topology.hpp"
#include "sim/core/error.hpp"
#include "sim/engine/simgrid_platform.hpp"

namespace trainsim::engine {
namespace {

using core::Bytes;
using core::Seconds;

// Where the endpoints of a schedule sit on the platform, and the links of each route used, kept for
// the link statistics. A route's software latency is the per-step latency of its scope (the
// profile's intra- or inter-node step_latency), paid where the step starts: on routes that leave a
// GPU, not on those that leave the in-network switch.
class RoutePlanner {
 public:
  RoutePlanner(const network::Topology& topology, const network::GroupView& group, const core::NetworkProfile& profile,
               SimgridPlatform& platform)
      : topology_(topology), group_(group), profile_(profile), platform_(platform) {
    const int first_node = topology.node_of(group.ranks.front());
    one_node_ = std::all_of(group.ranks.begin(), group.ranks.end(),
                            [&](int r) { return topology.node_of(r) == first_node; });
  }

  int host_of(int32_t endpoint) const {
    return endpoint == network::IN_NETWORK ? platform_.switch_host() : group_.ranks.at(static_cast<size_t>(endpoint));
  }

  // Declares the route on the platform the first time a pair is seen; returns its links.
  const std::vector<uint32_t>& links(int from, int to) {
    const uint64_t key = static_cast<uint64_t>(from) * static_cast<uint64_t>(platform_.switch_host() + 1) +
                         static_cast<uint64_t>(to);
    auto [it, inserted] = routes_.try_emplace(key);
    if (!inserted) return it->second;
    std::vector<uint32_t>& out = it->second;
    // The in-network endpoint is the node's NVSwitch (NVLS) for a group inside one node, else the
    // first network switch (SHARP, SwitchML).
    const network::Aggregator where = one_node_ ? network::Aggregator::NVSWITCH : network::Aggregator::NETWORK;
    const Seconds gpu_step = (one_node_ ? profile_.intra_node : profile_.inter_node).step_latency;
    Seconds software;
    if (from == platform_.switch_host()) {
      topology_.route_to_aggregator(to, where, false, out);
    } else if (to == platform_.switch_host()) {
      topology_.route_to_aggregator(from, where, true, out);
      software = gpu_step;
    } else {
      topology_.route(from, to, out);
      const bool same_node = topology_.node_of(from) == topology_.node_of(to);
      software = (same_node ? profile_.intra_node : profile_.inter_node).step_latency;
    }
    platform_.set_route(from, to, out, software);
    return out;
  }

 private:
  const network::Topology& topology_;
  const network::GroupView& group_;
  const core::NetworkProfile& profile_;
  SimgridPlatform& platform_;
  bool one_node_ = true;
  std::unordered_map<uint64_t, std::vector<uint32_t>> routes_;
};

// Bytes carried per link by a set of flows, and the most utilized links over `time`.
class LinkLoads {
 public:
  explicit LinkLoads(size_t links) : bytes_(links, 0.0) {}

  void add(const std::vector<uint32_t>& route, double bytes) {
    for (uint32_t l : route) bytes_[l] += bytes;
  }

  std::vector<LinkLoad> top(size_t count, Seconds time, const network::Topology& topology,
                            const SimgridPlatform& platform) const {
    std::vector<LinkLoad> loads;
    for (uint32_t l = 0; l < bytes_.size(); ++l) {
      if (bytes_[l] <= 0) continue;
      const double capacity = platform.capacity(l).value() * time.value();
      loads.push_back({topology.links()[l].name, bytes_[l], capacity > 0 ? bytes_[l] / capacity : 0.0});
    }
    // Ties (common on symmetric fabrics) broken by name, so that the output is reproducible.
    auto more_loaded = [](const LinkLoad& a, const LinkLoad& b) {
      if (a.utilization != b.utilization) return a.utilization > b.utilization;
      return a.link < b.link;
    };
    const size_t keep = std::min(count, loads.size());
    std::partial_sort(loads.begin(), loads.begin() + static_cast<std::ptrdiff_t>(keep), loads.end(), more_loaded);
    loads.resize(keep);
    return loads;
  }

 private:
  std::vector<double> bytes_;
};

// `step`: every transfer of the schedule is a flow, with the schedule's dependencies.
Seconds run_step(const network::TransferSchedule& schedule, RoutePlanner& planner, SimgridPlatform& platform,
                 LinkLoads& loads, uint64_t& flows) {
  FlowBatch batch;
  batch.deps = schedule.deps;
  batch.flows.reserve(schedule.transfers.size());
  for (const network::Transfer& t : schedule.transfers) {
    const int src = planner.host_of(t.src);
    const int dst = planner.host_of(t.dst);
    loads.add(planner.links(src, dst), t.bytes);
    batch.flows.push_back({src, dst, t.bytes, t.dep_begin, t.dep_count});
  }
  const std::vector<Seconds> done = platform.run(batch);
  flows = batch.flows.size();
  return done.empty() ? Seconds(0) : *std::max_element(done.begin(), done.end());
}

// `flow`: one flow per edge with all of its bytes, started together. The flow pays its route's
// latency once; the edge's other steps each add it again after the flow ends.
Seconds run_flow(const network::TransferSchedule& schedule, RoutePlanner& planner, SimgridPlatform& platform,
                 LinkLoads& loads, uint64_t& flows) {
  const std::vector<network::FlowEdge> edges = network::flow_plan(schedule);
  FlowBatch batch;
  batch.flows.reserve(edges.size());
  for (const network::FlowEdge& e : edges) {
    const int src = planner.host_of(e.src);
    const int dst = planner.host_of(e.dst);
    loads.add(planner.links(src, dst), e.bytes);
    batch.flows.push_back({src, dst, e.bytes, 0, 0});
  }
  const std::vector<Seconds> done = platform.run(batch);
  Seconds end;
  for (size_t i = 0; i < edges.size(); ++i) {
    const FlowSpec& f = batch.flows[i];
    const double later_steps = edges[i].steps > 1 ? edges[i].steps - 1.0 : 0.0;
    end = std::max(end, done[i] + later_steps * platform.route_latency(f.src, f.dst));
  }
  flows = batch.flows.size();
  return end;
}

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
  RoutePlanner planner(topology, group, net, platform);
  for (Bytes size : request.sizes) {
    CollectiveResult r;
    r.size = size;
    r.algorithm = request.algorithm == network::Algorithm::AUTO
                      ? network::choose_algorithm(request.op, size, group, cluster, net)
                      : request.algorithm;
    const network::TransferSchedule schedule = network::make_schedule(request.op, r.algorithm, size, group);
    LinkLoads loads(topology.links().size());
    r.time = request.fidelity == Fidelity::STEP ? run_step(schedule, planner, platform, loads, r.flows)
                                                : run_flow(schedule, planner, platform, loads, r.flows);
    r.top_links = loads.top(request.top_links, r.time, topology, platform);
    fill_bandwidths(r, request.op, group.size());
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace trainsim::engine
