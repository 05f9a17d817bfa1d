#include "sim/engine/collective_simulation.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <chrono>
#include <bit>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <unordered_map>
#include <fmt/format.h>

#include "network/topology.hpp"
#include "sim/core/error.hpp"
#include "sim/engine/node_folding.hpp"
#include "sim/engine/program_plan.hpp"
#include "sim/engine/rank_table.hpp"
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

// A flow as its component's class sees it: endpoints relative to the component's lowest GPU (the
// in-network switch kept as itself), bytes and tail.
struct NormalizedFlow {
  int64_t src = 0;
  int64_t dst = 0;
  double bytes = 0;
  double tail = 0;
  uint32_t index = 0;  // in the batch
  auto key() const { return std::tie(src, dst, bytes, tail); }
};

// Whether `b` is an exact copy of `a`: position by position, equal normalized flows whose routes
// have equal lengths, latencies and link capacities and latencies, and whose links correspond one
// to one (a link shared by two flows of `a` is shared by their copies in `b`, and only by them).
// REQUIRES: a and b sorted by key().
bool same_component(const std::vector<NormalizedFlow>& a, const std::vector<NormalizedFlow>& b,
                    const std::vector<FlowSpec>& flows, RoutePlanner& planner, bool one_node,
                    const SimgridPlatform& platform) {
  if (a.size() != b.size()) return false;
  std::unordered_map<uint32_t, uint32_t> forward;
  std::unordered_map<uint32_t, uint32_t> backward;
  const std::vector<network::Link>& links = planner.topology().links();
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].key() != b[i].key()) return false;
    const FlowSpec& fa = flows[a[i].index];
    const FlowSpec& fb = flows[b[i].index];
    if (platform.route_latency(fa.src, fa.dst) != platform.route_latency(fb.src, fb.dst)) return false;
    const std::vector<uint32_t>& ra = planner.links(fa.src, fa.dst, one_node);
    const std::vector<uint32_t>& rb = planner.links(fb.src, fb.dst, one_node);
    if (ra.size() != rb.size()) return false;
    for (size_t k = 0; k < ra.size(); ++k) {
      const auto [fit, fnew] = forward.try_emplace(ra[k], rb[k]);
      const auto [bit, bnew] = backward.try_emplace(rb[k], ra[k]);
      if (fit->second != rb[k] || bit->second != ra[k]) return false;
      if (fnew && (platform.capacity(ra[k]) != platform.capacity(rb[k]) ||
                   links[ra[k]].latency != links[rb[k]].latency)) {
        return false;
      }
    }
  }
  return true;
}

