#include "network/collective_cost.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <utility>

#include "tests/network/fixtures.hpp"

namespace trainsim::network {
namespace {

using core::Bytes;
using core::CollectiveOp;

using testing::ALL_OPS;

ClusterConfig cluster(int nodes, int gpus_per_node) {
  ClusterConfig c;
  c.gpu_spec = *core::find_gpu(c.gpu);
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.intra_node.bandwidth = core::BytesPerSecond(300e9);
  c.intra_node.latency = core::Seconds(1e-6);
  c.network.nics_per_node = gpus_per_node;
  c.network.nic_bandwidth = core::BytesPerSecond(25e9);
  c.network.latency = core::Seconds(2e-6);
  return c;
}

core::NetworkProfile profile() {
  core::NetworkProfile p;
  p.intra_node = {0.8, core::Seconds(4e-6)};
  p.inter_node = {0.9, core::Seconds(8e-6)};
  return p;
}

void expect_relative(double actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, 1e-12 * std::abs(expected)) << what;
}

// Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of workstations" (JPDC
// 2009), and NCCL's documentation (docs.nvidia.com/deeplearning/nccl, "Performance: ring"): a ring
// all-reduce of S bytes over n ranks sends 2(n-1)/n*S per rank in 2(n-1) steps.
TEST(CollectiveCost, RingAllReduceInsideOneNodeMatchesTheClosedForm) {
  const ClusterConfig c = cluster(1, 8);
  const core::NetworkProfile p = profile();
  const double b = 300e9 * 0.8;
  const double alpha = 1e-6 + 4e-6;
  for (int n : {2, 3, 4, 7, 8}) {
    for (double s : {1.0, 4096.0, 1e6, 1e9}) {
      const CollectiveCost cost = collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {n, 1, n}, c, p, Algorithm::RING);
      expect_relative(cost.time.value(), 2.0 * (n - 1) / n * s / b + 2.0 * (n - 1) * alpha,
                      "n=" + std::to_string(n) + " S=" + std::to_string(s));
      EXPECT_EQ(cost.algorithm, Algorithm::RING);
    }
  }
}

// Same oracle with one rank per node: a flat ring over the NICs.
TEST(CollectiveCost, RingAllReduceAcrossNodesWithOneRankPerNodeMatchesTheClosedForm) {
  const ClusterConfig c = cluster(8, 8);
  const core::NetworkProfile p = profile();
  const double b = 25e9 * 0.9;
  const double alpha = 2e-6 + 8e-6;
  for (int n : {2, 3, 4, 7, 8}) {
    std::vector<int> ranks;
    for (int i = 0; i < n; ++i) ranks.push_back(i * 8 + 3);
    const GroupPlacement g = GroupPlacement::of(ranks, c);
    ASSERT_EQ(g, (GroupPlacement{n, n, 1}));
    const double s = 256e6;
    expect_relative(collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), g, c, p, Algorithm::RING).time.value(),
                    2.0 * (n - 1) / n * s / b + 2.0 * (n - 1) * alpha, "n=" + std::to_string(n));
  }
}

// nccl-tests doc/PERFORMANCE.md: reduce_scatter and all_gather move (n-1)/n of the buffer in n-1 steps.
TEST(CollectiveCost, RingReduceScatterAndAllGatherMoveOneShareLess) {
  const ClusterConfig c = cluster(1, 8);
  const core::NetworkProfile p = profile();
  const double s = 1e8;
  const double expected = 7.0 / 8 * s / (300e9 * 0.8) + 7 * 5e-6;
  for (CollectiveOp op : {CollectiveOp::REDUCE_SCATTER, CollectiveOp::ALL_GATHER}) {
    expect_relative(collective_cost(op, Bytes(s), {8, 1, 8}, c, p).time.value(), expected, std::string(core::to_string(op)));
  }
}

