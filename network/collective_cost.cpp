#include "network/collective_cost.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::network {
namespace {

using core::Bytes;
using core::CollectiveOp;
using core::Seconds;

bool has_tree(CollectiveOp op) {
  return op == CollectiveOp::ALL_REDUCE || op == CollectiveOp::BROADCAST || op == CollectiveOp::REDUCE;
}

using core::ring_steps;

Seconds ring_time(CollectiveOp op, Bytes size, int n, const LinkScope& scope) {
  if (n <= 1) return Seconds(0);
  return core::bus_bandwidth_factor(op, n) * (size / scope.bandwidth) + ring_steps(op, n) * scope.latency;
}

// NCCL's tree for an op that has one (has_tree), `depth` hops from the root to the farthest leaf.
// all_reduce pipelines a reduce up and a broadcast down: each rank sends and receives the whole
// buffer once per phase.
Seconds tree_time(CollectiveOp op, Bytes size, int n, int depth, const LinkScope& scope) {
  if (n <= 1) return Seconds(0);
  const double phases = op == CollectiveOp::ALL_REDUCE ? 2.0 : 1.0;
  return phases * (size / scope.bandwidth) + (phases * depth) * scope.latency;
}

int binary_tree_depth(int n) { return static_cast<int>(std::ceil(std::log2(static_cast<double>(n)))); }

// One flat phase over `n` ranks of one scope; `tree_depth` is the depth of NCCL's tree there.
CollectiveCost flat(CollectiveOp op, Bytes size, int n, int tree_depth, const LinkScope& scope, Algorithm algorithm) {
  const Seconds ring = ring_time(op, size, n, scope);
  if (algorithm == Algorithm::RING || !has_tree(op)) return {ring, Algorithm::RING};
  const Seconds tree = tree_time(op, size, n, tree_depth, scope);
  if (algorithm == Algorithm::TREE || tree < ring) return {tree, Algorithm::TREE};
  return {ring, Algorithm::RING};
}

// DIRECT: one send per peer, at once; the intra- and inter-node shares proceed in parallel.
Seconds direct_time(Bytes size, const GroupPlacement& g, const LinkScope& intra, const LinkScope& inter) {
  const int n = g.ranks;
  const int local = std::min(g.ranks_per_node, n);
  const double local_peers = local - 1;
  const double remote_peers = n - local;
  const Seconds intra_bw = (local_peers / n) * (size / intra.bandwidth);
  const Seconds inter_bw = remote_peers > 0 ? (remote_peers / n) * (size / inter.bandwidth) : Seconds(0);
  return std::max(intra_bw, inter_bw) + local_peers * intra.latency + remote_peers * inter.latency;
}

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

double log2_of(int n) { return std::log2(static_cast<double>(n)); }

// Thakur, Rabenseifner & Gropp 2005, section 4: recursive halving (reduce_scatter) or doubling
// (all_gather) moves S/2 + S/4 + ... + S/n = (n-1)/n*S in log2(n) steps. Node-major members put the
// exchanges at distances k..n/2 across nodes ((n-k)/n*S, log2 m steps) and the others inside.
Seconds halving_doubling_time(CollectiveOp op, Bytes size, const GroupPlacement& g, const LinkScope& intra,
                              const LinkScope& inter) {
  const int n = g.ranks;
  const int k = std::min(g.ranks_per_node, n);
  const int m = n / k;
  const Seconds one_pass = (static_cast<double>(k - 1) / n) * (size / intra.bandwidth) + log2_of(k) * intra.latency +
                           (static_cast<double>(n - k) / n) * (size / inter.bandwidth) + log2_of(m) * inter.latency;
  return op == CollectiveOp::ALL_REDUCE ? 2.0 * one_pass : one_pass;
}

// NCCL's ring over several members of each of several nodes (collective_cost.hpp): `channels` rings,
// each moving 1/channels of the buffer, each member the source of one hop per ring: the inter-node
// hop of one ring (its NIC share) and the intra-node hops of the others (its NVLink port). A chunk
// crosses m inter-node and n-m intra-node hops per turn of the ring.
Seconds nccl_ring_time(CollectiveOp op, Bytes size, const GroupPlacement& g, const LinkScope& intra,
                       const LinkScope& inter) {
  const int n = g.ranks;
  const int m = g.nodes;
  const int channels = ring_channels(g);
  const double factor = core::bus_bandwidth_factor(op, n);
  const Seconds across = (factor / channels) * (size / inter.bandwidth);
  const Seconds inside = (factor * std::max(channels - 1, 1) / channels) * (size / intra.bandwidth);
  const double hops = ring_steps(op, n);
  const Seconds per_hop = (static_cast<double>(m) / n) * inter.latency + (static_cast<double>(n - m) / n) * intra.latency;
  return std::max(across, inside) + hops * per_hop;
}

// In-network reduction (SHArP, COMHPC 2016; NVLS inside a node): the buffer up once and down once.
Seconds switch_reduction_time(Bytes size, const LinkScope& scope) { return size / scope.bandwidth + 2.0 * scope.latency; }

// The ring reduce-scatter of `size` bytes (or all-gather: the same terms) over the k members of a
// node: its bandwidth and its latency terms apart, as the hierarchies pipeline them.
struct InNodeRing {
  Seconds bandwidth;
  Seconds latency;
};
InNodeRing in_node_ring(Bytes size, int k, const LinkScope& intra) {
  const Seconds latency = ring_steps(CollectiveOp::REDUCE_SCATTER, k) * intra.latency;
  return {ring_time(CollectiveOp::REDUCE_SCATTER, size, k, intra) - latency, latency};
}

// Ring or tree, flat or hierarchical (the model of the header's second half).
CollectiveCost ring_or_tree(CollectiveOp op, Bytes size, const GroupPlacement& group, const LinkScope& intra,
                            const LinkScope& inter, Algorithm algorithm) {
  if (group.nodes <= 1) return flat(op, size, group.ranks, group.ranks - 1, intra, algorithm);
  const int k = group.ranks_per_node;
  const int m = group.nodes;
  if (k <= 1) return flat(op, size, m, binary_tree_depth(m), inter, algorithm);

  // Hierarchical: an intra-node phase before and/or after the across-node phase, which runs on the
  // k rails at once with 1/k of the buffer each. NCCL pipelines the chunks of the buffer through the
  // phases, so the phases' bandwidth terms overlap (the slowest sets the pace; the intra-node
  // reduce-scatter and all-gather of an all_reduce share the NVLink ports) while each chunk still
  // pays every phase's latency: time = max(bandwidth terms) + sum(latency terms).
  const Bytes shard = size / k;
  const auto [in_node_bandwidth, in_node_latency] = in_node_ring(size, k, intra);
  switch (op) {
    case CollectiveOp::ALL_REDUCE:
    case CollectiveOp::BROADCAST:
    case CollectiveOp::REDUCE: {
      const CollectiveCost across = flat(op, shard, m, binary_tree_depth(m), inter, algorithm);
      const Seconds across_latency =
          (across.algorithm == Algorithm::TREE ? (op == CollectiveOp::ALL_REDUCE ? 2.0 : 1.0) * binary_tree_depth(m)
                                               : ring_steps(op, m)) *
          inter.latency;
      const Seconds across_bandwidth = across.time - across_latency;
      return {std::max(2.0 * in_node_bandwidth, across_bandwidth) + 2.0 * in_node_latency + across_latency,
              across.algorithm};
    }
    case CollectiveOp::REDUCE_SCATTER:
    case CollectiveOp::ALL_GATHER: {
      const Seconds across_latency = ring_steps(op, m) * inter.latency;
      const Seconds across_bandwidth = ring_time(op, shard, m, inter) - across_latency;
      return {std::max(in_node_bandwidth, across_bandwidth) + in_node_latency + across_latency, Algorithm::RING};
    }
    case CollectiveOp::ALL_TO_ALL: break;
  }
  TRAINSIM_CHECK(false, "all_to_all is costed by direct_time");
  return {};
}

bool reduces_or_gathers(CollectiveOp op) {
  return op == CollectiveOp::ALL_REDUCE || op == CollectiveOp::REDUCE_SCATTER || op == CollectiveOp::ALL_GATHER;
}

// DIRECT all_gather / reduce_scatter only pays off (and is only offered) on small groups.
constexpr int DIRECT_MAX_RANKS = 16;

}  // namespace

