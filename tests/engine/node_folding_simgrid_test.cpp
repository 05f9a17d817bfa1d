// Node folding (SimulationOptions::node_symmetry EXACT) held to the full simulation (every rank
// simulated, no symmetry) on multi-level fat-trees and rail-optimized fabrics, with pipelines across
// nodes and leaves: the same times to 1e-6 of the iteration, with fewer flows than the mirror images
// unfolded. SimGrid builds one platform per process: every TEST runs in its own process.

#include <gtest/gtest.h>

#include <string>

#include "sim/engine/backend.hpp"
#include "sim/engine/collective_simulation.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

SimulationOptions options(bool symmetry, NodeSymmetry folding,
                          network::Algorithm algorithm = network::Algorithm::RING) {
  SimulationOptions o;
  o.use_symmetry = symmetry;
  o.replay_calls_alone = false;  // flows counted below are the folding's alone
  o.algorithm = algorithm;
  o.fidelity = Fidelity::FLOW;
  o.node_symmetry = folding;
  return o;
}

network::ClusterConfig tree(network::TopologyKind kind, int nodes, int gpus_per_node, int radix) {
  network::ClusterConfig c = testing::make_cluster(nodes, gpus_per_node, 300e9, 25e9, 2e-6);
  c.network.topology = kind;
  c.network.radix = radix;
  return c;
}

// Full and folded runs; the folded run's times must be the full one's, with fewer flows. (Where the
// fold must keep several nodes per orbit it may run more flows than symmetry's mirror images
// unfolded, which leave out the local calls of nodes that no simulated rank is on.)
uint64_t expect_exact_folding(const core::Workload& w, const network::ClusterConfig& cluster,
                              network::Algorithm algorithm = network::Algorithm::RING) {
  const SimulationResult full =
      make_simgrid_backend()->run(w, cluster, {}, options(false, NodeSymmetry::OFF, algorithm));
  const SimulationResult folded =
      make_simgrid_backend()->run(w, cluster, {}, options(true, NodeSymmetry::EXACT, algorithm));
  const double t = full.iteration_time.value();
  EXPECT_NEAR(folded.iteration_time.value(), t, 1e-6 * t);
  for (size_t axis = 0; axis < core::AXIS_COUNT; ++axis) {
    EXPECT_NEAR(folded.comm_time[axis].value(), full.comm_time[axis].value(), 1e-6 * t) << "axis " << axis;
  }
  EXPECT_NEAR(folded.breakdown.exposed_comm_total().value(), full.breakdown.exposed_comm_total().value(), 1e-6 * t);
  EXPECT_NEAR(folded.breakdown.pipeline_bubble.value(), full.breakdown.pipeline_bubble.value(), 1e-6 * t);
  EXPECT_LT(folded.network_flows, full.network_flows);
  return folded.network_flows;
}

// TP2 DP4 PP2 on 8 nodes of 2 GPUs (node = data coordinate + 4 x stage) over a binary fat-tree (radix
// 4: 16 NICs, four levels): pipeline sends cross the top of the tree. A data shift by one node is
// not an automorphism of the tree's routes (it carries into the digit above), so the fold is by two
// nodes: two representative nodes per stage.
TEST(NodeFoldingSimgrid, FourLevelFatTreeWithAPipelineAcrossNodesFoldsExactly) {
  expect_exact_folding(testing::hybrid_workload(2, 4, 2, 4), tree(network::TopologyKind::FAT_TREE, 8, 2, 4));
}

// The same job on rails of 8 nodes under 2-port leaves (three levels per rail).
TEST(NodeFoldingSimgrid, ThreeLevelRailsWithAPipelineAcrossNodesFoldExactly) {
  expect_exact_folding(testing::hybrid_workload(2, 4, 2, 4), tree(network::TopologyKind::RAIL_OPTIMIZED, 8, 2, 4));
}

// Leaves of 8 NICs (radix 16) holding one stage each, two levels: the pipeline sends cross from
// one leaf to the other, and a shift by one node permutes places inside the leaf, so the fold is by
// the period itself: one representative node per stage, as the tensor-free case of scripts/
// symmetry-check.sh that "approximate" got +62.6% wrong.
TEST(NodeFoldingSimgrid, TwoLevelFatTreeWithAPipelineAcrossLeavesFoldsExactly) {
  expect_exact_folding(testing::hybrid_workload(2, 4, 2, 4), tree(network::TopologyKind::FAT_TREE, 8, 2, 16));
}