// The NCCL-like hierarchy: intra-node reduce-scatter, an all-reduce of S/k across nodes on each of the
// k rails, intra-node all-gather.
// Reduce-scatter in the node, all-reduce of S/k on the rails, all-gather in the node, pipelined as
// NCCL pipelines chunks: the slowest bandwidth term (the node's two phases share its NVLink ports)
// plus every phase's latency.
TEST(CollectiveCost, HierarchicalAllReducePipelinesReduceScatterRailAllReduceAllGather) {
  const core::NetworkProfile p = profile();
  const int k = 8;
  const int m = 4;
  for (const auto& [s, nvlink] : {std::pair{1e9, 300e9}, std::pair{1e9, 40e9}, std::pair{1e4, 300e9}}) {
    ClusterConfig c = cluster(4, 8);
    c.intra_node.bandwidth = core::BytesPerSecond(nvlink);
    const double intra_bandwidth = (k - 1.0) / k * s / (nvlink * 0.8);
    const double intra_latency = (k - 1) * 5e-6;
    const double inter_bandwidth = 2.0 * (m - 1) / m * (s / k) / (25e9 * 0.9);
    const double inter_latency = 2.0 * (m - 1) * 10e-6;
    const CollectiveCost cost =
        collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {32, 4, 8}, c, p, Algorithm::HIERARCHICAL);
    expect_relative(cost.time.value(),
                    std::max(2 * intra_bandwidth, inter_bandwidth) + 2 * intra_latency + inter_latency,
                    fmt::format("4 nodes x 8 GPUs, {} bytes, NVLink {} B/s", s, nvlink));
  }
}

// NCCL's double binary tree (Sanders, Speck & Träff 2009; NCCL 2.4 release notes): log2(n) hops each
// way, the whole buffer sent up and down once.
TEST(CollectiveCost, TreeAllReduceAcrossNodesHasLogarithmicLatency) {
  const ClusterConfig c = cluster(64, 8);
  const core::NetworkProfile p = profile();
  const double s = 1e6;
  const CollectiveCost cost = collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {64, 64, 1}, c, p, Algorithm::TREE);
  expect_relative(cost.time.value(), 2 * s / (25e9 * 0.9) + 2 * 6 * 10e-6, "64 nodes");
  EXPECT_EQ(cost.algorithm, Algorithm::TREE);
}