std::string to_string(Algorithm a) {
  switch (a) {
    case Algorithm::AUTO: return "auto";
    case Algorithm::RING: return "ring";
    case Algorithm::TREE: return "tree";
    case Algorithm::HALVING_DOUBLING: return "halving-doubling";
    case Algorithm::DIRECT: return "direct";
    case Algorithm::HIERARCHICAL: return "hierarchical";
    case Algorithm::IN_NETWORK: return "in-network";
    case Algorithm::NVLS: return "nvls";
  }
  return "?";
}

bool parse_algorithm(std::string_view text, Algorithm& out) {
  for (Algorithm a : ALL_ALGORITHMS) {
    if (text == to_string(a)) {
      out = a;
      return true;
    }
  }
  return false;
}

GroupPlacement GroupPlacement::of(const std::vector<int>& group_ranks, const ClusterConfig& cluster) {
  TRAINSIM_CHECK(!group_ranks.empty(), "a communicator has at least one rank");
  std::vector<int> nodes;
  nodes.reserve(group_ranks.size());
  for (int r : group_ranks) {
    TRAINSIM_CHECK(r >= 0 && r < cluster.world_size(),
                   fmt::format("rank {} is outside the cluster of {} GPUs", r, cluster.world_size()));
    nodes.push_back(cluster.node_of(r));
  }
  std::sort(nodes.begin(), nodes.end());
  GroupPlacement g;
  g.ranks = static_cast<int>(group_ranks.size());
  g.nodes = 0;
  g.ranks_per_node = 0;
  for (size_t i = 0; i < nodes.size();) {
    size_t j = i;
    while (j < nodes.size() && nodes[j] == nodes[i]) ++j;
    ++g.nodes;
    g.ranks_per_node = std::max(g.ranks_per_node, static_cast<int>(j - i));
    if (cluster.pool_networks()) {
      const double share = cluster.nic_bandwidth_per_gpu_of_node(nodes[i]).value();
      g.nic_bandwidth_per_gpu = g.nic_bandwidth_per_gpu > 0 ? std::min(g.nic_bandwidth_per_gpu, share) : share;
    }
    i = j;
  }
  if (g.nodes == 1) g.nic_bandwidth_per_gpu = 0;  // no NIC crossed
  return g;
}