// At flow fidelity every flow starts at once and nothing else runs, so flows that share no link
// never affect each other: the batch splits into connected components (flows joined by a shared
// link), and a component that is an exact copy of another (same_component) ends when its original
// does. Leaves one component per class of copies in `flows`; returns how many flows remain.
void keep_one_component_per_class(ScheduleFlows& flows, const std::vector<int>& members, RoutePlanner& planner,
                                  const SimgridPlatform& platform) {
  if (!flows.batch.deps.empty()) return;
  const std::vector<FlowSpec>& batch = flows.batch.flows;
  const int sw = platform.switch_host();
  const network::Topology& topology = planner.topology();
  const int first_node = topology.node_of(members.front());
  const bool one_node = std::all_of(members.begin(), members.end(),
                                    [&](int r) { return topology.node_of(r) == first_node; });
  // Union-find over flows, joined through the links they share.
  std::vector<uint32_t> parent(batch.size());
  for (uint32_t f = 0; f < parent.size(); ++f) parent[f] = f;
  auto root = [&](uint32_t f) {
    while (parent[f] != f) f = parent[f] = parent[parent[f]];
    return f;
  };
  std::vector<uint32_t> owner(topology.links().size(), UINT32_MAX);
  for (uint32_t f = 0; f < batch.size(); ++f) {
    for (uint32_t l : planner.links(batch[f].src, batch[f].dst, one_node)) {
      if (owner[l] == UINT32_MAX) {
        owner[l] = f;
      } else {
        const uint32_t a = root(owner[l]);
        const uint32_t b = root(f);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
    }
  }
  // Components in order of their first flow, each normalized and sorted.
  std::vector<uint32_t> component_of(batch.size());
  std::vector<std::vector<NormalizedFlow>> components;
  std::vector<uint32_t> index_of_root(batch.size(), UINT32_MAX);
  for (uint32_t f = 0; f < batch.size(); ++f) {
    const uint32_t r = root(f);
    if (index_of_root[r] == UINT32_MAX) {
      index_of_root[r] = static_cast<uint32_t>(components.size());
      components.emplace_back();
    }
    component_of[f] = index_of_root[r];
    components[component_of[f]].push_back({batch[f].src, batch[f].dst, batch[f].bytes, flows.tail_s[f], f});
  }
  constexpr int64_t SWITCH = -(int64_t{1} << 40);
  for (std::vector<NormalizedFlow>& c : components) {
    int64_t base = INT64_MAX;
    for (const NormalizedFlow& f : c) {
      if (f.src != sw) base = std::min(base, f.src);
      if (f.dst != sw) base = std::min(base, f.dst);
    }
    for (NormalizedFlow& f : c) {
      f.src = f.src == sw ? SWITCH : f.src - base;
      f.dst = f.dst == sw ? SWITCH : f.dst - base;
    }
    std::sort(c.begin(), c.end(), [](const NormalizedFlow& x, const NormalizedFlow& y) { return x.key() < y.key(); });
  }
  // Classes by a hash of the normalized flows, confirmed by same_component.
  std::unordered_map<uint64_t, std::vector<uint32_t>> classes;
  std::vector<char> keep(components.size(), 0);
  for (uint32_t c = 0; c < components.size(); ++c) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    for (const NormalizedFlow& f : components[c]) {
      mix(static_cast<uint64_t>(f.src));
      mix(static_cast<uint64_t>(f.dst));
      mix(std::bit_cast<uint64_t>(f.bytes));
    }
    std::vector<uint32_t>& reps = classes[h];
    const bool copy = std::any_of(reps.begin(), reps.end(), [&](uint32_t r) {
      return same_component(components[r], components[c], batch, planner, one_node, platform);
    });
    if (!copy) {
      reps.push_back(c);
      keep[c] = 1;
    }
  }
  ScheduleFlows kept;
  for (uint32_t f = 0; f < batch.size(); ++f) {
    if (keep[component_of[f]] == 0) continue;
    kept.batch.flows.push_back(batch[f]);
    kept.tail_s.push_back(flows.tail_s[f]);
  }
  kept.link_bytes = std::move(flows.link_bytes);
  flows = std::move(kept);
}

void fill_bandwidths(CollectiveResult& r, core::CollectiveOp op, int ranks) {
  r.algbw = r.time.value() > 0 ? r.size.value() / r.time.value() : 0.0;
  r.busbw = r.algbw * core::bus_bandwidth_factor(op, ranks);
}

}  // namespace

namespace {

// The step-fidelity flows of one call of `op` on `group` with `algorithm` (resolved): per edge of the
// algorithm (network::flow_edges), its bytes over a member's share of the buffer, or its steps for
// the schedules that send fewer, larger pieces.
double call_step_flows(core::CollectiveOp op, network::Algorithm a, Bytes size, const network::GroupView& group,
                       const network::ClusterConfig& cluster) {
  if (group.size() <= 1) return 0;
  // Most schedules cut the buffer into shares of at most size/n (rings, the hierarchies, CollNet,
  // halving-doubling, direct); a flat tree, a chain and a flat switch reduction send fewer, larger
  // pieces, counted once per step.
  const network::GroupPlacement placement = network::GroupPlacement::of(group.ranks, cluster);
  const bool chain = a == network::Algorithm::RING && (op == core::CollectiveOp::BROADCAST || op == core::CollectiveOp::REDUCE);
  const bool flat_tree = a == network::Algorithm::TREE && !network::tree_is_hierarchical(op, placement);
  const bool flat_switch =
      a == network::Algorithm::NVLS || (a == network::Algorithm::IN_NETWORK && !network::collnet_applies(op, placement));
  const double share = size.value() / group.size();
  double flows = 0;
  for (const network::FlowEdge& e : network::flow_edges(op, a, size, group)) {
    flows += chain || flat_tree || flat_switch || share <= 0 ? e.steps : std::max<double>(e.steps, std::floor(e.bytes / share));
  }
  return std::min(flows, 1e18);
}

}  // namespace