// nccl-tests doc/PERFORMANCE.md, "Bus bandwidth".
TEST(CollectiveCost, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(core::bus_bandwidth_factor(CollectiveOp::ALL_REDUCE, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(core::bus_bandwidth_factor(CollectiveOp::REDUCE_SCATTER, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(core::bus_bandwidth_factor(CollectiveOp::ALL_GATHER, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(core::bus_bandwidth_factor(CollectiveOp::ALL_TO_ALL, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(core::bus_bandwidth_factor(CollectiveOp::BROADCAST, 8), 1.0);
  EXPECT_DOUBLE_EQ(core::bus_bandwidth_factor(CollectiveOp::REDUCE, 8), 1.0);
  EXPECT_DOUBLE_EQ(core::bus_bandwidth_factor(CollectiveOp::ALL_REDUCE, 1), 0.0);
}

// NCCL's tuner (src/graph/tuning.cc) prefers trees for small messages at scale (latency ~log n) and
// rings for large ones (bandwidth 2(n-1)/n*S/B < 2*S/B). Over m = 64 nodes the ring's extra latency,
// 2(m-1-log2 m)*a, outweighs its bandwidth saving 2/m*S_rail/B until S_rail = m*B*a*(m-1-log2 m), about
// 0.8 GB per rail here, so "large" is 16 GiB.
TEST(CollectiveCost, AutoPicksTreeForTinyMessagesAcrossManyNodesAndRingForLarge) {
  const ClusterConfig c = cluster(64, 8);
  const core::NetworkProfile p = profile();
  for (const GroupPlacement g : {GroupPlacement{512, 64, 8}, GroupPlacement{64, 64, 1}}) {
    const CollectiveCost tiny = collective_cost(CollectiveOp::ALL_REDUCE, Bytes(4096), g, c, p);
    EXPECT_EQ(tiny.algorithm, Algorithm::TREE) << g.ranks;
    EXPECT_LT(tiny.time, collective_cost(CollectiveOp::ALL_REDUCE, Bytes(4096), g, c, p, Algorithm::RING).time);
    // AUTO's ring over several GPUs of each node is the hierarchy.
    const CollectiveCost large = collective_cost(CollectiveOp::ALL_REDUCE, Bytes(16 * core::GiB), g, c, p);
    EXPECT_EQ(large.algorithm, g.ranks_per_node > 1 ? Algorithm::HIERARCHICAL : Algorithm::RING) << g.ranks;
    EXPECT_LT(large.time, collective_cost(CollectiveOp::ALL_REDUCE, Bytes(16 * core::GiB), g, c, p, Algorithm::TREE).time);
  }
  // Inside one node NCCL's tree is a chain, never faster than the ring.
  EXPECT_EQ(collective_cost(CollectiveOp::ALL_REDUCE, Bytes(8), {8, 1, 8}, c, p).algorithm, Algorithm::RING);
  // No tree for reduce_scatter: a request for one falls back to the ring.
  EXPECT_EQ(collective_cost(CollectiveOp::REDUCE_SCATTER, Bytes(8), {64, 64, 1}, c, p, Algorithm::TREE).algorithm,
            Algorithm::RING);
}

TEST(CollectiveCost, OneRankCostsNothing) {
  const ClusterConfig c = cluster(1, 8);
  for (CollectiveOp op : ALL_OPS) EXPECT_EQ(collective_cost(op, Bytes(1e9), {1, 1, 1}, c, profile()).time.value(), 0.0);
}

// Property: over every op, group shape and size, more bandwidth (NVLink or NIC) never makes a
// collective slower, a larger buffer never makes it faster, and oversubscription never helps.
TEST(CollectiveCost, MoreBandwidthIsNeverSlowerAndMoreBytesNeverFaster) {
  const core::NetworkProfile p = profile();
  const GroupPlacement groups[] = {{2, 1, 2}, {8, 1, 8}, {4, 4, 1}, {16, 2, 8}, {256, 32, 8}, {1024, 128, 8}, {96, 48, 2}};
  for (CollectiveOp op : ALL_OPS) {
    for (const GroupPlacement& g : groups) {
      double previous = 0;
      for (double s = 1; s <= 64 * core::GiB; s *= 4) {
        const ClusterConfig base = cluster(128, 8);
        ClusterConfig faster_nvlink = base;
        faster_nvlink.intra_node.bandwidth *= 2;
        ClusterConfig faster_nic = base;
        faster_nic.network.nic_bandwidth *= 2;
        ClusterConfig oversubscribed = base;
        oversubscribed.network.oversubscription = 3;
        const double t = collective_cost(op, Bytes(s), g, base, p).time.value();
        const std::string what = std::string(core::to_string(op)) + " n=" + std::to_string(g.ranks) + " S=" + std::to_string(s);
        EXPECT_LE(collective_cost(op, Bytes(s), g, faster_nvlink, p).time.value(), t) << what;
        EXPECT_LE(collective_cost(op, Bytes(s), g, faster_nic, p).time.value(), t) << what;
        EXPECT_GE(collective_cost(op, Bytes(s), g, oversubscribed, p).time.value(), t) << what;
        EXPECT_GE(t, previous) << what;
        previous = t;
      }
    }
  }
}

TEST(CollectiveCost, OversubscriptionDividesTheInterNodeShare) {
  ClusterConfig c = cluster(4, 8);
  c.network.oversubscription = 2;
  EXPECT_DOUBLE_EQ(inter_node_scope(c, profile()).bandwidth.value(), 25e9 * 0.9 / 2);
  EXPECT_DOUBLE_EQ(inter_node_scope(c, profile()).latency.value(), 10e-6);
  EXPECT_DOUBLE_EQ(intra_node_scope(c, profile()).bandwidth.value(), 300e9 * 0.8);
}

TEST(GroupPlacement, CountsNodesAndTheBusiestNode) {
  const ClusterConfig c = cluster(4, 8);
  EXPECT_EQ(GroupPlacement::of({0, 1, 2, 3, 4, 5, 6, 7}, c), (GroupPlacement{8, 1, 8}));
  EXPECT_EQ(GroupPlacement::of({1, 9, 17, 25}, c), (GroupPlacement{4, 4, 1}));
  EXPECT_EQ(GroupPlacement::of({0, 4, 8, 12, 16, 20, 24, 28}, c), (GroupPlacement{8, 4, 2}));
  EXPECT_EQ(GroupPlacement::of({6, 7, 8}, c), (GroupPlacement{3, 2, 2}));
}

TEST(P2pTime, IsLatencyPlusSizeOverTheScopesBandwidth) {
  const ClusterConfig c = cluster(2, 8);
  expect_relative(p2p_time(Bytes(1e6), true, c, profile()).value(), 5e-6 + 1e6 / 240e9, "NVLink");
  expect_relative(p2p_time(Bytes(1e6), false, c, profile()).value(), 10e-6 + 1e6 / 22.5e9, "NIC");
}


// Thakur, Rabenseifner & Gropp 2005, section 4: recursive halving reduce-scatter moves (n-1)/n*S in
// log2 n steps; Rabenseifner's all-reduce twice that. Node-major on 4 nodes x 8: the distances
// 1, 2, 4 stay in the node (7/32 of S, 3 steps), 8 and 16 cross it (24/32 of S, 2 steps).
TEST(CollectiveCost, HalvingDoublingMatchesThakurRabenseifnerGropp) {
  const ClusterConfig c = cluster(4, 8);
  const core::NetworkProfile p = profile();
  const double s = 1e9;
  const double one_pass = 7.0 / 32 * s / 240e9 + 3 * 5e-6 + 24.0 / 32 * s / 22.5e9 + 2 * 10e-6;
  const GroupPlacement g{32, 4, 8};
  expect_relative(collective_cost(CollectiveOp::REDUCE_SCATTER, Bytes(s), g, c, p, Algorithm::HALVING_DOUBLING).time.value(),
                  one_pass, "reduce_scatter");
  expect_relative(collective_cost(CollectiveOp::ALL_GATHER, Bytes(s), g, c, p, Algorithm::HALVING_DOUBLING).time.value(),
                  one_pass, "all_gather");
  const CollectiveCost ar = collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), g, c, p, Algorithm::HALVING_DOUBLING);
  expect_relative(ar.time.value(), 2 * one_pass, "all_reduce");
  EXPECT_EQ(ar.algorithm, Algorithm::HALVING_DOUBLING);
  // Inside one node of 8: 2 * (7/8*S/B + 3a).
  expect_relative(
      collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {8, 1, 8}, c, p, Algorithm::HALVING_DOUBLING).time.value(),
      2 * (7.0 / 8 * s / 240e9 + 3 * 5e-6), "one node");
  // Not a power of two: falls back to the ring.
  EXPECT_EQ(collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {6, 1, 6}, c, p, Algorithm::HALVING_DOUBLING).algorithm,
            Algorithm::RING);
}

// Direct: every peer gets its share in one posted send; 2 nodes x 4: 3 local peers, 4 remote.
TEST(CollectiveCost, DirectSendsEachPeerItsShareAtOnce) {
  const ClusterConfig c = cluster(2, 4);
  const core::NetworkProfile p = profile();
  const double s = 8e8;
  const double expected = std::max(3.0 / 8 * s / 240e9, 4.0 / 8 * s / (25e9 * 0.9)) + 3 * 5e-6 + 4 * 10e-6;
  for (CollectiveOp op : {CollectiveOp::ALL_GATHER, CollectiveOp::REDUCE_SCATTER, CollectiveOp::ALL_TO_ALL}) {
    const CollectiveCost cost = collective_cost(op, Bytes(s), {8, 2, 4}, c, p, Algorithm::DIRECT);
    expect_relative(cost.time.value(), expected, std::string(core::to_string(op)));
    EXPECT_EQ(cost.algorithm, Algorithm::DIRECT);
  }
  EXPECT_EQ(collective_cost(CollectiveOp::ALL_TO_ALL, Bytes(s), {8, 2, 4}, c, p).algorithm, Algorithm::DIRECT);
}

// SHArP (Graham et al. 2016): the buffer goes up once and comes back once, at the NIC share (the
// leaf reduces before the oversubscribed uplinks); over several GPUs of each node as NCCL's CollNet:
// reduce-scatter in the node, the 1/k shard through the switches, all-gather in the node. NVLS: the
// buffer once up and down inside the node, at the smaller of the NVLink port and the NVLS rate
// (0.61 x NVLink by default: 183 GB/s here, below 240).
TEST(CollectiveCost, SwitchReductionsSendTheBufferOnce) {
  ClusterConfig c = cluster(16, 8);
  c.network.in_network_reduction = true;
  c.network.oversubscription = 8;
  c.intra_node.nvls = true;
  const core::NetworkProfile p = profile();
  const double s = 1e9;
  const CollectiveCost flat = collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {16, 16, 1}, c, p, Algorithm::IN_NETWORK);
  expect_relative(flat.time.value(), s / 22.5e9 + 2 * 10e-6, "in-network, one GPU per node");
  const CollectiveCost sharp = collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {128, 16, 8}, c, p, Algorithm::IN_NETWORK);
  const double in_node = 7.0 / 8 * s / 240e9;
  expect_relative(sharp.time.value(), std::max(2 * in_node, s / 8 / 22.5e9) + 2 * 7 * 5e-6 + 2 * 10e-6, "CollNet");
  EXPECT_EQ(sharp.algorithm, Algorithm::IN_NETWORK);
  // reduce_scatter stays flat: each GPU streams its buffer once.
  expect_relative(collective_cost(CollectiveOp::REDUCE_SCATTER, Bytes(s), {128, 16, 8}, c, p, Algorithm::IN_NETWORK)
                      .time.value(),
                  s / 22.5e9 + 2 * 10e-6, "in-network reduce_scatter");
  const CollectiveCost nvls = collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {8, 1, 8}, c, p, Algorithm::NVLS);
  expect_relative(nvls.time.value(), s / (300e9 * NVLS_SHARE) + 2 * 5e-6, "nvls");
  c.intra_node.nvls_bandwidth = core::BytesPerSecond(400e9);
  expect_relative(collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {8, 1, 8}, c, p, Algorithm::NVLS).time.value(),
                  s / 240e9 + 2 * 5e-6, "nvls above the port");
  // Large buffers: AUTO takes them over the rings (S/B < 2(n-1)/n*S/B); NVLS never across nodes.
  EXPECT_EQ(collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {8, 1, 8}, c, p).algorithm, Algorithm::NVLS);
  EXPECT_EQ(collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {128, 16, 8}, c, p).algorithm, Algorithm::IN_NETWORK);
  EXPECT_EQ(collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {128, 16, 8}, c, p, Algorithm::NVLS).algorithm,
            Algorithm::RING);
  // Without them in the cluster, AUTO is ring or tree as before.
  EXPECT_EQ(collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {8, 1, 8}, cluster(16, 8), p).algorithm, Algorithm::RING);
}

