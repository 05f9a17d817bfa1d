// SimGrid-backed collective simulation held to its oracles: the closed form where no link is shared,
// `flow` to `step`, monotonicity in bandwidth, and a hand-computed slowdown on an oversubscribed
// uplink. SimGrid builds one platform per process; every TEST runs in its own process
// (gtest_discover_tests) and uses one cluster structure, varying only bandwidths and groups.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "network/collective_cost.hpp"
#include "network/schedule.hpp"
#include "network/topology.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/engine/collective_simulation.hpp"
#include "sim/engine/simgrid_platform.hpp"

namespace trainsim::engine {
namespace {

using core::Bytes;
using core::CollectiveOp;
using core::Seconds;

network::ClusterConfig cluster_of(const core::Json& doc) {
  core::Diagnostics diag;
  core::ObjectReader reader(doc, "test", "/cluster", diag);
  network::ClusterConfig c = network::ClusterConfig::from_json(reader);
  reader.finish();
  diag.throw_if_any();
  return c;
}

// One node of 8 A100s on an NVSwitch.
network::ClusterConfig one_node() { return cluster_of({{"nodes", 1}, {"gpus_per_node", 8}}); }

// 8 nodes of one GPU and one 200 Gb/s NIC on a fat-tree: rings across nodes.
network::ClusterConfig one_gpu_nodes(const std::string& nic = "200 Gb/s") {
  return cluster_of({{"nodes", 8}, {"gpus_per_node", 1}, {"network", {{"nics_per_node", 1}, {"nic_bandwidth", nic}}}});
}

std::vector<int> first(int n) {
  std::vector<int> r(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) r[static_cast<size_t>(i)] = i;
  return r;
}

CollectiveRequest ring(std::vector<int> ranks, Fidelity fidelity, std::vector<Bytes> sizes) {
  CollectiveRequest req;
  req.op = CollectiveOp::ALL_REDUCE;
  req.algorithm = network::Algorithm::RING;
  req.fidelity = fidelity;
  req.ranks = std::move(ranks);
  req.sizes = std::move(sizes);
  return req;
}

const std::vector<Bytes> SIZES{Bytes(1 << 20), Bytes(64 << 20), Bytes(1 << 30)};

// Ring all-reduce where every member has links of its own: each step is one chunk over one route,
// so both SimGrid fidelities must give 2(n-1)/n*S/B + 2(n-1)*a (collective_cost.hpp), B and a the
// scope's bandwidth and per-step latency.
void expect_ring_matches_analytic(const network::ClusterConfig& cluster) {
  const core::Profile profile;
  for (int n : {2, 3, 5, 8}) {
    for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW}) {
      const std::vector<CollectiveResult> sim = simulate_collective(ring(first(n), f, SIZES), cluster, profile);
      const std::vector<CollectiveResult> exact =
          simulate_collective(ring(first(n), Fidelity::ANALYTIC, SIZES), cluster, profile);
      ASSERT_EQ(sim.size(), SIZES.size());
      for (size_t i = 0; i < SIZES.size(); ++i) {
        EXPECT_NEAR(sim[i].time / exact[i].time, 1.0, 0.01)
            << "n=" << n << " size=" << SIZES[i].value() << " fidelity=" << to_string(f);
        EXPECT_GT(sim[i].flows, 0U);
      }
    }
  }
}