uint64_t step_flows_lower_bound(const CollectiveRequest& request, const network::ClusterConfig& cluster,
                                const core::Profile& profile) {
  const network::Topology topology = network::Topology::build(cluster);
  network::GroupView group;
  group.ranks = members(request, topology);
  group.topology = &topology;
  if (group.size() <= 1) return 0;
  uint64_t most = 0;
  for (Bytes size : request.sizes) {
    const network::Algorithm a = request.algorithm == network::Algorithm::AUTO
                                     ? network::choose_algorithm(request.op, size, group, cluster, profile.network)
                                     : request.algorithm;
    most = std::max(most, static_cast<uint64_t>(call_step_flows(request.op, a, size, group, cluster)));
  }
  return most;
}

double flows_lower_bound(const core::Workload& workload, const network::ClusterConfig& cluster,
                         const core::Profile& profile, const SimulationOptions& options) {
  return estimate_flows(workload, cluster, profile, options).total;
}

double simgrid_flow_rate(double in_flight) {
  static constexpr std::array<std::pair<double, double>, 4> POINTS = {
      {{256, 0.5e6}, {1024, 0.3e6}, {4096, 0.1e6}, {16384, 0.06e6}}};
  if (in_flight <= POINTS.front().first) return POINTS.front().second;
  size_t i = 1;
  while (i + 1 < POINTS.size() && in_flight > POINTS[i].first) ++i;
  const auto [x0, y0] = POINTS[i - 1];
  const auto [x1, y1] = POINTS[i];
  const double slope = std::log(y1 / y0) / std::log(x1 / x0);
  return y0 * std::pow(in_flight / x0, slope);
}

FlowEstimate estimate_flows(const core::Workload& workload, const network::ClusterConfig& cluster,
                            const core::Profile& profile, const SimulationOptions& options) {
  TRAINSIM_CHECK(options.fidelity != Fidelity::ANALYTIC, "the analytic fidelity runs no flows");
  FlowEstimate estimate;
  estimate.by_group.assign(workload.groups.size(), 0.0);
  estimate.by_group_seconds.assign(workload.groups.size(), 0.0);
  const bool step = options.fidelity == Fidelity::STEP;
  std::vector<ProgramPlan> plans;
  for (const core::Program& p : workload.programs) plans.push_back(plan_program(p, workload, cluster, profile.device));
  const RankTable table(workload, cluster, plans, options.use_symmetry);
  const network::Topology topology = network::Topology::build(cluster);
  std::optional<NodeFolding> folding;
  if (folding_allowed(options, cluster, topology.count(network::LinkClass::FABRIC) > 0)) {
    folding.emplace(workload, table, topology, options.node_symmetry);
    if (!folding->active()) folding.reset();
  }
  // A call's flows at flow fidelity: its algorithm's edges, those leaving a representative's node
  // where nodes fold.
  auto flow_count = [&](const std::vector<network::FlowEdge>& edges, const network::GroupView& group) {
    if (!folding) return static_cast<double>(edges.size());
    double kept = 0;
    for (const network::FlowEdge& e : edges) {
      const int node = topology.node_of(group.ranks[static_cast<size_t>(e.src)]);
      kept += folding->representative_node(node) == node ? 1 : 0;
    }
    return kept;
  };
  struct CallCost {
    double flows = 0;
    double seconds = 0;
  };
  std::map<std::tuple<uint32_t, core::CollectiveOp, double>, CallCost> per_call;  // by (meeting, op, bytes)
  for (const SimulatedRank& sr : table.ranks()) {
    for (const core::Task& t : workload.programs[sr.program].tasks) {
      // A send is one flow (its receive is the same flow); a copy one more (SimGrid runs copies).
      if (t.kind == core::TaskKind::SEND || t.kind == core::TaskKind::COPY) estimate.point_to_point += 1;
      if (t.kind != core::TaskKind::COLLECTIVE) continue;
      const uint32_t meeting = table.group_meeting(sr.group_base + t.group);
      const auto key = std::make_tuple(meeting, t.collective, t.bytes);
      auto it = per_call.find(key);
      if (it == per_call.end()) {
        const network::GroupView group{workload.groups[t.group].ranks_of(workload.layout, sr.rank), &topology};
        // The algorithm as the SimGrid backend picks it: the forced one where it applies, else AUTO's.
        network::Algorithm a = options.algorithm;
        const std::vector<network::Algorithm> usable = network::algorithms_for(t.collective, group);
        if (a == network::Algorithm::AUTO || std::find(usable.begin(), usable.end(), a) == usable.end()) {
          a = network::choose_algorithm(t.collective, Bytes(t.bytes), group, cluster, profile.network);
        }
        const double flows = group.size() <= 1 ? 0.0
                             : step ? call_step_flows(t.collective, a, Bytes(t.bytes), group, cluster)
                                    : flow_count(network::flow_edges(t.collective, a, Bytes(t.bytes), group), group);
        it = per_call.emplace(key, CallCost{flows, flows > 0 ? flows / simgrid_flow_rate(flows) : 0.0}).first;
      }
      // Each simulated member of the call arrives once: the call's flows, shared among them.
      const double share = 1.0 / table.meetings()[meeting].expected;
      estimate.by_group[t.group] += it->second.flows * share;
      estimate.by_group_seconds[t.group] += it->second.seconds * share;
    }
  }
  estimate.total = estimate.point_to_point;
  estimate.cpu_seconds = estimate.point_to_point / simgrid_flow_rate(1);
  for (size_t g = 0; g < estimate.by_group.size(); ++g) {
    if (options.closed_form(g)) continue;
    estimate.total += estimate.by_group[g];
    estimate.cpu_seconds += estimate.by_group_seconds[g];
  }
  return estimate;
}