// SwitchML (Sapio et al., NSDI 2021): 8 workers of one GPU on 100 Gb/s NICs under one switch. At
// line rate a worker streams 12.5e9 * 0.9 * 256/322 B/s; with 64 slots of 256 B over the 10 us
// RTT (2 us + 8 us step latency) the pool allows 1.6384e9 B/s; at 1e6 packets/s, 2.56e8 B/s.
TEST(CollectiveCost, SwitchmlStreamsAtTheSmallestOfLineRatePoolAndPacketRate) {
  ClusterConfig c = cluster(8, 1);
  c.network.nic_bandwidth = core::BytesPerSecond(12.5e9);
  c.network.aggregation.kind = AggregationKind::SWITCHML;
  const core::NetworkProfile p = profile();
  const GroupPlacement g{8, 8, 1};
  const double s = 1e9;
  const auto time = [&] { return collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), g, c, p, Algorithm::IN_NETWORK).time.value(); };
  expect_relative(time(), s / (12.5e9 * 0.9 * 256 / 322) + 2 * 10e-6, "line rate");
  // The ring moves 2(n-1)/n = 1.75 buffers per NIC at line rate: 1.75 * 256/322 = 1.39x SwitchML's time.
  const double ring = collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), g, c, p, Algorithm::RING).time.value();
  EXPECT_NEAR(ring / time(), 1.75 * 256 / 322, 0.01);
  c.network.aggregation.pool_size = 64;
  expect_relative(time(), s / (64 * 256 / 10e-6) + 2 * 10e-6, "pool");
  c.network.aggregation.packet_rate = 1e6;
  expect_relative(time(), s / 2.56e8 + 2 * 10e-6, "packet rate");
  // One switch of 32 down ports holds 32 single-NIC nodes; SwitchML has no all_gather.
  EXPECT_TRUE(algorithm_applies(Algorithm::IN_NETWORK, CollectiveOp::ALL_REDUCE, g, c));
  EXPECT_FALSE(algorithm_applies(Algorithm::IN_NETWORK, CollectiveOp::ALL_GATHER, g, c));
  EXPECT_FALSE(algorithm_applies(Algorithm::IN_NETWORK, CollectiveOp::ALL_REDUCE, {64, 64, 1}, c));
}