// Flow fidelity with symmetry against every flow, on a cluster of 8 nodes of 4 GPUs, one NIC each:
// only one connected component per class of exact copies runs, with the same times to the
// nanosecond. Hierarchical and tree all-reduces: every node's intra-node flows copy the first
// node's and every rail's flows the first rail's (rail-optimized, or a fat-tree of 4-port leaves
// holding whole nodes), so at most 1/rails of the flows run. A flat ring over 2 GPUs of each node
// crosses rails, and GPUs 1 and 2 of node 0 with 1 and 3 of node 1 are not the same on every node:
// fewer flows may run, never other times.
void expect_symmetry_keeps_times(const network::ClusterConfig& cluster) {
  auto run = [&](network::Algorithm a, std::vector<int> ranks, bool symmetry) {
    CollectiveRequest req = ring(std::move(ranks), Fidelity::FLOW, SIZES);
    req.algorithm = a;
    req.use_symmetry = symmetry;
    return simulate_collective(req, cluster, core::Profile{});
  };
  std::vector<int> two_per_node;
  for (int node = 0; node < 8; ++node) {
    two_per_node.push_back(4 * node + 1);
    two_per_node.push_back(4 * node + 3);
  }
  for (network::Algorithm a : {network::Algorithm::HIERARCHICAL, network::Algorithm::TREE}) {
    for (const std::vector<int>& group : {first(32), two_per_node}) {
      const std::vector<CollectiveResult> all = run(a, group, false);
      const std::vector<CollectiveResult> copies = run(a, group, true);
      for (size_t i = 0; i < SIZES.size(); ++i) {
        SCOPED_TRACE(fmt::format("{} over {} GPUs, {} bytes", to_string(a), group.size(), SIZES[i].value()));
        EXPECT_NEAR(copies[i].time.value(), all[i].time.value(), 1e-9);
        // all = 8 nodes x a intra-node flows + r rails x b rail flows, r = GPUs per node <= 8;
        // copies <= a + b.
        const uint64_t rails = group.size() / 8;
        EXPECT_LE(copies[i].flows * rails, all[i].flows);
        EXPECT_LT(copies[i].flows, all[i].flows);
        ASSERT_FALSE(copies[i].top_links.empty());
        EXPECT_NEAR(copies[i].top_links[0].utilization, all[i].top_links[0].utilization, 1e-9);
      }
    }
  }
  const std::vector<int> uneven{1, 2, 5, 7};
  for (const std::vector<int>& group : {two_per_node, uneven}) {
    const std::vector<CollectiveResult> all = run(network::Algorithm::RING, group, false);
    const std::vector<CollectiveResult> copies = run(network::Algorithm::RING, group, true);
    for (size_t i = 0; i < SIZES.size(); ++i) {
      EXPECT_LE(copies[i].flows, all[i].flows);
      EXPECT_NEAR(copies[i].time.value(), all[i].time.value(), 1e-9);
    }
  }
}

TEST(CollectiveSimulation, FlowSymmetryRunsOneNodeAndOneRailWithTheSameTimes) {
  expect_symmetry_keeps_times(cluster_of(
      {{"nodes", 8}, {"gpus_per_node", 4}, {"network", {{"topology", "rail-optimized"}, {"nics_per_node", 4}, {"radix", 4}}}}));
}

TEST(CollectiveSimulation, FlowSymmetryOnAFatTreeWithWholeNodesPerLeaf) {
  const network::ClusterConfig cluster =
      cluster_of({{"nodes", 8}, {"gpus_per_node", 4}, {"network", {{"nics_per_node", 4}, {"radix", 8}}}});
  EXPECT_TRUE(network::Topology::build(cluster).separate_rails());
  expect_symmetry_keeps_times(cluster);
}

// Leaves of 3 NICs split nodes: rails share switch links, and the times still match.
TEST(CollectiveSimulation, FlowSymmetryOnAFatTreeThatSplitsNodes) {
  const network::ClusterConfig cluster =
      cluster_of({{"nodes", 8}, {"gpus_per_node", 4}, {"network", {{"nics_per_node", 4}, {"radix", 6}}}});
  EXPECT_FALSE(network::Topology::build(cluster).separate_rails());
  const std::vector<Bytes> size{Bytes(1 << 30)};
  for (network::Algorithm a : {network::Algorithm::HIERARCHICAL, network::Algorithm::TREE}) {
    CollectiveRequest req = ring(first(32), Fidelity::FLOW, size);
    req.algorithm = a;
    req.use_symmetry = false;
    const CollectiveResult all = simulate_collective(req, cluster, core::Profile{}).at(0);
    req.use_symmetry = true;
    const CollectiveResult copies = simulate_collective(req, cluster, core::Profile{}).at(0);
    EXPECT_NEAR(copies.time.value(), all.time.value(), 1e-9) << to_string(a);
    EXPECT_LE(copies.flows, all.flows);
  }
}

// A flat ring over 64 single-GPU nodes of an ideal switch: every flow is alone on its links and a
// copy of the next one's, except the one that closes the ring (its destination is below its
// source): two flows run, and the time is the closed form's, 2(n-1)/n*S/B + 2(n-1)*a.
TEST(CollectiveSimulation, FlatRingOnAnIdealSwitchRunsTwoFlows) {
  const network::ClusterConfig cluster =
      cluster_of({{"nodes", 64}, {"gpus_per_node", 1}, {"network", {{"nics_per_node", 1}, {"topology", "ideal"}}}});
  const std::vector<CollectiveResult> sim = simulate_collective(ring(first(64), Fidelity::FLOW, SIZES), cluster, {});
  const std::vector<CollectiveResult> exact = simulate_collective(ring(first(64), Fidelity::ANALYTIC, SIZES), cluster, {});
  for (size_t i = 0; i < SIZES.size(); ++i) {
    EXPECT_EQ(sim[i].flows, 2U);
    EXPECT_NEAR(sim[i].time / exact[i].time, 1.0, 0.01) << SIZES[i].value();
  }
}