// Wall-clock phases for CollectiveRequest::timings.
class PhaseClock {
 public:
  explicit PhaseClock(std::ostream* out) : out_(out), last_(std::chrono::steady_clock::now()) {}
  void lap(const std::string& phase) {
    if (out_ == nullptr) return;
    const auto now = std::chrono::steady_clock::now();
    *out_ << fmt::format("timing: {:<40} {:8.3f} s\n", phase, std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }

 private:
  std::ostream* out_;
  std::chrono::steady_clock::time_point last_;
};

std::vector<CollectiveResult> simulate_collective(const CollectiveRequest& request,
                                                  const network::ClusterConfig& cluster,
                                                  const core::Profile& profile) {
  PhaseClock clock(request.timings);
  const network::Topology topology = network::Topology::build(cluster);
  clock.lap(fmt::format("topology ({} links)", topology.links().size()));
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
  clock.lap("SimGrid platform");
  for (Bytes size : request.sizes) {
    CollectiveResult r;
    r.size = size;
    r.algorithm = request.algorithm == network::Algorithm::AUTO
                      ? network::choose_algorithm(request.op, size, group, cluster, net)
                      : request.algorithm;
    LinkLoads loads(topology.links().size());
    ScheduleFlows flows =
        schedule_flows(request.op, r.algorithm, size, request.fidelity, group.ranks, planner, platform, loads.bytes());
    const size_t all_flows = flows.batch.flows.size();
    if (request.use_symmetry && request.fidelity == Fidelity::FLOW) {
      keep_one_component_per_class(flows, group.ranks, planner, platform);
    }
    clock.lap(fmt::format("flows of {} B ({} of {} run)", size.value(), flows.batch.flows.size(), all_flows));
    r.time = schedule_time(flows, platform.run(flows.batch));
    clock.lap(fmt::format("simulation of {} B", size.value()));
    r.flows = flows.batch.flows.size();
    r.top_links = loads.top(request.top_links, r.time, topology, platform);
    fill_bandwidths(r, request.op, group.size());
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace trainsim::engine