// NCCL's ring over 4 nodes of 8 GPUs: 8 channels, each GPU the source of one channel's inter-node
// hop (1/8 of 2(n-1)/n * S through its NIC) and of 7 channels' NVLink hops; a chunk crosses 4
// inter-node and 28 intra-node hops per turn of the ring, 2(n-1) hops in all.
TEST(CollectiveCost, NcclRingAcrossNodesUsesEveryNicOfTheNode) {
  const ClusterConfig c = cluster(4, 8);
  const core::NetworkProfile p = profile();
  const double s = 1e9;
  const double factor = 2.0 * 31 / 32;
  const double expected = std::max(factor / 8 * s / 22.5e9, factor * 7 / 8 * s / 240e9) +
                          62 * (4.0 / 32 * 10e-6 + 28.0 / 32 * 5e-6);
  const CollectiveCost ring = collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {32, 4, 8}, c, p, Algorithm::RING);
  expect_relative(ring.time.value(), expected, "8 channels");
  EXPECT_EQ(ring.algorithm, Algorithm::RING);
  EXPECT_EQ(ring_channels({32, 4, 8}), 8);
  // An uneven group runs one ring: every inter-node hop carries the whole 2(n-1)/n * S.
  EXPECT_EQ(ring_channels({20, 4, 8}), 1);
  const double single = collective_cost(CollectiveOp::ALL_REDUCE, Bytes(s), {20, 4, 8}, c, p, Algorithm::RING).time.value();
  EXPECT_GT(single, 2.0 * 19 / 20 * s / 22.5e9);
}