// Bytes a link carried, from the most utilized links of a result (0 when not listed).
double link_bytes(const CollectiveResult& r, const std::string& link) {
  for (const LinkLoad& l : r.top_links) {
    if (l.link == link) return l.bytes;
  }
  return 0;
}

// NCCL's ring forced across 4 nodes of 8 GPUs: 8 channels, so every NIC of every node sends and
// receives one channel's share, 2(n-1)/n * S/8, and the flow fidelity agrees with the closed form.
TEST(CollectiveSimulation, ForcedRingAcrossNodesUsesEveryNic) {
  const network::ClusterConfig cluster = cluster_of({{"nodes", 4}, {"gpus_per_node", 8}});
  CollectiveRequest req = ring(first(32), Fidelity::FLOW, {Bytes(1 << 30)});
  req.top_links = 1000;
  const CollectiveResult flow = simulate_collective(req, cluster, core::Profile{}).at(0);
  req.fidelity = Fidelity::ANALYTIC;
  const CollectiveResult exact = simulate_collective(req, cluster, core::Profile{}).at(0);
  EXPECT_NEAR(flow.time / exact.time, 1.0, 0.01);
  const double share = 2.0 * 31 / 32 * (1 << 30) / 8;
  for (int node = 0; node < 4; ++node) {
    for (int nic = 0; nic < 8; ++nic) {
      for (const char* dir : {"up", "down"}) {
        EXPECT_NEAR(link_bytes(flow, fmt::format("node{}.nic{}.{}", node, nic, dir)), share, 1.0)
            << node << " " << nic << " " << dir;
      }
    }
  }
}

// In-network aggregation over 8 single-GPU nodes: each NIC carries the buffer once each way (S up,
// S down), where the ring carries 2(n-1)/n * S each way; SwitchML's 8 slots over the RTT slow the
// same bytes to the pool's rate.
TEST(CollectiveSimulation, SwitchAggregationCarriesTheBufferOnceEachWay) {
  core::Json doc = {{"nodes", 8},
                    {"gpus_per_node", 1},
                    {"network", {{"nics_per_node", 1}, {"nic_bandwidth", "100 Gb/s"}, {"in_network_aggregation", "sharp"}}}};
  const double s = 1 << 30;
  CollectiveRequest req = ring(first(8), Fidelity::FLOW, {Bytes(s)});
  req.top_links = 1000;
  const CollectiveResult ring_result = simulate_collective(req, cluster_of(doc), core::Profile{}).at(0);
  req.algorithm = network::Algorithm::IN_NETWORK;
  const CollectiveResult sharp = simulate_collective(req, cluster_of(doc), core::Profile{}).at(0);
  for (int node = 0; node < 8; ++node) {
    for (const char* dir : {"up", "down"}) {
      const std::string nic = fmt::format("node{}.nic0.{}", node, dir);
      EXPECT_NEAR(link_bytes(sharp, nic), s, 1.0) << nic;
      EXPECT_NEAR(link_bytes(ring_result, nic), 2.0 * 7 / 8 * s, 1.0) << nic;
    }
  }
  req.fidelity = Fidelity::ANALYTIC;
  EXPECT_NEAR(sharp.time / simulate_collective(req, cluster_of(doc), core::Profile{}).at(0).time, 1.0, 0.01);
  doc["network"]["in_network_aggregation"] = {{"kind", "switchml"}, {"pool_size", 8}};
  const network::ClusterConfig switchml = cluster_of(doc);
  const core::Seconds analytic = simulate_collective(req, switchml, core::Profile{}).at(0).time;
  req.fidelity = Fidelity::FLOW;
  const CollectiveResult pooled = simulate_collective(req, switchml, core::Profile{}).at(0);
  EXPECT_NEAR(pooled.time / analytic, 1.0, 0.01);
  EXPECT_GT(pooled.time, 2 * sharp.time);  // 8 x 256 B per RTT (>= 2 us) is far below 100 Gb/s
}

