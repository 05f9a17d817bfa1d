// Symmetry is an optimization: simulating one representative per class of symmetric ranks must give
// exactly the result of simulating every rank (DESIGN.md, "Symmetric ranks").

#include <gtest/gtest.h>

#include "sim/core/error.hpp"
#include "sim/engine/backend.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

using core::Axis;
using core::Stream;
using core::TaskKind;
using namespace testing;

SimulationResult run(const core::Workload& w, const network::ClusterConfig& c, bool symmetry, std::vector<int> timeline = {}) {
  SimulationOptions options;
  options.use_symmetry = symmetry;
  options.timeline_ranks = std::move(timeline);
  return make_analytic_backend()->run(w, c, unit_profile(), options);
}

void expect_identical(const SimulationResult& a, const SimulationResult& b) {
  EXPECT_EQ(a.iteration_time.value(), b.iteration_time.value());
  EXPECT_EQ(a.critical_rank, b.critical_rank);
  EXPECT_EQ(a.breakdown.compute.value(), b.breakdown.compute.value());
  EXPECT_EQ(a.breakdown.pipeline_bubble.value(), b.breakdown.pipeline_bubble.value());
  EXPECT_EQ(a.breakdown.other.value(), b.breakdown.other.value());
  for (size_t i = 0; i < core::PHASE_COUNT; ++i) {
    EXPECT_EQ(a.breakdown.compute_by_phase[i].value(), b.breakdown.compute_by_phase[i].value()) << i;
  }
  for (size_t i = 0; i < core::AXIS_COUNT; ++i) {
    EXPECT_EQ(a.breakdown.exposed_comm[i].value(), b.breakdown.exposed_comm[i].value()) << i;
    EXPECT_EQ(a.comm_time[i].value(), b.comm_time[i].value()) << i;
  }
  ASSERT_EQ(a.peak_memory_by_program.size(), b.peak_memory_by_program.size());
  for (size_t i = 0; i < a.peak_memory_by_program.size(); ++i) {
    EXPECT_EQ(a.peak_memory_by_program[i].value(), b.peak_memory_by_program[i].value()) << i;
    EXPECT_EQ(a.peak_dynamic_by_program[i].value(), b.peak_dynamic_by_program[i].value()) << i;
  }
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (size_t i = 0; i < a.timeline.size(); ++i) {
    EXPECT_EQ(a.timeline[i].rank, b.timeline[i].rank);
    EXPECT_EQ(a.timeline[i].task, b.timeline[i].task);
    EXPECT_EQ(a.timeline[i].start_s, b.timeline[i].start_s) << i;
    EXPECT_EQ(a.timeline[i].end_s, b.timeline[i].end_s) << i;
  }
}

TEST(Symmetry, TensorDataPipelineJobGivesIdenticalResults) {
  // tp=4, dp=2, pp=4 on 8 nodes of 4: tensor groups inside a node, data groups and pipeline across.
  const core::Workload w = hybrid_workload(4, 2, 4, 6);
  const network::ClusterConfig cluster = make_cluster(8, 4, 300e9, 25e9, 3e-6);
  const std::vector<int> timeline = {0, 13, 31};  // a representative and two mirrored ranks
  const SimulationResult with = run(w, cluster, true, timeline);
  const SimulationResult without = run(w, cluster, false, timeline);
  EXPECT_EQ(with.simulated_ranks, 4) << "one rank per pipeline stage";
  EXPECT_EQ(without.simulated_ranks, 32);
  EXPECT_EQ(without.events, with.events * 8);
  EXPECT_GT(with.breakdown.exposed_comm[static_cast<size_t>(Axis::TENSOR)].value(), 0);
  EXPECT_GT(with.comm_time[static_cast<size_t>(Axis::DATA)].value(), 0);
  expect_identical(with, without);
}

TEST(Symmetry, AxesWhoseTranslationSplitsNodesAreSimulatedInFull) {
  // tp=2, dp=3 on nodes of 4: a shift along data moves ranks 2,3 of node 0 onto node 1 but ranks
  // 0,1 stay on node 0, so data is not symmetric on this cluster; tensor still is.
  const core::Workload w = hybrid_workload(2, 3, 2, 3);
  const network::ClusterConfig cluster = make_cluster(3, 4, 300e9, 25e9, 3e-6);
  const SimulationResult with = run(w, cluster, true, {5});
  const SimulationResult without = run(w, cluster, false, {5});
  EXPECT_EQ(with.simulated_ranks, 6) << "data x pipeline";
  expect_identical(with, without);
}