bool tree_is_hierarchical(CollectiveOp op, const GroupPlacement& group) {
  return op == CollectiveOp::ALL_REDUCE && group.spans_nodes_evenly();
}

bool collnet_applies(CollectiveOp op, const GroupPlacement& group) {
  return op == CollectiveOp::ALL_REDUCE && group.spans_nodes_evenly();
}

core::BytesPerSecond switch_route_rate(Algorithm algorithm, CollectiveOp op, Bytes size, const ClusterConfig& cluster,
                                       const core::NetworkProfile& profile) {
  TRAINSIM_CHECK(algorithm == Algorithm::IN_NETWORK || algorithm == Algorithm::NVLS, "a switch algorithm");
  if (algorithm == Algorithm::NVLS) return cluster.intra_node.bandwidth * profile.intra_node.efficiency(op, size);
  // The leaf switch reduces before the uplinks: oversubscription does not slow it.
  return cluster.nic_bandwidth_per_gpu() * profile.inter_node.efficiency(op, size);
}

core::BytesPerSecond switch_limited_rate(Algorithm algorithm, CollectiveOp op, Bytes size, const GroupPlacement& group,
                                         const ClusterConfig& cluster, const core::NetworkProfile& profile) {
  const core::BytesPerSecond route = switch_route_rate(algorithm, op, size, cluster, profile);
  if (algorithm == Algorithm::NVLS) {
    const core::BytesPerSecond nvls = cluster.intra_node.nvls_bandwidth.value() > 0
                                          ? cluster.intra_node.nvls_bandwidth
                                          : cluster.intra_node.bandwidth * NVLS_SHARE;
    return std::min(route, nvls);
  }
  const InNetworkAggregation& a = cluster.network.aggregation;
  if (cluster.network.aggregation_kind() != AggregationKind::SWITCHML) return route;
  const double payload = a.packet_payload.value();
  core::BytesPerSecond rate = route * (payload / (payload + a.packet_header.value()));
  // The shards of a CollNet all-reduce are separate aggregations sharing the pool.
  const int jobs = collnet_applies(op, group) ? group.ranks_per_node : 1;
  const core::Seconds rtt = inter_node_scope(cluster, profile).latency;
  if (rtt.value() > 0) rate = std::min(rate, core::BytesPerSecond(static_cast<double>(a.pool_size) / jobs * payload / rtt.value()));
  if (a.packet_rate > 0) rate = std::min(rate, core::BytesPerSecond(a.packet_rate * payload));
  return rate;
}