TEST(CollectiveSimulation, RingInOneNodeMatchesAnalytic) { expect_ring_matches_analytic(one_node()); }

// A calibrated efficiency curve (intra-node all_reduce: 30% at 1 MiB, 60% at 64 MiB, 78% from 1 GiB)
// slows each size by the curve's factor over the constant efficiency, in the closed form and at
// both SimGrid fidelities alike; other ops keep the constant.
TEST(CollectiveSimulation, EfficiencyCurveScalesEachSizeAsTheClosedFormDoes) {
  const network::ClusterConfig cluster = one_node();
  core::Profile curved;
  curved.network.intra_node.by_size[static_cast<size_t>(CollectiveOp::ALL_REDUCE)] = {
      {double(1 << 20), 0.30}, {double(64 << 20), 0.60}, {double(1 << 30), 0.78}};
  const core::Profile flat;
  const std::vector<CollectiveResult> exact_flat = simulate_collective(ring(first(8), Fidelity::ANALYTIC, SIZES), cluster, flat);
  const std::vector<CollectiveResult> exact = simulate_collective(ring(first(8), Fidelity::ANALYTIC, SIZES), cluster, curved);
  const double base = flat.network.intra_node.bandwidth_efficiency;
  for (size_t i = 0; i < SIZES.size(); ++i) {
    const double e = curved.network.intra_node.efficiency(CollectiveOp::ALL_REDUCE, SIZES[i]);
    const double latency = 14 * (cluster.intra_node.latency + flat.network.intra_node.step_latency).value();
    EXPECT_NEAR(exact[i].time.value() - latency, (exact_flat[i].time.value() - latency) * base / e,
                1e-9 * exact[i].time.value())
        << SIZES[i].value();
  }
  EXPECT_GT(exact[1].time.value(), 1.2 * exact_flat[1].time.value());
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW}) {
    const std::vector<CollectiveResult> sim = simulate_collective(ring(first(8), f, SIZES), cluster, curved);
    for (size_t i = 0; i < SIZES.size(); ++i) {
      EXPECT_NEAR(sim[i].time / exact[i].time, 1.0, 0.01) << "size=" << SIZES[i].value() << " " << to_string(f);
    }
  }
  CollectiveRequest gather = ring(first(8), Fidelity::ANALYTIC, SIZES);
  gather.op = CollectiveOp::ALL_GATHER;
  const std::vector<CollectiveResult> g_curved = simulate_collective(gather, cluster, curved);
  const std::vector<CollectiveResult> g_flat = simulate_collective(gather, cluster, flat);
  for (size_t i = 0; i < SIZES.size(); ++i) EXPECT_EQ(g_curved[i].time, g_flat[i].time);
}

TEST(CollectiveSimulation, FlatRingAcrossNodesMatchesAnalytic) { expect_ring_matches_analytic(one_gpu_nodes()); }

// `flow` against `step` for ring schedules, whose steps each keep every edge busy with one chunk, so
// that one long-lived flow per edge is their steady state. (Tree schedules pipeline only `height`
// pieces; their fill and drain are not a latency term, so `flow` does not bound them to 2%.)
void expect_flow_near_step(const network::ClusterConfig& cluster) {
  const network::Topology topology = network::Topology::build(cluster);
  for (int n : {2, 3, 4, 8}) {
    for (CollectiveOp op : {CollectiveOp::ALL_REDUCE, CollectiveOp::ALL_GATHER, CollectiveOp::REDUCE_SCATTER}) {
      CollectiveRequest req = ring(first(n), Fidelity::STEP, {Bytes(256 << 20), Bytes(1 << 30)});
      req.op = op;
      const std::vector<CollectiveResult> step = simulate_collective(req, cluster, core::Profile{});
      req.fidelity = Fidelity::FLOW;
      const std::vector<CollectiveResult> flow = simulate_collective(req, cluster, core::Profile{});
      for (size_t i = 0; i < step.size(); ++i) {
        EXPECT_NEAR(flow[i].time / step[i].time, 1.0, 0.02)
            << core::to_string(op) << " n=" << n << " size=" << step[i].size.value();
        EXPECT_LE(flow[i].flows, step[i].flows);
      }
    }
  }
}

TEST(CollectiveSimulation, FlowWithinTwoPercentOfStepInOneNode) { expect_flow_near_step(one_node()); }

TEST(CollectiveSimulation, FlowWithinTwoPercentOfStepAcrossNodes) { expect_flow_near_step(one_gpu_nodes()); }