TEST(Symmetry, AnAxisSplitAcrossNodesIsSymmetricWithAPeriod) {
  // tp=2, dp=4, pp=2 on 4 nodes of 4: each node holds data-parallel coordinates 2k and 2k+1 of one
  // stage; a shift along data by 2 maps node n onto node n+1, a shift by 1 would split it. So data
  // coordinates 0 and 1 stand for all four, and their mirrors carry the traffic of the others.
  const core::Workload w = hybrid_workload(2, 4, 2, 3);
  const network::ClusterConfig cluster = make_cluster(4, 4, 300e9, 25e9, 3e-6);
  const std::vector<int> timeline = {0, 2, 7, 13};  // representatives (0, 2) and mirrored ranks
  const SimulationResult with = run(w, cluster, true, timeline);
  const SimulationResult without = run(w, cluster, false, timeline);
  EXPECT_EQ(with.simulated_ranks, 4) << "tensor 0 x data 0,1 x pipeline 0,1";
  EXPECT_EQ(without.simulated_ranks, 16);
  EXPECT_GT(with.comm_time[static_cast<size_t>(Axis::DATA)].value(), 0);
  expect_identical(with, without);
}

TEST(Symmetry, SendsAlongASymmetricAxisMatchTheirMirrors) {
  // A context-parallel ring: each rank computes, sends to its successor and receives from its
  // predecessor (on separate streams), then all-reduces over the ring.
  core::Program p;
  p.name = "ring";
  const uint32_t c = p.add(compute(1e-3));
  p.add(p2p(TaskKind::SEND, Axis::CONTEXT, 1, 40e6, Stream::PIPELINE_FORWARD), {c});
  const uint32_t r = p.add(p2p(TaskKind::RECV, Axis::CONTEXT, -1, 40e6, Stream::PIPELINE_BACKWARD));
  const uint32_t c2 = p.add(compute(2e-3), {r});
  p.add(collective(core::CollectiveOp::ALL_REDUCE, 0, 1e8, Stream::CONTEXT_COMM), {c2});
  core::Workload w = make_workload({1, 4, 1, 1, 1}, {p}, {0, 0, 0, 0});
  w.groups = {{"context", Axis::CONTEXT, {}, {}}};
  w.symmetric_axes[static_cast<size_t>(Axis::CONTEXT)] = true;
  const network::ClusterConfig cluster = make_cluster(4, 1, 300e9, 25e9, 3e-6);
  const SimulationResult with = run(w, cluster, true, {2});
  const SimulationResult without = run(w, cluster, false, {2});
  EXPECT_EQ(with.simulated_ranks, 1);
  EXPECT_DOUBLE_EQ(with.timeline[2].end_s, 1e-3 + 3e-6 + 40e6 / 25e9) << "the receive waits for the peer's send";
  expect_identical(with, without);
}

TEST(Symmetry, AWorkloadBreakingItsSymmetryClaimIsABug) {
  core::Program a;
  a.add(compute(1e-3));
  core::Program b;
  b.add(compute(2e-3));
  core::Workload w = make_workload({1, 1, 1, 2, 1}, {a, b}, {0, 1});
  w.symmetric_axes[static_cast<size_t>(Axis::DATA)] = true;
  EXPECT_THROW(run(w, make_cluster(1, 2), true), core::InternalError) << "different programs along a symmetric axis";
  EXPECT_DOUBLE_EQ(run(w, make_cluster(1, 2), false).iteration_time.value(), 2e-3);

  core::Workload subset = make_workload({1, 1, 1, 2, 1}, {a}, {0, 0});
  subset.groups = {{"first", Axis::DATA, {0}, {}}};
  subset.symmetric_axes[static_cast<size_t>(Axis::DATA)] = true;
  EXPECT_THROW(run(subset, make_cluster(1, 2), true), core::InternalError) << "a member subset of a symmetric axis";
}

}  // namespace
}  // namespace trainsim::engine
