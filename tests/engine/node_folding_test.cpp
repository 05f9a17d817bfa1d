// NodeFolding: which node shifts fold exactly on a tree fabric, and that they map every route onto
// the route of the images, link by link (what makes a folded run the full one). The full
// simulation against the folded one is in node_folding_simgrid_test.cpp.

#include "sim/engine/node_folding.hpp"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "sim/engine/program_plan.hpp"
#include "sim/engine/rank_table.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

// tree_preserving_multiple on hand-worked fields. Endpoint numbers are read in base p; a shift adds
// m * unit to the field (e / unit) % radix. It must stay inside one digit.
TEST(NodeFolding, TreePreservingMultipleKeepsTheShiftInsideOneDigit) {
  // TP1 CP4 DP256 on 128 nodes of 8 (8 NICs each) under 32-port leaves, two levels: a data shift by
  // 2 moves one node (8 endpoints), carrying into the leaf digit every 4 nodes; by 8 (4 nodes, 32
  // endpoints) it moves whole leaves: digit 1 alone.
  EXPECT_EQ(NodeFolding::tree_preserving_multiple(8, 128, 32, 2), 4);
  // The same shift over 4 nodes of one leaf (8 nodes, 2 stages): places inside the leaf, digit 0.
  EXPECT_EQ(NodeFolding::tree_preserving_multiple(8, 4, 32, 2), 1);
  // Radix-12 switches (6 down-ports), three levels: 8, 16, 32 and 64 endpoints never start a
  // digit of base 6 that holds the field: no shift folds.
  EXPECT_EQ(NodeFolding::tree_preserving_multiple(8, 8, 6, 3), 8);
  // Rails of 4 nodes under 2-port leaves (two levels): the top digit holds pairs of nodes.
  EXPECT_EQ(NodeFolding::tree_preserving_multiple(1, 4, 2, 2), 2);
  // Llama 3 405B on rails of 2,048 nodes, 32-port leaves, three levels, data parallelism over 128
  // consecutive nodes: digit 0 is 32 nodes, digit 1's lowest 2 bits the next 4 groups of 32.
  EXPECT_EQ(NodeFolding::tree_preserving_multiple(1, 128, 32, 3), 32);
  // On an ideal switch there is no digit to keep: callers do not ask (every shift folds).
}

struct FoldingCase {
  core::Workload workload;
  network::ClusterConfig cluster;
  std::vector<ProgramPlan> plans;
};

FoldingCase folding_case(network::TopologyKind kind, int radix) {
  FoldingCase s;
  // TP2 DP4 PP2 on 8 nodes of 2 GPUs: node = data coordinate + 4 x stage. Pipeline sends cross
  // between the two halves of the cluster.
  s.workload = testing::hybrid_workload(2, 4, 2, 2);
  s.cluster = testing::make_cluster(8, 2, 300e9, 25e9, 2e-6);
  s.cluster.network.topology = kind;
  s.cluster.network.radix = radix;
  for (const core::Program& p : s.workload.programs) {
    s.plans.push_back(plan_program(p, s.workload, s.cluster, testing::unit_profile().device));
  }
  return s;
}

std::vector<uint32_t> folded_route(const network::Topology& t, const NodeFolding& f, int from, int to) {
  std::vector<uint32_t> route;
  t.route(from, to, route);
  for (uint32_t& l : route) l = f.link(l);
  return route;
}

// How many GPU pairs' folded routes differ from their images' under a generator of the folding.
int pairs_not_invariant(const FoldingCase& s, const network::Topology& t, const NodeFolding& f) {
  int broken = 0;
  for (const NodeFolding::Axis& a : f.axes()) {
    for (int from = 0; from < t.gpu_count(); ++from) {
      for (int to = 0; to < t.gpu_count(); ++to) {
        if (from == to) continue;
        const int hf = s.workload.layout.peer(from, a.axis, a.period);
        const int ht = s.workload.layout.peer(to, a.axis, a.period);
        broken += folded_route(t, f, from, to) == folded_route(t, f, hf, ht) ? 0 : 1;
      }
    }
  }
  return broken;
}

