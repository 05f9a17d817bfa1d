#pragma once
// Closed-form (alpha-beta) costs of collectives and point-to-point transfers on a cluster, the way
// NCCL runs them: hierarchical when a group spans nodes (NVLink inside the node, one ring or tree
// across nodes per NIC rail). This is the cost model of the analytic backend and the oracle for the
// SimGrid backend.
//
// Model, per scope (see LinkScope):
//   inside a node   B_intra = intra_node.bandwidth * profile.intra_node.bandwidth_efficiency
//                   a_intra = intra_node.latency + profile.intra_node.step_latency
//   across nodes    B_inter = nic_bandwidth_per_gpu / oversubscription * profile.inter_node.bandwidth_efficiency
//                   a_inter = network.latency + profile.inter_node.step_latency
// Assumption: every GPU of a node runs the same kind of collective at the same time (true for the
// symmetric data-, tensor- and context-parallel groups of the parallel layout), so each GPU gets its
// share of the node's NICs, nic_bandwidth_per_gpu, never the whole node's. The uplink share after
// oversubscription is below that share whenever oversubscription > 1, so it is the bound.
//
// Algorithms on n ranks of one scope (ring steps pipelined as in NCCL; factor = core::bus_bandwidth_factor):
//   RING   factor(op, n) * S/B + steps * a, steps = 2(n-1) for all_reduce, n-1 for the others
//   TREE   NCCL's double binary tree across nodes, depth d = ceil(log2 n):
//          all_reduce 2S/B + 2d*a (reduce up, broadcast down, pipelined); broadcast and reduce S/B + d*a.
//          Inside one node NCCL's tree is a chain (d = n-1). Other ops have no tree: RING is used.
//   HALVING_DOUBLING  recursive halving reduce_scatter / doubling all_gather (Thakur, Rabenseifner &
//          Gropp, "Optimization of collective communication operations in MPICH", IJHPCA 2005,
//          section 4); all_reduce is Rabenseifner's reduce_scatter + all_gather. n = k*m a power of
//          two, members node-major, so the exchanges at distance < k stay inside the node:
//          reduce_scatter and all_gather (k-1)/n*S/B_intra + log2(k)*a_intra + (n-k)/n*S/B_inter
//          + log2(m)*a_inter; all_reduce twice that.
//   DIRECT every rank sends each peer its share in one step (all_to_all; all_gather and
//          reduce_scatter on small groups): max((k-1)/n*S/B_intra, (n-k)/n*S/B_inter)
//          + (k-1)*a_intra + (n-k)*a_inter, one posted send/recv per peer.
//   HIERARCHICAL  the hierarchy below with a RING across nodes.
//   RING on k > 1 members of each of m > 1 nodes is NCCL's flat ring (src/graph/rings.cc,
//          search.cc: one ring per channel, each entering a node through one NIC and leaving through
//          another, so that the channels use every NIC of the node): C = ring_channels(group)
//          channels (k on a uniform group, else 1), each moving S/C; every member is the source of
//          one hop per channel, the inter-node hop of one channel and intra-node hops of the others:
//          max(factor(op, n)/C * S/B_inter, factor(op, n)*max(C-1, 1)/C * S/B_intra)
//          + steps(op, n) * (m*a_inter + (n-m)*a_intra)/n (a chunk crosses m inter-node and n-m
//          intra-node hops per turn). Its bandwidth terms are the hierarchy's within 2(n-1)/n vs
//          2(m-1)/m; its latency is higher (2(n-1) hops against 2(k-1) + 2(m-1)), which is why NCCL's
//          tuner prefers the tree at scale.
//   IN_NETWORK  the switches reduce (cluster.network.in_network_aggregation; Graham et al.,
//          "Scalable Hierarchical Aggregation Protocol (SHArP)", COMHPC 2016; Sapio et al.,
//          SwitchML, NSDI 2021): each rank sends and receives the buffer once, S/R + 2a, R =
//          switch_limited_rate (the NIC share without oversubscription: the leaf switch reduces
//          before the uplinks; SwitchML's packet limits), one step up and one down. An all_reduce
//          over k > 1 members of each node runs as NCCL's CollNet (collnet_applies):
//          max(2(k-1)/k*S/B_intra, S/k/R) + 2(k-1)*a_intra + 2a, the NIC of every member carrying
//          its 1/k shard once each way. SHARP: any op but all_to_all; SwitchML: all_reduce on
//          groups whose nodes hang from one switch (InterNode::nodes_per_switch).
//   NVLS   NVSwitch reduction and multicast inside one node (NCCL 2.17 release notes): S/R +
//          2*a_intra for all_reduce, reduce_scatter and all_gather, R the smaller of the NVLink
//          port (intra-node efficiency) and intra_node.nvls_bandwidth.
//   AUTO   the fastest of RING, TREE and, where available (ClusterConfig's intra_node.nvls,
//          network.in_network_reduction), NVLS and IN_NETWORK, as NCCL's tuner picks (RING on ties).
//          On k > 1 members of each of m > 1 nodes AUTO's ring is the hierarchy (the same bandwidth
//          as NCCL's ring with fewer latency terms: the calibration and validation cases were fitted
//          with it), reported as HIERARCHICAL.
//          all_to_all is always DIRECT.
// An algorithm that does not apply (TREE for reduce_scatter, HALVING_DOUBLING on 6 ranks, NVLS
// across nodes, ...) falls back to RING, as NCCL does when a forced algorithm is unsupported.
// A group of k > 1 ranks per node over m > 1 nodes runs hierarchically (NCCL-like):
//   all_reduce      ring reduce_scatter(S) in the node, all_reduce(S/k) across nodes on the k rails in
//                   parallel (RING or TREE), ring all_gather(S) in the node
//   reduce_scatter  reduce_scatter(S) in the node, then reduce_scatter(S/k) across nodes
//   all_gather      all_gather(S/k) across nodes, then all_gather(S) in the node
//   broadcast       scatter(S) in the root's node, broadcast(S/k) across nodes, all_gather(S) in the node
//   reduce          the mirror of broadcast
//   all_to_all      DIRECT, never hierarchical
// NCCL pipelines chunks through these phases: the time is the largest of their bandwidth terms (the
// node's reduce_scatter and all_gather of an all_reduce count twice: they share the NVLink ports)
// plus the sum of their latency terms.
// With k == 1 across nodes the group is one flat ring or tree over the nodes on B_inter. So the ring
// all_reduce inside one node, or with one rank per node, is exactly 2(n-1)/n*S/B + 2(n-1)*a.
//
// Sizes follow nccl-tests: `size` is the per-rank buffer: all_reduce, broadcast, reduce and
// all_to_all move a `size`-byte buffer; all_gather's output and reduce_scatter's input are `size`
// bytes (each rank owns size/n of it).

