#include "network/topology.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

namespace trainsim::network {
namespace {

ClusterConfig cluster(int nodes, int gpus_per_node, TopologyKind kind, IntraFabric fabric = IntraFabric::NVSWITCH) {
  ClusterConfig c;
  c.gpu_spec = *core::find_gpu(c.gpu);
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.intra_node.fabric = fabric;
  c.intra_node.bandwidth = core::BytesPerSecond(300e9);
  c.network.topology = kind;
  c.network.nics_per_node = gpus_per_node;
  return c;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string gpu_prefix(const Topology& t, int gpu) {
  return fmt::format("node{}.gpu{}.", t.node_of(gpu), gpu % t.gpus_per_node());
}

std::vector<std::string> route_names(const Topology& t, int from, int to) {
  std::vector<uint32_t> ids;
  t.route(from, to, ids);
  std::vector<std::string> names;
  for (uint32_t id : ids) names.push_back(t.links()[id].name);
  return names;
}

struct Case {
  std::string name;
  ClusterConfig config;
};

std::vector<Case> small_clusters() {
  std::vector<Case> cases;
  for (TopologyKind kind : {TopologyKind::FAT_TREE, TopologyKind::RAIL_OPTIMIZED, TopologyKind::DRAGONFLY,
                            TopologyKind::TORUS, TopologyKind::IDEAL}) {
    for (IntraFabric fabric : {IntraFabric::NVSWITCH, IntraFabric::NVLINK_MESH, IntraFabric::PCIE}) {
      ClusterConfig c = cluster(12, 4, kind, fabric);
      c.network.radix = 4;
      if (fabric == IntraFabric::PCIE) c.network.nics_per_node = 2;
      cases.push_back({fmt::format("{} {}", to_string(kind), to_string(fabric)), c});
    }
  }
  return cases;
}

// Every route starts at the source GPU's port and ends at the destination's, uses no link twice, and
// stays inside the node when both GPUs share one; its latency is the scope's latency.
TEST(Topology, RoutesRunFromPortToPortWithoutRepeatsAndStayInTheirNode) {
  for (const Case& c : small_clusters()) {
    const Topology t = Topology::build(c.config);
    const bool mesh = c.config.intra_node.fabric == IntraFabric::NVLINK_MESH;
    for (int from = 0; from < t.gpu_count(); ++from) {
      for (int to = 0; to < t.gpu_count(); ++to) {
        if (from == to) continue;
        const std::vector<std::string> names = route_names(t, from, to);
        const std::string what = fmt::format("{}: {} -> {}", c.name, from, to);
        ASSERT_FALSE(names.empty()) << what;
        EXPECT_TRUE(starts_with(names.front(), gpu_prefix(t, from))) << what << ": " << names.front();
        const std::string last_expected =
            mesh && names.size() == 1 ? gpu_prefix(t, from) + fmt::format("gpu{}.nvlink", to % t.gpus_per_node())
                                      : gpu_prefix(t, to);
        EXPECT_TRUE(starts_with(names.back(), last_expected)) << what << ": " << names.back();
        EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size()) << what;
        if (t.node_of(from) == t.node_of(to)) {
          for (const std::string& n : names)
            EXPECT_TRUE(starts_with(n, fmt::format("node{}.", t.node_of(from)))) << what << ": " << n;
          std::vector<uint32_t> ids;
          t.route(from, to, ids);
          double latency = 0;
          for (uint32_t id : ids) latency += t.links()[id].latency.value();
          EXPECT_NEAR(latency, 1e-6, 1e-15) << what;
        }
      }
    }
  }
}

// Across nodes on the same rail of a non-PCIe node, the route's latency is network.latency: it is
// end-to-end, NIC to NIC.
TEST(Topology, InterNodeLatencyIsTheNetworksEndToEndLatency) {
  for (const Case& c : small_clusters()) {
    if (c.config.intra_node.fabric == IntraFabric::PCIE) continue;
    const Topology t = Topology::build(c.config);
    std::vector<uint32_t> ids;
    t.route(1, 4 * 7 + 1, ids);
    double latency = 0;
    for (uint32_t id : ids) latency += t.links()[id].latency.value();
    EXPECT_NEAR(latency, 2e-6, 1e-15) << c.name;
  }
}

TEST(Topology, RailOptimizedRoutesOfOneRailStayOnItsSwitches) {
  ClusterConfig c = cluster(64, 8, TopologyKind::RAIL_OPTIMIZED);
  c.network.radix = 8;  // 64 nodes per rail: 3 levels
  const Topology t = Topology::build(c);
  for (int from = 0; from < t.gpu_count(); from += 3) {
    for (int to = 0; to < t.gpu_count(); to += 5) {
      if (t.node_of(from) == t.node_of(to)) continue;
      const std::vector<std::string> names = route_names(t, from, to);
      std::vector<uint32_t> ids;
      t.route(from, to, ids);
      for (size_t i = 0; i < ids.size(); ++i) {
        if (t.links()[ids[i]].link_class == LinkClass::FABRIC) {
          EXPECT_TRUE(starts_with(names[i], fmt::format("rail{}.", t.rail_of(to)))) << names[i];
        }
      }
      if (t.rail_of(from) != t.rail_of(to)) {  // PXN: NVLink to the destination's rail first
        EXPECT_EQ(names[1], fmt::format("node{}.gpu{}.nvlink.down", t.node_of(from), to % 8));
      }
    }
  }
}

TEST(Topology, FatTreeRoutesGoUpThenDown) {
  ClusterConfig c = cluster(32, 4, TopologyKind::FAT_TREE);
  c.network.radix = 4;  // 128 NICs, arity 2: 7 levels
  const Topology t = Topology::build(c);
  size_t longest = 0;
  for (int from = 0; from < t.gpu_count(); ++from) {
    for (int to = 0; to < t.gpu_count(); to += 7) {
      if (t.node_of(from) == t.node_of(to)) continue;
      std::vector<uint32_t> ids;
      t.route(from, to, ids);
      bool down = false;
      size_t ups = 0;
      size_t downs = 0;
      for (uint32_t id : ids) {
        const Link& l = t.links()[id];
        if (l.link_class != LinkClass::FABRIC) continue;
        const bool is_up = l.name.ends_with(".up");
        if (!is_up) down = true;
        EXPECT_FALSE(is_up && down) << l.name << " after a down link";
        (is_up ? ups : downs) += 1;
      }
      EXPECT_EQ(ups, downs);
      longest = std::max(longest, ups);
    }
  }
  EXPECT_EQ(longest, 6u) << "up to the top of 7 levels";
}

// Adaptive routing pools each subtree's links: 8 single-NIC nodes under radix-4 switches (arity 2,
// 3 levels). Level 1 has 4 subtrees (the leaves) of 2 up links each, level 2 has 2 subtrees of 4:
// pooled links at 2 and 4 times the NIC's bandwidth. 0 -> 2 meets at level 2 (leaf 0 up, leaf 1
// down); 1 -> 4 at level 3 (leaf 0 and subtree 0 up, subtree 1 and leaf 2 down). Static D-mod-k sends
// both through leaf 0's up port 0 (the destinations' low digits are both 0).
TEST(Topology, AdaptiveRoutingPoolsEachSubtreesLinks) {
  ClusterConfig c = cluster(8, 1, TopologyKind::FAT_TREE);
  c.network.radix = 4;
  c.network.nics_per_node = 1;
  const Topology fixed = Topology::build(c);
  c.network.routing = Routing::ADAPTIVE;
  const Topology pooled = Topology::build(c);
  auto fabric = [](const Topology& t, int from, int to) {
    std::vector<std::string> names;
    for (const std::string& n : route_names(t, from, to)) {
      if (!starts_with(n, "node")) names.push_back(n);
    }
    return names;
  };
  EXPECT_EQ(fabric(fixed, 0, 2), (std::vector<std::string>{"l1s0.l2s0.up", "l1s1.l2s0.down"}));
  EXPECT_EQ(fabric(fixed, 1, 4)[0], "l1s0.l2s0.up") << "the same up port as 0 -> 2";
  EXPECT_EQ(fabric(pooled, 0, 2), (std::vector<std::string>{"l1w0.up", "l1w1.down"}));
  EXPECT_EQ(fabric(pooled, 1, 4), (std::vector<std::string>{"l1w0.up", "l2w0.up", "l2w1.down", "l1w2.down"}));
  // 4 leaves + 2 level-2 subtrees, up and down: 12 links, against (4 + 4) x 2 ports x 2 static ones.
  EXPECT_EQ(pooled.count(LinkClass::FABRIC), 12u);
  EXPECT_EQ(fixed.count(LinkClass::FABRIC), 32u);
  const double nic = c.network.nic_bandwidth.value();
  for (const Link& l : pooled.links()) {
    if (l.link_class != LinkClass::FABRIC) continue;
    EXPECT_DOUBLE_EQ(l.bandwidth.value(), (starts_with(l.name, "l1") ? 2 : 4) * nic) << l.name;
  }
  // The same total capacity as the static tree's links: pooling moves no bandwidth.
  EXPECT_DOUBLE_EQ(pooled.total_bandwidth(LinkClass::FABRIC).value(), fixed.total_bandwidth(LinkClass::FABRIC).value());
  // Tree-link ids round-trip through their digits (node folding maps links by them).
  for (uint32_t id = 0; id < pooled.links().size(); ++id) {
    Topology::TreeLink t;
    if (!pooled.tree_link(id, t)) continue;
    EXPECT_EQ(pooled.tree_link_id(t), id) << pooled.links()[id].name;
    EXPECT_EQ(t.digits % (t.level == 1 ? 2 : 4), 0) << "a pooled link is named by its subtree's first endpoint";
  }
}

TEST(Topology, TorusRoutesAreDimensionOrderedAndShortest) {
  ClusterConfig c = cluster(60, 1, TopologyKind::TORUS);
  c.network.torus_dims = {3, 4, 5};
  const Topology t = Topology::build(c);
  for (int from = 0; from < 60; ++from) {
    for (int to = 0; to < 60; ++to) {
      if (from == to) continue;
      const std::vector<std::string> names = route_names(t, from, to);
      std::string axes;
      for (const std::string& n : names) {
        if (n.find(".torus.") != std::string::npos) axes += n.substr(n.size() - 2);
      }
      // Along each axis one direction, axes in x, y, z order, never more than half way round.
      int hops[3] = {0, 0, 0};
      for (size_t i = 0; i + 1 < axes.size(); i += 2) {
        const int axis = axes[i] - 'x';
        ++hops[axis];
        if (i >= 2) {
          EXPECT_LE(axes[i - 2], axes[i]) << axes;
          if (axes[i - 2] == axes[i]) {
            EXPECT_EQ(axes[i - 1], axes[i + 1]) << axes;
          }
        }
      }
      const int dims[3] = {3, 4, 5};
      int expected[3] = {from % 3, (from / 3) % 4, from / 12};
      const int dest[3] = {to % 3, (to / 3) % 4, to / 12};
      for (int k = 0; k < 3; ++k) {
        const int ahead = ((dest[k] - expected[k]) % dims[k] + dims[k]) % dims[k];
        EXPECT_EQ(hops[k], std::min(ahead, dims[k] - ahead)) << from << " -> " << to << " axis " << k;
      }
    }
  }
}

// Worked by hand. 2 nodes x 4 GPUs, 4 NICs: 8 NVSwitch ports, 8 PCIe links, 8 NICs, each both ways.
TEST(Topology, LinkCountsOfSmallClusters) {
  const Topology ideal = Topology::build(cluster(2, 4, TopologyKind::IDEAL));
  EXPECT_EQ(ideal.count(LinkClass::NVLINK), 16u);
  EXPECT_EQ(ideal.count(LinkClass::PCIE), 16u);
  EXPECT_EQ(ideal.count(LinkClass::NIC), 16u);
  EXPECT_EQ(ideal.count(LinkClass::FABRIC), 0u);
  EXPECT_DOUBLE_EQ(ideal.total_bandwidth(LinkClass::NVLINK).value(), 16 * 300e9);

  // A 4-GPU mesh: 4 * 3 directed links of 100 GB/s.
  const Topology mesh = Topology::build(cluster(1, 4, TopologyKind::IDEAL, IntraFabric::NVLINK_MESH));
  EXPECT_EQ(mesh.count(LinkClass::NVLINK), 12u);
  EXPECT_DOUBLE_EQ(mesh.links()[0].bandwidth.value(), 100e9);

  // PCIe, 4 GPUs on 2 PCIe switches: 4 GPU links and 2 host-bridge links, both ways.
  ClusterConfig pcie = cluster(1, 4, TopologyKind::IDEAL, IntraFabric::PCIE);
  pcie.network.nics_per_node = 2;
  EXPECT_EQ(Topology::build(pcie).count(LinkClass::PCIE), 12u);
  EXPECT_EQ(Topology::build(pcie).count(LinkClass::NVLINK), 0u);

  // Fat-tree of 4 nodes x 2 NICs = 8 endpoints. Radix 4 (arity 2): 3 levels; 4 leaves with 2 up
  // links each, 2 subtrees of 2 level-2 switches with 2 up links each: (8 + 8) * 2 = 32.
  ClusterConfig ft = cluster(4, 2, TopologyKind::FAT_TREE);
  ft.network.radix = 4;
  EXPECT_EQ(Topology::build(ft).count(LinkClass::FABRIC), 32u);
  // Radix 8 (arity 4): 2 leaves of 4 up links: 16.
  ft.network.radix = 8;
  EXPECT_EQ(Topology::build(ft).count(LinkClass::FABRIC), 16u);
  // Oversubscription divides the fabric links' bandwidth.
  ft.network.oversubscription = 2;
  const Topology oversubscribed = Topology::build(ft);
  const auto fabric = std::find_if(oversubscribed.links().rbegin(), oversubscribed.links().rend(),
                                   [](const Link& l) { return l.link_class == LinkClass::FABRIC; });
  ASSERT_NE(fabric, oversubscribed.links().rend());
  EXPECT_DOUBLE_EQ(fabric->bandwidth.value(), 25e9 / 2);

  // Rail-optimized, radix 4: per rail 4 endpoints, 2 leaves of 2 up links: 8 per rail, 2 rails.
  ClusterConfig rail = cluster(4, 2, TopologyKind::RAIL_OPTIMIZED);
  rail.network.radix = 4;
  EXPECT_EQ(Topology::build(rail).count(LinkClass::FABRIC), 16u);

  // Dragonfly: 8 NICs on leaves of 2 = 4 leaves, 2 groups of 2: 2 local links per group, 2 global.
  ClusterConfig df = cluster(8, 1, TopologyKind::DRAGONFLY);
  df.network.radix = 4;
  EXPECT_EQ(Topology::build(df).count(LinkClass::FABRIC), 6u);

  // Torus 2 x 4: 2 dimensions, + and - each: 4 per node. Default for 8 nodes: 2 x 2 x 2, 6 per node.
  ClusterConfig torus = cluster(8, 1, TopologyKind::TORUS);
  torus.network.torus_dims = {2, 4};
  EXPECT_EQ(Topology::build(torus).count(LinkClass::FABRIC), 32u);
  torus.network.torus_dims.clear();
  EXPECT_EQ(Topology::build(torus).count(LinkClass::FABRIC), 48u);
}

TEST(Topology, RailsSplitTheNodesGpusOverItsNics) {
  ClusterConfig c = cluster(2, 8, TopologyKind::FAT_TREE);
  c.network.nics_per_node = 4;
  const Topology t = Topology::build(c);
  const int expected[] = {0, 0, 1, 1, 2, 2, 3, 3};
  for (int g = 0; g < 16; ++g) EXPECT_EQ(t.rail_of(g), expected[g % 8]);
}

TEST(Topology, InNetworkAggregatorsAreReachedOverThePortOrTheNic) {
  const Topology t = Topology::build(cluster(2, 4, TopologyKind::FAT_TREE));
  std::vector<uint32_t> ids;
  t.route_to_aggregator(5, Aggregator::NVSWITCH, true, ids);
  t.route_to_aggregator(5, Aggregator::NETWORK, false, ids);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(t.links()[ids[0]].name, "node1.gpu1.nvlink.up");
  EXPECT_EQ(t.links()[ids[1]].name, "node1.nic1.down");
  EXPECT_EQ(t.links()[ids[2]].name, "node1.gpu1.pcie.down");
}

TEST(TorusDimensions, AreAsEqualAsTheNodeCountAllows) {
  EXPECT_EQ(torus_dimensions(64), (std::vector<int>{4, 4, 4}));
  EXPECT_EQ(torus_dimensions(12), (std::vector<int>{3, 2, 2}));
  EXPECT_EQ(torus_dimensions(7), (std::vector<int>{7, 1, 1}));
  EXPECT_EQ(torus_dimensions(2048), (std::vector<int>{16, 16, 8}));
  EXPECT_EQ(fat_tree_levels(1, 64), 1);
  EXPECT_EQ(fat_tree_levels(32, 64), 1);
  EXPECT_EQ(fat_tree_levels(33, 64), 2);
  EXPECT_EQ(fat_tree_levels(16384, 64), 3);
}

// 16,384 GPUs (2,048 nodes of 8) on every topology: the build and a million routes stay cheap
// because routes are computed, never tabulated (no timing is asserted).
TEST(Topology, SixteenThousandGpusBuildAndRouteAMillionPairs) {
  for (TopologyKind kind :
       {TopologyKind::RAIL_OPTIMIZED, TopologyKind::FAT_TREE, TopologyKind::DRAGONFLY, TopologyKind::TORUS}) {
    const Topology t = Topology::build(cluster(2048, 8, kind));
    ASSERT_EQ(t.gpu_count(), 16384);
    EXPECT_LT(t.links().size(), 400000u) << to_string(kind);
    std::vector<uint32_t> ids;
    size_t total = 0;
    const int routes = kind == TopologyKind::RAIL_OPTIMIZED ? 1000000 : 100000;
    for (int i = 0; i < routes; ++i) {
      ids.clear();
      const int from = static_cast<int>((static_cast<int64_t>(i) * 7919) % 16384);
      const int to = (from + 1 + static_cast<int>((static_cast<int64_t>(i) * 104729) % 16383)) % 16384;
      t.route(from, to, ids);
      total += ids.size();
    }
    EXPECT_GT(total, static_cast<size_t>(routes));
  }
}

}  // namespace
}  // namespace trainsim::network