// Binary trees over 16 NICs (fat-tree: 4 levels) or 8 nodes per rail (3 levels): a data shift by
// one node carries into the next digit, so EXACT folds by two nodes (digit 1 or 2 alone), and
// every route then folds onto the same links as its images'. Folding by one node (APPROXIMATE)
// does not: some routes and their images' fold onto different uplinks.
TEST(NodeFolding, ExactFoldingMapsEveryRouteOntoItsImagesRoute) {
  for (network::TopologyKind kind : {network::TopologyKind::FAT_TREE, network::TopologyKind::RAIL_OPTIMIZED}) {
    SCOPED_TRACE(network::to_string(kind));
    const FoldingCase s = folding_case(kind, 4);
    const network::Topology topology = network::Topology::build(s.cluster);
    const RankTable table(s.workload, s.cluster, s.plans, true);
    const NodeFolding exact(s.workload, table, topology, NodeSymmetry::EXACT);
    ASSERT_TRUE(exact.active());
    ASSERT_EQ(exact.axes().size(), 1U);
    EXPECT_EQ(exact.axes()[0].axis, core::Axis::DATA);
    EXPECT_EQ(exact.axes()[0].period, 2);
    EXPECT_EQ(pairs_not_invariant(s, topology, exact), 0);
    // Representative nodes: data coordinates 0 and 1 of each stage.
    EXPECT_EQ(exact.representative_node(3), 1);
    EXPECT_EQ(exact.representative_node(6), 4);
    const NodeFolding approximate(s.workload, table, topology, NodeSymmetry::APPROXIMATE);
    ASSERT_TRUE(approximate.active());
    EXPECT_EQ(approximate.axes()[0].period, 1);
    EXPECT_GT(pairs_not_invariant(s, topology, approximate), 0);
  }
}

// Leaves of whole stages (radix 16: 8 down-ports, 4 nodes of 2 NICs per leaf): a shift by one node
// permutes places inside the leaf, digit 0 alone, so EXACT folds by the period itself.
TEST(NodeFolding, ShiftsInsideALeafFoldByThePeriod) {
  const FoldingCase s = folding_case(network::TopologyKind::FAT_TREE, 16);
  const network::Topology topology = network::Topology::build(s.cluster);
  const RankTable table(s.workload, s.cluster, s.plans, true);
  const NodeFolding exact(s.workload, table, topology, NodeSymmetry::EXACT);
  ASSERT_TRUE(exact.active());
  EXPECT_EQ(exact.axes()[0].period, 1);
  EXPECT_EQ(pairs_not_invariant(s, topology, exact), 0);
}

// FabricUse on 8 single-NIC nodes under radix-4 switches (leaves {0,1} {2,3} {4,5} {6,7}; static
// D-mod-k routes): 0 -> 2 and 1 -> 3 leave leaf 0 by ports 0 and 1, one source each, and enter leaf 1
// by two down links, one destination each: dominated. 1 -> 4 then takes leaf 0's port 0 too (its
// destination's low digit is 0), with 0 -> 2's source NIC on it already: not dominated. Folding with
// a dominated fabric ignores the tree (every shift, as on an ideal switch).
TEST(NodeFolding, FabricUseFindsALinkThatTwoNicsShare) {
  network::ClusterConfig c = testing::make_cluster(8, 1, 300e9, 25e9, 2e-6);
  c.network.radix = 4;
  const network::Topology topology = network::Topology::build(c);
  FabricUse use(topology);
  std::vector<uint32_t> route;
  for (const auto& [from, to] : {std::pair{0, 2}, std::pair{1, 3}}) {
    route.clear();
    topology.route(from, to, route);
    use.note(route);
  }
  EXPECT_TRUE(use.dominated());
  route.clear();
  topology.route(1, 4, route);
  use.note(route);
  EXPECT_FALSE(use.dominated());

  const FoldingCase s = folding_case(network::TopologyKind::FAT_TREE, 4);
  const network::Topology tree = network::Topology::build(s.cluster);
  const RankTable table(s.workload, s.cluster, s.plans, true);
  const NodeFolding ideal(s.workload, table, tree, NodeSymmetry::EXACT, true);
  ASSERT_TRUE(ideal.active());
  EXPECT_EQ(ideal.axes()[0].period, 1) << "every shift, as on an ideal switch";
}

// No folding on a torus or a dragonfly.
TEST(NodeFolding, TorusAndDragonflyDoNotFold) {
  for (network::TopologyKind kind : {network::TopologyKind::TORUS, network::TopologyKind::DRAGONFLY}) {
    const FoldingCase s = folding_case(kind, 4);
    const network::Topology topology = network::Topology::build(s.cluster);
    const RankTable table(s.workload, s.cluster, s.plans, true);
    EXPECT_FALSE(NodeFolding(s.workload, table, topology, NodeSymmetry::EXACT).active());
  }
}

}  // namespace
}  // namespace trainsim::engine