#include <string>
#include <string_view>
#include <vector>

#include "network/cluster.hpp"
#include "sim/core/device.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::network {

enum class Algorithm { AUTO, RING, TREE, HALVING_DOUBLING, DIRECT, HIERARCHICAL, IN_NETWORK, NVLS };
inline constexpr Algorithm ALL_ALGORITHMS[] = {Algorithm::AUTO,   Algorithm::RING,         Algorithm::TREE,
                                               Algorithm::HALVING_DOUBLING, Algorithm::DIRECT,
                                               Algorithm::HIERARCHICAL,     Algorithm::IN_NETWORK,
                                               Algorithm::NVLS};
// "auto", "ring", "tree", "halving-doubling", "direct", "hierarchical", "in-network", "nvls"
std::string to_string(Algorithm a);
// Parses one of the names above; false (leaving `out` untouched) for anything else.
bool parse_algorithm(std::string_view text, Algorithm& out);


// Where the members of a communicator sit: `ranks` members over `nodes` nodes, `ranks_per_node` on
// each (groups built from the parallel layout are uniform).
struct GroupPlacement {
  // {ranks, nodes, ranks_per_node}, and the slowest NIC share where pools give their own network.
  constexpr GroupPlacement(int members = 1, int node_count = 1, int per_node = 1, double nic_share = 0)
      : ranks(members), nodes(node_count), ranks_per_node(per_node), nic_bandwidth_per_gpu(nic_share) {}
  int ranks = 1;
  int nodes = 1;
  int ranks_per_node = 1;
  // With pools that give their own network (ClusterConfig::pool_networks) and members on several
  // nodes: the smallest share of its node's NICs of any member, nic_bandwidth_per_gpu_of_node, in
  // bytes/s (a transfer crosses the NICs of both its ends: the slower side binds). 0: the cluster's.
  double nic_bandwidth_per_gpu = 0;

  // REQUIRES: group_ranks is not empty and each rank is < cluster.world_size(). A group that is not
  // uniform is described by its busiest node: ranks_per_node is the largest count on one node.
  static GroupPlacement of(const std::vector<int>& group_ranks, const ClusterConfig& cluster);
  // The same number of members on every node it spans.
  bool uniform() const { return ranks == nodes * ranks_per_node; }
  // Several members on each of several nodes, the same number on each (NCCL's rings then have one
  // channel per member of a node; CollNet and the hierarchy apply).
  bool spans_nodes_evenly() const { return nodes > 1 && ranks_per_node > 1 && uniform(); }
  friend bool operator==(const GroupPlacement&, const GroupPlacement&) = default;
};