// One engine runs the sizes one after the other on a shared clock: each size measured alone, in
// any order and in another call of the same process, gives the same time.
TEST(CollectiveSimulation, SizesShareOneEngine) {
  const network::ClusterConfig cluster = one_node();
  const std::vector<Bytes> sizes{Bytes(1 << 20), Bytes(1 << 30), Bytes(8 << 20)};
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW}) {
    const std::vector<CollectiveResult> together = simulate_collective(ring(first(8), f, sizes), cluster, {});
    for (size_t i = sizes.size(); i-- > 0;) {
      const std::vector<CollectiveResult> alone = simulate_collective(ring(first(8), f, {sizes[i]}), cluster, {});
      EXPECT_NEAR(alone[0].time.value(), together[i].time.value(), together[i].time.value() * 1e-9);
    }
    EXPECT_LT(together[0].time, together[2].time);
    EXPECT_LT(together[2].time, together[1].time);
  }
}

TEST(CollectiveSimulation, MoreBandwidthIsNeverSlower) {
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW}) {
    std::vector<CollectiveResult> previous;
    for (const char* nic : {"50 Gb/s", "100 Gb/s", "200 Gb/s", "400 Gb/s", "800 Gb/s"}) {
      CollectiveRequest req = ring({}, f, SIZES);
      req.algorithm = network::Algorithm::AUTO;
      const std::vector<CollectiveResult> now = simulate_collective(req, one_gpu_nodes(nic), {});
      for (size_t i = 0; i < previous.size(); ++i) {
        EXPECT_LE(now[i].time, previous[i].time) << nic << " size=" << now[i].size.value() << " " << to_string(f);
      }
      previous = now;
    }
  }
}

// A fabric where two rings collide. 8 nodes of one GPU and one 200 Gb/s NIC (B = 25 GB/s) on a
// fat-tree of radix 4 (p = 2 ports up and down, 3 levels) with 2:1 oversubscription: every
// switch-to-switch link has B/2 = 12.5 GB/s. Leaf 0 holds nodes 0 and 1, and static
// destination-based routing takes up port (destination mod 2): 0 -> 4 and 1 -> 6 both leave leaf 0
// through up port 0 (l1s0.l2s0.up), while 1 -> 5 takes port 1.
// A 2-rank ring all-reduce at flow fidelity is one flow of S bytes each way. With the inter-node
// efficiency e = 0.9 a flow alone runs at e*B/2 = 11.25 GB/s; two flows sharing the uplink get half
// of it each. So for S = 4 GiB the bandwidth term of ring {0, 4} is S/(e*B/2) = 0.3818 s alone or
// next to ring {1, 5}, and 0.7635 s next to ring {1, 6}: a slowdown of exactly 2 on the bandwidth
// term, the same route latency on both.
TEST(CollectiveSimulation, TwoRingsSharingAnOversubscribedUplinkSlowDownByTwo) {
  const network::ClusterConfig cluster =
      cluster_of({{"nodes", 8},
                  {"gpus_per_node", 1},
                  {"network", {{"nics_per_node", 1}, {"radix", 4}, {"oversubscription", 2.0}}}});
  const network::Topology topology = network::Topology::build(cluster);
  const core::NetworkProfile profile = core::NetworkProfile::defaults();
  SimgridPlatform& platform = SimgridPlatform::bind(topology, profile);
  const double size = 4.0 * (1 << 30);

  // Rings given as their members; returns the time of the first ring's bandwidth term.
  auto run_rings = [&](const std::vector<std::vector<int>>& rings) {
    FlowBatch batch;
    for (const std::vector<int>& members : rings) {
      network::GroupView group{members, &topology};
      const network::TransferSchedule schedule =
          network::make_schedule(CollectiveOp::ALL_REDUCE, network::Algorithm::RING, Bytes(size), group);
      for (const network::FlowEdge& e : network::flow_plan(schedule)) {
        const int src = members[static_cast<size_t>(e.src)];
        const int dst = members[static_cast<size_t>(e.dst)];
        std::vector<uint32_t> links;
        topology.route(src, dst, links);
        platform.set_route(src, dst, links, Seconds(0));
        EXPECT_DOUBLE_EQ(e.bytes, size);
        batch.flows.push_back({src, dst, e.bytes, 0, 0});
      }
    }
    const std::vector<Seconds> done = platform.run(batch);
    return std::max(done[0] - platform.route_latency(batch.flows[0].src, batch.flows[0].dst),
                    done[1] - platform.route_latency(batch.flows[1].src, batch.flows[1].dst));
  };
  const double rate = 0.9 * 25e9 / 2;
  const Seconds alone = run_rings({{0, 4}});
  const Seconds apart = run_rings({{0, 4}, {1, 5}});
  const Seconds sharing = run_rings({{0, 4}, {1, 6}});
  EXPECT_NEAR(alone.value(), size / rate, 1e-9);
  EXPECT_NEAR(apart.value(), size / rate, 1e-9);
  EXPECT_NEAR(sharing.value(), 2 * size / rate, 1e-9);
}