int ring_channels(const GroupPlacement& group) { return group.spans_nodes_evenly() ? group.ranks_per_node : 1; }

LinkScope intra_node_scope(const ClusterConfig& cluster, const core::NetworkProfile& profile) {
  return {cluster.intra_node.bandwidth * profile.intra_node.bandwidth_efficiency,
          cluster.intra_node.latency + profile.intra_node.step_latency};
}

LinkScope inter_node_scope(const ClusterConfig& cluster, const core::NetworkProfile& profile) {
  return {cluster.nic_bandwidth_per_gpu() * (profile.inter_node.bandwidth_efficiency / cluster.network.oversubscription),
          cluster.network.latency + profile.inter_node.step_latency};
}

LinkScope inter_node_scope(const ClusterConfig& cluster, const core::NetworkProfile& profile, const GroupPlacement& group) {
  LinkScope scope = inter_node_scope(cluster, profile);
  if (group.nic_bandwidth_per_gpu > 0) {
    scope.bandwidth = core::BytesPerSecond(group.nic_bandwidth_per_gpu) *
                      (profile.inter_node.bandwidth_efficiency / cluster.network.oversubscription);
  }
  return scope;
}

bool algorithm_applies(Algorithm algorithm, CollectiveOp op, const GroupPlacement& group, const ClusterConfig& cluster) {
  const bool a2a = op == CollectiveOp::ALL_TO_ALL;
  switch (algorithm) {
    case Algorithm::AUTO: return true;
    case Algorithm::RING: return !a2a;
    case Algorithm::TREE: return has_tree(op);
    case Algorithm::HALVING_DOUBLING:
      return reduces_or_gathers(op) && is_power_of_two(group.ranks) && group.uniform();
    case Algorithm::DIRECT:
      return a2a || ((op == CollectiveOp::ALL_GATHER || op == CollectiveOp::REDUCE_SCATTER) &&
                     group.ranks <= DIRECT_MAX_RANKS);
    case Algorithm::HIERARCHICAL: return reduces_or_gathers(op) && group.uniform();
    case Algorithm::IN_NETWORK:
      if (cluster.network.topology == TopologyKind::TORUS) return false;  // no switches
      switch (cluster.network.aggregation_kind()) {
        case AggregationKind::NONE: return false;
        case AggregationKind::SHARP: return !a2a && group.nodes > 1;
        case AggregationKind::SWITCHML:
          return op == CollectiveOp::ALL_REDUCE && group.nodes > 1 &&
                 group.nodes <= cluster.network.nodes_per_switch(cluster.nodes);
      }
      return false;
    case Algorithm::NVLS: return reduces_or_gathers(op) && group.nodes == 1 && cluster.intra_node.nvls;
  }
  return false;
}