// FSDP over 4 rail-optimized nodes of 8 GPUs under 2-port leaves (two levels), non-blocking and
// 4:1 oversubscribed: with the switch-to-switch links folded too, every uplink carries its full load.
TEST(NodeFoldingSimgrid, ShardedRingOnTwoLevelRailsFoldsExactlyAlsoOversubscribed) {
  network::ClusterConfig rails = tree(network::TopologyKind::RAIL_OPTIMIZED, 4, 8, 4);
  const core::Workload w = testing::sharded_workload(1, 4, 8, 3);
  {
    SCOPED_TRACE("non-blocking");
    expect_exact_folding(w, rails);
  }
  rails.network.oversubscription = 4;
  SCOPED_TRACE("4:1");
  expect_exact_folding(w, rails);
}

// The up-front estimate counts the flows the tree-aware fold keeps (engine::estimate_flows applies
// the folding as the backend chooses it before the run): the sharded job with a context group inside
// each node (TP1 CP4 DP8 on 4 rail-optimized nodes of 8, radix-4 leaves, 4:1 oversubscribed so that
// the fabric is not dominated) runs the estimate's 312 flows and 24 more, the in-node calls' mirrors
// it keeps on the representatives' nodes (mirror images only add to the estimate), against 600 in the
// unfolded estimate. Non-blocking, the fabric is dominated (every leaf link carries one NIC's flows)
// and the run folds as on an ideal switch: fewer flows than the estimate (168), the full run's time.
// The CPU seconds price each call at SimGrid's rate for its flows (here all small: 0.5 million/s).
TEST(NodeFoldingSimgrid, TheEstimateCountsTheFoldedFlowsAndTheDominatedFabricFoldsFurther) {
  network::ClusterConfig rails = tree(network::TopologyKind::RAIL_OPTIMIZED, 4, 8, 4);
  const core::Workload w = testing::sharded_workload(1, 4, 8, 3);
  rails.network.oversubscription = 4;
  const FlowEstimate unfolded = estimate_flows(w, rails, {}, options(true, NodeSymmetry::OFF));
  const FlowEstimate folded = estimate_flows(w, rails, {}, options(true, NodeSymmetry::EXACT));
  EXPECT_DOUBLE_EQ(folded.cpu_seconds, folded.total / simgrid_flow_rate(1));
  EXPECT_EQ(unfolded.total, 600.0);
  EXPECT_EQ(folded.total, 312.0);
  const SimulationResult tree_folded = make_simgrid_backend()->run(w, rails, {}, options(true, NodeSymmetry::EXACT));
  EXPECT_EQ(tree_folded.network_flows, 336u);
  rails.network.oversubscription = 1;
  const SimulationResult full = make_simgrid_backend()->run(w, rails, {}, options(false, NodeSymmetry::OFF));
  const SimulationResult dominated = make_simgrid_backend()->run(w, rails, {}, options(true, NodeSymmetry::EXACT));
  EXPECT_EQ(dominated.network_flows, 168u);
  EXPECT_NEAR(dominated.iteration_time.value(), full.iteration_time.value(), 1e-9 * full.iteration_time.value());
}

// A fat-tree of one node per leaf (radix 16, two levels), the sharded job: its ring crosses leaves.
TEST(NodeFoldingSimgrid, OneNodePerLeafFoldsExactly) {
  expect_exact_folding(testing::sharded_workload(1, 4, 8, 3), tree(network::TopologyKind::FAT_TREE, 4, 8, 16));
}

// The hierarchical all-reduce (a ring inside each node, rings across nodes on the rails, the ring
// inside the node again) over DP8 on 2 nodes of 4 GPUs per stage, PP2: every flow of the calls that
// leaves a representative node is kept as it is (no flow merged with another that looks alike). On
// an ideal switch and (another process: one platform per process) on a two-level fat-tree of one
// node per leaf. (The merge that broke folding is held in tests/plan/node_folding_scenario_test.cpp,
// on a scenario whose images' latency tails differ in their last bits.)
TEST(NodeFoldingSimgrid, HierarchicalAllReduceFoldsExactlyOnAnIdealSwitch) {
  expect_exact_folding(testing::hybrid_workload(1, 8, 2, 4), tree(network::TopologyKind::IDEAL, 4, 4, 64),
                       network::Algorithm::HIERARCHICAL);
}

TEST(NodeFoldingSimgrid, HierarchicalAllReduceFoldsExactlyOnAFatTree) {
  expect_exact_folding(testing::hybrid_workload(1, 8, 2, 4), tree(network::TopologyKind::FAT_TREE, 4, 4, 8),
                       network::Algorithm::HIERARCHICAL);
}

}  // namespace
}  // namespace trainsim::engine