// Two sends that static D-mod-k routing puts on one up port, and adaptive routing spreads. 8 nodes of
// one GPU and one 200 Gb/s NIC under radix-4 switches, non-blocking: leaves {0,1} {2,3} {4,5} {6,7}.
// 0 -> 2 and 1 -> 4 both leave leaf 0; their destinations' low digits are both 0, so static routing
// sends both through leaf 0's up port 0 (one NIC's bandwidth): each gets half, 2 S/R for S bytes at
// the NIC's rate R. Adaptive routing pools leaf 0's two up links (2 R): each runs at its NIC's R,
// S/R. One platform structure per process: two tests.
double two_sends_leaving_one_leaf(const std::string& routing) {
  const network::ClusterConfig cluster =
      cluster_of({{"nodes", 8},
                  {"gpus_per_node", 1},
                  {"network", {{"nics_per_node", 1}, {"radix", 4}, {"routing", routing}}}});
  const network::Topology topology = network::Topology::build(cluster);
  SimgridPlatform& platform = SimgridPlatform::bind(topology, core::NetworkProfile::defaults());
  const double size = 4.0 * (1 << 30);
  FlowBatch batch;
  for (const auto& [src, dst] : {std::pair{0, 2}, std::pair{1, 4}}) {
    std::vector<uint32_t> links;
    topology.route(src, dst, links);
    platform.set_route(src, dst, links, Seconds(0));
    batch.flows.push_back({src, dst, size, 0, 0});
  }
  const std::vector<Seconds> done = platform.run(batch);
  double slowest = 0;
  for (size_t i = 0; i < done.size(); ++i) {
    slowest = std::max(slowest, (done[i] - platform.route_latency(batch.flows[i].src, batch.flows[i].dst)).value());
  }
  return slowest / (size / (0.9 * 25e9));  // in units of S/R (R: 200 Gb/s at the default 0.9 efficiency)
}

TEST(CollectiveSimulation, StaticRoutingPutsTwoSendsOnOneUpPort) {
  EXPECT_NEAR(two_sends_leaving_one_leaf("static"), 2.0, 1e-9);
}

TEST(CollectiveSimulation, AdaptiveRoutingSpreadsThemOverTheLeafsUpLinks) {
  EXPECT_NEAR(two_sends_leaving_one_leaf("adaptive"), 1.0, 1e-9);
}

// The estimate's SimGrid rate: ../shared/SIMGRID-NOTES.md's measured points, log-log between them.
// At 2,048 flows, halfway (in log) from 1,024 (0.3 M/s) to 4,096 (0.1 M/s): sqrt(0.3 x 0.1) M/s.
TEST(CollectiveSimulation, SimgridFlowRateFollowsTheMeasuredPoints) {
  EXPECT_DOUBLE_EQ(simgrid_flow_rate(1), 0.5e6);
  EXPECT_DOUBLE_EQ(simgrid_flow_rate(256), 0.5e6);
  EXPECT_NEAR(simgrid_flow_rate(1024), 0.3e6, 1e-6);
  EXPECT_NEAR(simgrid_flow_rate(2048), std::sqrt(0.3e6 * 0.1e6), 1e-6);
  EXPECT_NEAR(simgrid_flow_rate(16384), 0.06e6, 1e-6);
  // Past the last point along the last segment: 4x the flows, 0.6x the rate.
  EXPECT_NEAR(simgrid_flow_rate(65536), 0.06e6 * 0.6, 1e-6);
}