CollectiveCost collective_cost(CollectiveOp op, Bytes size, const GroupPlacement& group, const ClusterConfig& cluster,
                               const core::NetworkProfile& profile, Algorithm algorithm) {
  if (group.ranks <= 1) return {Seconds(0), Algorithm::RING};
  // A size-dependent efficiency (a calibrated curve) replaces the scope's constant one.
  const double intra_scale = profile.intra_node.efficiency(op, size) / profile.intra_node.bandwidth_efficiency;
  const double inter_scale = profile.inter_node.efficiency(op, size) / profile.inter_node.bandwidth_efficiency;
  LinkScope intra = intra_node_scope(cluster, profile);
  LinkScope inter = inter_node_scope(cluster, profile, group);
  intra.bandwidth = intra.bandwidth * intra_scale;
  inter.bandwidth = inter.bandwidth * inter_scale;
  if (op == CollectiveOp::ALL_TO_ALL) return {direct_time(size, group, intra, inter), Algorithm::DIRECT};
  if (!algorithm_applies(algorithm, op, group, cluster)) algorithm = Algorithm::RING;
  switch (algorithm) {
    case Algorithm::AUTO: {
      CollectiveCost best = ring_or_tree(op, size, group, intra, inter, Algorithm::AUTO);
      // Ring phases inside and across the nodes are the hierarchy, not NCCL's flat ring.
      if (best.algorithm == Algorithm::RING && group.spans_nodes_evenly() &&
          algorithm_applies(Algorithm::HIERARCHICAL, op, group, cluster)) {
        best.algorithm = Algorithm::HIERARCHICAL;
      }
      for (Algorithm a : {Algorithm::NVLS, Algorithm::IN_NETWORK}) {
        if (!algorithm_applies(a, op, group, cluster)) continue;
        const CollectiveCost candidate = collective_cost(op, size, group, cluster, profile, a);
        if (candidate.time < best.time) best = candidate;
      }
      return best;
    }
    case Algorithm::RING:
      if (group.nodes > 1 && group.ranks_per_node > 1) return {nccl_ring_time(op, size, group, intra, inter), Algorithm::RING};
      return ring_or_tree(op, size, group, intra, inter, algorithm);
    case Algorithm::TREE: return ring_or_tree(op, size, group, intra, inter, algorithm);
    case Algorithm::HIERARCHICAL:
      return {ring_or_tree(op, size, group, intra, inter, Algorithm::RING).time, Algorithm::HIERARCHICAL};
    case Algorithm::HALVING_DOUBLING:
      return {halving_doubling_time(op, size, group, intra, inter), Algorithm::HALVING_DOUBLING};
    case Algorithm::DIRECT: return {direct_time(size, group, intra, inter), Algorithm::DIRECT};
    case Algorithm::IN_NETWORK: {
      const LinkScope sw{switch_limited_rate(algorithm, op, size, group, cluster, profile), inter.latency};
      if (!collnet_applies(op, group)) return {switch_reduction_time(size, sw), Algorithm::IN_NETWORK};
      // CollNet: reduce-scatter inside the node, the 1/k shards through the switches, all-gather
      // inside the node, pipelined as the hierarchy is (the NVLink phases share the ports).
      const int k = group.ranks_per_node;
      const InNodeRing in_node = in_node_ring(size, k, intra);
      const Seconds across = (size / k) / sw.bandwidth;
      return {std::max(2.0 * in_node.bandwidth, across) + 2.0 * in_node.latency + 2.0 * sw.latency,
              Algorithm::IN_NETWORK};
    }
    case Algorithm::NVLS: {
      const LinkScope sw{switch_limited_rate(algorithm, op, size, group, cluster, profile), intra.latency};
      return {switch_reduction_time(size, sw), Algorithm::NVLS};
    }
  }
  TRAINSIM_CHECK(false, "every algorithm is costed above");
  return {};
}

Seconds p2p_time(Bytes size, bool same_node, const ClusterConfig& cluster, const core::NetworkProfile& profile) {
  const LinkScope scope = same_node ? intra_node_scope(cluster, profile) : inter_node_scope(cluster, profile);
  return scope.latency + size / scope.bandwidth;
}

Seconds p2p_time(Bytes size, int from, int to, const ClusterConfig& cluster, const core::NetworkProfile& profile) {
  const bool same_node = cluster.node_of(from) == cluster.node_of(to);
  if (same_node || !cluster.pool_networks()) return p2p_time(size, same_node, cluster, profile);
  const LinkScope scope = inter_node_scope(cluster, profile, GroupPlacement::of({from, to}, cluster));
  return scope.latency + size / scope.bandwidth;
}

}  // namespace trainsim::network