// Whether TREE runs `op` on `group` hierarchically (make_schedule's hierarchical_schedule(.., TREE)):
// NCCL's tree across several nodes with several members each is chains inside the node and trees
// between nodes, as the closed form assumes; an all_reduce on a group that spans nodes evenly.
bool tree_is_hierarchical(core::CollectiveOp op, const GroupPlacement& group);

// Whether IN_NETWORK runs `op` on `group` as NCCL's CollNet: an all_reduce over several members of
// each of several nodes, the same number on each (reduce-scatter in the node, the 1/k shards through
// the switches, all-gather in the node).
bool collnet_applies(core::CollectiveOp op, const GroupPlacement& group);
// The rate at which one member streams its data into the reducing switch and back, for IN_NETWORK or
// NVLS: switch_route_rate is what its route allows (the NIC share per GPU, or the NVLink port, at
// the profile's efficiency for `op` and `size`); switch_limited_rate adds the switch's own limits
// (intra_node.nvls_bandwidth; SwitchML's header share, pool_size * payload / RTT with the pool
// shared by CollNet's shards, and packet_rate). The flow fidelity slows the flows to and from the
// switch by their ratio.
core::BytesPerSecond switch_route_rate(Algorithm algorithm, core::CollectiveOp op, core::Bytes size,
                                       const ClusterConfig& cluster, const core::NetworkProfile& profile);
core::BytesPerSecond switch_limited_rate(Algorithm algorithm, core::CollectiveOp op, core::Bytes size,
                                         const GroupPlacement& group, const ClusterConfig& cluster,
                                         const core::NetworkProfile& profile);

// NCCL's ring channels on `group`: its members per node when it spans several nodes with the same
// number on each (one ring per channel, entering each node at a different member), else 1.
int ring_channels(const GroupPlacement& group);

// Whether the closed form of `algorithm` applies to `op` on `group` of `cluster` (AUTO always does;
// see the list above).
bool algorithm_applies(Algorithm algorithm, core::CollectiveOp op, const GroupPlacement& group,
                       const ClusterConfig& cluster);

// Bandwidth per rank and latency per algorithm step of one scope (formulas above).
struct LinkScope {
  core::BytesPerSecond bandwidth;
  core::Seconds latency;
};
LinkScope intra_node_scope(const ClusterConfig& cluster, const core::NetworkProfile& profile);
LinkScope inter_node_scope(const ClusterConfig& cluster, const core::NetworkProfile& profile);
// The same for `group`: with pools' own NICs (GroupPlacement::nic_bandwidth_per_gpu, its slowest
// member's share), that share in place of the cluster's nic_bandwidth_per_gpu.
LinkScope inter_node_scope(const ClusterConfig& cluster, const core::NetworkProfile& profile, const GroupPlacement& group);


struct CollectiveCost {
  core::Seconds time;
  Algorithm algorithm = Algorithm::RING;  // the one used (AUTO resolved)
};

// Time of a collective whose per-rank buffer is `size` bytes (nccl-tests' convention: all_reduce and
// broadcast move `size`; all_gather's output and reduce_scatter's input are `size`).
// Ring all_reduce on one bottleneck bandwidth B with per-step latency a: 2(n-1)/n·S/B + 2(n-1)·a.
// AUTO picks the fastest applicable algorithm, as NCCL's tuner does. A group of one rank costs nothing.
// In a hierarchical collective `algorithm` is the one of the across-node phase (RING or TREE).
CollectiveCost collective_cost(core::CollectiveOp op, core::Bytes size, const GroupPlacement& group,
                               const ClusterConfig& cluster, const core::NetworkProfile& profile,
                               Algorithm algorithm = Algorithm::AUTO);

// Time of one send/recv of `size` bytes between two GPUs: the scope's latency + size / bandwidth
// (intra-node scope when same_node, else inter-node).
core::Seconds p2p_time(core::Bytes size, bool same_node, const ClusterConfig& cluster,
                       const core::NetworkProfile& profile);
// The same between ranks `from` and `to` of the cluster: across nodes at the slower node's NIC share
// where pools give their own network. REQUIRES: both in [0, world_size()).
core::Seconds p2p_time(core::Bytes size, int from, int to, const ClusterConfig& cluster,
                       const core::NetworkProfile& profile);

}  // namespace trainsim::network