// Batches that overlap on a receiver's link, run twice in one process. At t = 0 GPU 0 sends S bytes
// to GPU 1 (batch A); at tau = S/(2R), when A has half its bytes left, GPUs 2, 3 and 4 send S each to
// GPU 1 (batch B). Every sender's NIC carries one flow at R = 0.9 x 25 GB/s (200 Gb/s at the default
// inter-node efficiency); GPU 1's NIC down link is the bottleneck, shared max-min fairly. With L the
// route latency (every route here crosses the same kind of links): A transfers alone from L to
// tau + L, then the four flows get R/4 each until A ends at tau + L + 2S/R = 2.5 S/R + L; B's flows
// have S/2 left then, at R/3 each: they end 1.5 S/R later, 3.5 S/R + L after B started. GPU 1 takes
// one flow, then four at once: its actor's pool of receives must grow so that no flow waits for a
// receive (SimgridPlatform: a flow starts when it is sent). The second run must give the same times:
// the first run's receives left in the mailboxes would otherwise match its sends.
TEST(CollectiveSimulation, OverlappingBatchesShareAReceiversLinkAndRunAgainAlike) {
  const network::ClusterConfig cluster = one_gpu_nodes();
  const network::Topology topology = network::Topology::build(cluster);
  SimgridPlatform& platform = SimgridPlatform::bind(topology, core::NetworkProfile::defaults());
  const double size = 1e9;
  const double rate = 0.9 * 25e9;
  std::vector<uint32_t> links;
  for (int src : {0, 2, 3, 4}) {
    links.clear();
    topology.route(src, 1, links);
    platform.set_route(src, 1, links, Seconds(0));
  }
  const double latency = platform.route_latency(0, 1).value();
  for (int src : {2, 3, 4}) ASSERT_DOUBLE_EQ(platform.route_latency(src, 1).value(), latency);

  class TwoBatches final : public FlowDriver {
   public:
    TwoBatches(SimgridPlatform& platform, double size, double tau) : platform_(platform), size_(size), tau_(tau) {}
    double advance(double now) override {
      if (done_.size() == 2) return FINISHED;
      if (!started_a_) {
        started_a_ = true;
        ids_.push_back(platform_.start({{{0, 1, size_, 0, 0}}, {}}));
        return tau_;
      }
      if (!started_b_ && now >= tau_) {
        started_b_ = true;
        b_start_ = now;
        ids_.push_back(platform_.start({{{2, 1, size_, 0, 0}, {3, 1, size_, 0, 0}, {4, 1, size_, 0, 0}}, {}}));
      }
      return started_b_ ? NEVER : tau_;
    }
    void batch_done(uint32_t id, const std::vector<Seconds>& done) override {
      done_.push_back({id == ids_.front() ? 0 : 1, done});
    }
    // Flow completions of batch A (0) or B (1), from the batch's start.
    std::vector<Seconds> of(int batch) const {
      for (const auto& [b, done] : done_) {
        if (b == batch) return done;
      }
      return {};
    }
    double b_start() const { return b_start_; }

   private:
    SimgridPlatform& platform_;
    double size_, tau_, b_start_ = 0;
    bool started_a_ = false, started_b_ = false;
    std::vector<uint32_t> ids_;
    std::vector<std::pair<int, std::vector<Seconds>>> done_;
  };

  const double tau = size / (2 * rate);
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE(fmt::format("run {}", run));
    TwoBatches driver(platform, size, tau);
    platform.simulate(driver);
    const std::vector<Seconds> a = driver.of(0);
    const std::vector<Seconds> b = driver.of(1);
    ASSERT_EQ(a.size(), 1U);
    ASSERT_EQ(b.size(), 3U);
    EXPECT_NEAR(driver.b_start(), tau, 1e-12);
    EXPECT_NEAR(a[0].value(), 2.5 * size / rate + latency, 1e-9);
    for (const Seconds& d : b) EXPECT_NEAR(d.value(), 3.5 * size / rate + latency, 1e-9);
  }
}

TEST(CollectiveSimulation, AnalyticFidelityIsTheClosedForm) {
  const network::ClusterConfig cluster = one_gpu_nodes();
  const core::Profile profile;
  const std::vector<CollectiveResult> r = simulate_collective(ring(first(8), Fidelity::ANALYTIC, SIZES), cluster, profile);
  for (size_t i = 0; i < SIZES.size(); ++i) {
    const network::CollectiveCost cost =
        network::collective_cost(CollectiveOp::ALL_REDUCE, SIZES[i], network::GroupPlacement::of(first(8), cluster),
                                 cluster, profile.network, network::Algorithm::RING);
    EXPECT_EQ(r[i].time, cost.time);
    EXPECT_DOUBLE_EQ(r[i].busbw, SIZES[i].value() / cost.time.value() * 2 * 7 / 8);
    EXPECT_EQ(r[i].flows, 0U);
  }
}