// HIERARCHICAL is the ring-across hierarchy AUTO uses for multi-node groups.
TEST(CollectiveCost, HierarchicalIsTheRingHierarchy) {
  const ClusterConfig c = cluster(4, 8);
  const core::NetworkProfile p = profile();
  for (CollectiveOp op : {CollectiveOp::ALL_REDUCE, CollectiveOp::REDUCE_SCATTER, CollectiveOp::ALL_GATHER}) {
    const CollectiveCost h = collective_cost(op, Bytes(1e9), {32, 4, 8}, c, p, Algorithm::HIERARCHICAL);
    EXPECT_EQ(h.algorithm, Algorithm::HIERARCHICAL);
    const CollectiveCost automatic = collective_cost(op, Bytes(1e9), {32, 4, 8}, c, p);
    EXPECT_EQ(automatic.algorithm, Algorithm::HIERARCHICAL);
    EXPECT_EQ(h.time, automatic.time);
  }
}

TEST(Algorithm, NamesRoundTrip) {
  for (Algorithm a : ALL_ALGORITHMS) {
    Algorithm parsed = Algorithm::AUTO;
    ASSERT_TRUE(parse_algorithm(to_string(a), parsed));
    EXPECT_EQ(parsed, a);
  }
  Algorithm untouched = Algorithm::TREE;
  EXPECT_FALSE(parse_algorithm("collnet", untouched));
  EXPECT_EQ(to_string(Algorithm::HALVING_DOUBLING), "halving-doubling");
  EXPECT_EQ(to_string(Algorithm::IN_NETWORK), "in-network");
  EXPECT_EQ(untouched, Algorithm::TREE);
}

}  // namespace
}  // namespace trainsim::network
