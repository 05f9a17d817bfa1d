#include "sim/engine/schedule_flows.hpp"

#include <algorithm>

#include "sim/core/error.hpp"

namespace trainsim::engine {

using core::Seconds;

RoutePlanner::RoutePlanner(const network::Topology& topology, const core::NetworkProfile& profile,
                           SimgridPlatform& platform)
    : topology_(topology), profile_(profile), platform_(platform) {}

const std::vector<uint32_t>& RoutePlanner::links(int from, int to, bool one_node_group) {
  const int sw = platform_.switch_host();
  const bool via_switch = from == sw || to == sw;
  const uint64_t pair = static_cast<uint64_t>(from) * (static_cast<uint64_t>(sw) + 1) + static_cast<uint64_t>(to);
  const uint64_t key = 2 * pair + (via_switch && one_node_group ? 1 : 0);
  auto [it, added] = routes_.try_emplace(key);
  std::vector<uint32_t>& out = it->second;
  if (added) {
    if (via_switch) {
      const network::Aggregator where = one_node_group ? network::Aggregator::NVSWITCH : network::Aggregator::NETWORK;
      topology_.route_to_aggregator(from == sw ? to : from, where, to == sw, out);
    } else {
      topology_.route(from, to, out);
    }
  }
  uint64_t& declared = declared_[pair];
  if (declared != key + 1) {
    const bool intra = intra_node(from, to, one_node_group);
    const Seconds software = from == sw ? Seconds(0) : (intra ? profile_.intra_node : profile_.inter_node).step_latency;
    platform_.set_route(from, to, out, software);
    declared = key + 1;
  }
  return out;
}

bool RoutePlanner::intra_node(int from, int to, bool one_node_group) const {
  const int sw = platform_.switch_host();
  if (from == sw || to == sw) return one_node_group;
  return topology_.node_of(from) == topology_.node_of(to);
}

ScheduleFlows schedule_flows(core::CollectiveOp op, network::Algorithm algorithm, core::Bytes size, Fidelity fidelity,
                             const std::vector<int>& members, RoutePlanner& planner, SimgridPlatform& platform,
                             std::vector<double>* link_bytes) {
  TRAINSIM_CHECK(fidelity != Fidelity::ANALYTIC, "the analytic fidelity has no flows");
  const network::Topology& topology = planner.topology();
  const network::GroupView group{members, &topology};
  const int first_node = topology.node_of(members.front());
  const bool one_node =
      std::all_of(members.begin(), members.end(), [&](int r) { return topology.node_of(r) == first_node; });
  auto host_of = [&](int32_t endpoint) {
    return endpoint == network::IN_NETWORK ? platform.switch_host() : members.at(static_cast<size_t>(endpoint));
  };
  const core::NetworkProfile& profile = planner.profile();
  const double intra_weight = profile.intra_node.bandwidth_efficiency / profile.intra_node.efficiency(op, size);
  const double inter_weight = profile.inter_node.bandwidth_efficiency / profile.inter_node.efficiency(op, size);
  // The switch's own limits (NVLS rate, SwitchML's packets) slow the flows to and from it.
  double switch_weight = 1;
  if (algorithm == network::Algorithm::IN_NETWORK || algorithm == network::Algorithm::NVLS) {
    const network::ClusterConfig& cluster = topology.cluster();
    const network::GroupPlacement placement = network::GroupPlacement::of(members, cluster);
    switch_weight = network::switch_route_rate(algorithm, op, size, cluster, profile) /
                    network::switch_limited_rate(algorithm, op, size, placement, cluster, profile);
  }
  const int sw = platform.switch_host();
  // Adds a flow's bytes to its route's links; returns the bytes the flow carries on the platform.
  auto add = [&](int src, int dst, double bytes) {
    const std::vector<uint32_t>& route = planner.links(src, dst, one_node);
    if (link_bytes != nullptr) {
      for (uint32_t l : route) (*link_bytes)[l] += bytes;
    }
    const double via_switch = src == sw || dst == sw ? switch_weight : 1.0;
    return bytes * via_switch * (planner.intra_node(src, dst, one_node) ? intra_weight : inter_weight);
  };
  ScheduleFlows out;
  if (fidelity == Fidelity::STEP) {
    const network::TransferSchedule schedule = network::make_schedule(op, algorithm, size, group);
    out.batch.deps = schedule.deps;
    out.batch.flows.reserve(schedule.transfers.size());
    for (const network::Transfer& t : schedule.transfers) {
      const int src = host_of(t.src);
      const int dst = host_of(t.dst);
      out.batch.flows.push_back({src, dst, add(src, dst, t.bytes), t.dep_begin, t.dep_count});
    }
    out.tail_s.assign(out.batch.flows.size(), 0.0);
    return out;
  }
  const std::vector<network::FlowEdge> edges = network::flow_edges(op, algorithm, size, group);
  // The algorithm's per-step latencies along its critical path, phase after phase: the closed form
  // of the same algorithm with no bytes. Each flow paid its route's latency when it started.
  const network::ClusterConfig& cluster = topology.cluster();
  const double latency =
      network::collective_cost(op, core::Bytes(0), network::GroupPlacement::of(members, cluster), cluster, profile,
                               algorithm)
          .time.value();
  out.batch.flows.reserve(edges.size());
  out.tail_s.reserve(edges.size());
  for (const network::FlowEdge& e : edges) {
    const int src = host_of(e.src);
    const int dst = host_of(e.dst);
    out.batch.flows.push_back({src, dst, add(src, dst, e.bytes), 0, 0});
    out.tail_s.push_back(std::max(0.0, latency - platform.route_latency(src, dst).value()));
  }
  return out;
}

void append(ScheduleFlows& into, const ScheduleFlows& part) {
  const uint32_t flow_base = static_cast<uint32_t>(into.batch.flows.size());
  const uint32_t dep_base = static_cast<uint32_t>(into.batch.deps.size());
  for (FlowSpec f : part.batch.flows) {
    f.dep_begin += dep_base;
    into.batch.flows.push_back(f);
  }
  for (uint32_t d : part.batch.deps) into.batch.deps.push_back(d + flow_base);
  into.tail_s.insert(into.tail_s.end(), part.tail_s.begin(), part.tail_s.end());
}

Seconds schedule_time(const ScheduleFlows& flows, const std::vector<Seconds>& done) {
  TRAINSIM_CHECK(done.size() == flows.tail_s.size(), "one completion time per flow");
  Seconds end;
  for (size_t i = 0; i < done.size(); ++i) end = std::max(end, done[i] + Seconds(flows.tail_s[i]));
  return end;
}

std::vector<LinkLoad> LinkLoads::top(size_t count, Seconds time, const network::Topology& topology,
                                      const SimgridPlatform& platform) const {
  std::vector<LinkLoad> loads;
  for (uint32_t l = 0; l < bytes_.size(); ++l) {
    if (bytes_[l] <= 0) continue;
    const double capacity = platform.capacity(l).value() * time.value();
    loads.push_back({topology.links()[l].name, bytes_[l], capacity > 0 ? bytes_[l] / capacity : 0.0});
  }
  auto more_loaded = [](const LinkLoad& a, const LinkLoad& b) {
    if (a.utilization != b.utilization) return a.utilization > b.utilization;
    return a.link < b.link;
  };
  const size_t keep = std::min(count, loads.size());
  std::partial_sort(loads.begin(), loads.begin() + static_cast<std::ptrdiff_t>(keep), loads.end(), more_loaded);
  loads.resize(keep);
  return loads;
}

std::vector<std::pair<uint32_t, double>> nonzero_links(const std::vector<double>& bytes) {
  std::vector<std::pair<uint32_t, double>> out;
  for (uint32_t l = 0; l < bytes.size(); ++l) {
    if (bytes[l] > 0) out.emplace_back(l, bytes[l]);
  }
  return out;
}

}  // namespace trainsim::engine