TEST(CollectiveSimulation, LinkStatisticsCountRouteBytes) {
  // Ring all-reduce of S over 8 GPUs on one NVSwitch: every GPU's up and down NVLink carry
  // 2(n-1)/n*S, and the ring keeps them busy for the whole run minus the latency terms.
  const Bytes size(1 << 30);
  CollectiveRequest req = ring(first(8), Fidelity::FLOW, {size});
  req.top_links = 3;
  const std::vector<CollectiveResult> r = simulate_collective(req, one_node(), {});
  ASSERT_EQ(r[0].top_links.size(), 3U);
  for (const LinkLoad& l : r[0].top_links) {
    EXPECT_DOUBLE_EQ(l.bytes, 2.0 * 7 / 8 * size.value()) << l.link;
    EXPECT_GT(l.utilization, 0.95);
    EXPECT_LE(l.utilization, 1.0 + 1e-9);
  }
}

// An all-to-all whose group spans nodes (an MoE expert group folded over tensor and data ranks: 32
// H100s on 4 rail-optimized nodes of 8) sends each peer S/32: the 7 peers of the node over NVLink,
// the 24 others through the NICs. Each GPU's NIC carries 24/32·S each way. Its NVLink port carries
// the 7 intra-node blocks and, NCCL's PXN on a rail-optimized fabric, the 21 blocks bound for other
// rails, which first cross NVLink to the GPU on the destination's rail: 28/32·S. The NICs are the
// bottleneck: time = 24/32·S / (50 GB/s x 0.90, the default inter-node efficiency of
// NetworkProfile::defaults) plus per-peer latencies (< 2% at 1 GiB), in both fidelities
// (collective_cost.hpp's DIRECT). Costing every peer on the NICs would give 31/24 of that, every
// peer on NVLink less than a tenth.
TEST(CollectiveSimulation, AllToAllAcrossNodesUsesNvlinkInsideAndNicsAcross) {
  const network::ClusterConfig cluster = cluster_of(
      {{"gpu", "H100-SXM5-80GB"},
       {"nodes", 4},
       {"gpus_per_node", 8},
       {"intra_node", {{"fabric", "nvswitch"}, {"bandwidth", "450 GB/s"}}},
       {"network", {{"topology", "rail-optimized"}, {"nics_per_node", 8}, {"nic_bandwidth", "400 Gb/s"}}}});
  const Bytes size(1 << 30);
  CollectiveRequest req;
  req.op = CollectiveOp::ALL_TO_ALL;
  req.algorithm = network::Algorithm::DIRECT;
  req.ranks = first(32);
  req.sizes = {size};
  req.top_links = 1000;
  const double nic_share = 24.0 / 32 * size.value() / (50e9 * 0.90);
  for (Fidelity f : {Fidelity::FLOW, Fidelity::ANALYTIC}) {
    req.fidelity = f;
    const std::vector<CollectiveResult> r = simulate_collective(req, cluster, core::Profile{});
    EXPECT_NEAR(r[0].time.value() / nic_share, 1.0, 0.02) << to_string(f);
    if (f != Fidelity::FLOW) continue;
    int nic_links = 0, nvlink_links = 0;
    for (const LinkLoad& l : r[0].top_links) {
      if (l.link.find(".nic") != std::string::npos) {
        ++nic_links;
        EXPECT_DOUBLE_EQ(l.bytes, 24.0 / 32 * size.value()) << l.link;
      } else if (l.link.find(".nvlink") != std::string::npos) {
        ++nvlink_links;
        EXPECT_DOUBLE_EQ(l.bytes, 28.0 / 32 * size.value()) << l.link;
      }
    }
    EXPECT_EQ(nic_links, 2 * 32);     // up and down of every GPU's NIC
    EXPECT_EQ(nvlink_links, 2 * 32);  // and of every GPU's NVLink port
  }
}

TEST(CollectiveSimulation, ASecondPlatformStructureIsRefused) {
  simulate_collective(ring(first(2), Fidelity::FLOW, {Bytes(1 << 20)}), one_node(), {});
  EXPECT_THROW(simulate_collective(ring(first(2), Fidelity::FLOW, {Bytes(1 << 20)}), one_gpu_nodes(), {}),
               core::InternalError);
}

}  // namespace
}  // namespace trainsim::engine
