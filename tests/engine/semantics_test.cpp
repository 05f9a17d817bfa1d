// The execution semantics of sim/core/workload.hpp on tiny hand-built workloads, each small enough to
// compute its timeline by hand.

#include <gtest/gtest.h>

#include "network/collective_cost.hpp"
#include "sim/core/error.hpp"
#include "sim/engine/backend.hpp"
#include "sim/engine/host_model.hpp"
#include "sim/engine/executor.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

using core::Axis;
using core::Stream;
using core::TaskKind;
using namespace testing;

constexpr double MS = 1e-3;

SimulationResult run(const core::Workload& w, const network::ClusterConfig& c, std::vector<int> timeline = {}) {
  SimulationOptions options;
  options.timeline_ranks = std::move(timeline);
  return make_analytic_backend()->run(w, c, unit_profile(), options);
}

// A host-to-device copy taking `seconds` on make_cluster()'s host links (host_model.hpp).
core::Task copy(double seconds) {
  core::Task t;
  t.kind = TaskKind::COPY;
  t.stream = Stream::COPY;
  t.bytes = seconds * copy_bandwidth(core::CopyDirection::HOST_TO_DEVICE, make_cluster(1, 1)).value();
  return t;
}

TEST(Semantics, AMeasuredDurationReplacesTheComputeModel) {
  // Trace replay: a compute task with `seconds` set takes exactly that long, whatever its FLOPs.
  core::Program p;
  core::Task measured = compute(5 * MS);
  measured.seconds = 1.25 * MS;
  p.add(measured);
  p.add(compute(2 * MS));
  const core::Workload w = make_workload({1, 1, 1, 1, 1}, {p}, {0});
  EXPECT_DOUBLE_EQ(run(w, make_cluster(1, 1)).iteration_time.value(), 3.25 * MS);
}

TEST(Semantics, TasksOfOneStreamRunOneAtATimeOthersOverlap) {
  core::Program p;
  p.add(compute(1 * MS));
  p.add(compute(2 * MS));
  p.add(copy(2.5 * MS));  // on the copy engine: overlaps the compute stream
  const SimulationResult r = run(make_workload({1, 1, 1, 1, 1}, {p}, {0}), make_cluster(1, 1), {0});
  EXPECT_NEAR(r.iteration_time.value(), 3 * MS, 1e-15);
  ASSERT_EQ(r.timeline.size(), 3u);
  EXPECT_NEAR(r.timeline[1].start_s, 1 * MS, 1e-15);
  EXPECT_NEAR(r.timeline[2].start_s, 0, 1e-15);
  EXPECT_NEAR(r.timeline[2].end_s, 2.5 * MS, 1e-15);
  EXPECT_EQ(r.events, 3u);
  EXPECT_EQ(r.simulated_ranks, 1);
}

TEST(Semantics, CrossStreamDependencyWaitsLikeACudaEvent) {
  core::Program p;
  const uint32_t c = p.add(copy(1 * MS));
  p.add(compute(1 * MS), {c});
  const SimulationResult r = run(make_workload({1, 1, 1, 1, 1}, {p}, {0}), make_cluster(1, 1), {0});
  EXPECT_NEAR(r.iteration_time.value(), 2 * MS, 1e-15);
  EXPECT_NEAR(r.timeline[1].start_s, 1 * MS, 1e-15);
  // While the compute stream waits for the copy, the time is "other" (copy engine busy).
  EXPECT_NEAR(r.breakdown.other.value(), 1 * MS, 1e-15);
  EXPECT_NEAR(r.breakdown.compute.value(), 1 * MS, 1e-15);
}

TEST(Semantics, CollectiveStartsWhenTheSlowestMemberArrivesAndEndsForAll) {
  // Two tensor-parallel ranks on one node; rank 1 computes three times longer before the all_reduce.
  core::Workload w;
  std::vector<core::Program> programs(2);
  for (int r = 0; r < 2; ++r) {
    const uint32_t c = programs[r].add(compute((1 + 2 * r) * MS));
    programs[r].add(collective(core::CollectiveOp::ALL_REDUCE, 0, 64e6, Stream::TENSOR_COMM), {c});
  }
  w = make_workload({2, 1, 1, 1, 1}, programs, {0, 1});
  w.groups = {{"tensor", Axis::TENSOR, {}, {}}};
  const network::ClusterConfig cluster = make_cluster(1, 2, 100e9, 25e9, 1e-6);
  const SimulationResult r = run(w, cluster, {0, 1});
  const double cost = network::collective_cost(core::CollectiveOp::ALL_REDUCE, core::Bytes(64e6), {2, 1, 2}, cluster,
                                               unit_profile().network).time.value();
  EXPECT_DOUBLE_EQ(cost, 64e6 / 100e9 + 2e-6) << "ring of 2: 2(n-1)/n*S/B + 2(n-1)*alpha";
  EXPECT_DOUBLE_EQ(r.iteration_time.value(), 3 * MS + cost);
  EXPECT_EQ(r.critical_rank, 0) << "both end together: the lowest rank is critical";
  ASSERT_EQ(r.timeline.size(), 4u);
  EXPECT_DOUBLE_EQ(r.timeline[1].start_s, 3 * MS);
  EXPECT_DOUBLE_EQ(r.timeline[1].end_s, r.timeline[3].end_s);
  // Rank 0 waits 2 ms for rank 1 (bubble), then the all_reduce is exposed tensor communication.
  EXPECT_NEAR(r.breakdown.compute.value(), 1 * MS, 1e-15);
  EXPECT_NEAR(r.breakdown.pipeline_bubble.value(), 2 * MS, 1e-15);
  EXPECT_NEAR(r.breakdown.exposed_comm[static_cast<size_t>(Axis::TENSOR)].value(), cost, 1e-15);
  EXPECT_NEAR(r.comm_time[static_cast<size_t>(Axis::TENSOR)].value(), cost, 1e-15);
}

TEST(Semantics, SendAndRecvMeetAndEndTogetherInFifoOrder) {
  // Stage 0 sends two messages of different sizes; stage 1 posts both receives at once and computes
  // on each. Nodes of one GPU: the transfers cross the network.
  core::Program sender;
  sender.name = "stage 0";
  const uint32_t c = sender.add(compute(2 * MS));
  const uint32_t s1 = sender.add(p2p(TaskKind::SEND, Axis::PIPELINE, 1, 25e6, Stream::PIPELINE_FORWARD), {c});
  sender.add(p2p(TaskKind::SEND, Axis::PIPELINE, 1, 50e6, Stream::PIPELINE_FORWARD), {s1});
  core::Program receiver;
  receiver.name = "stage 1";
  const uint32_t r1 = receiver.add(p2p(TaskKind::RECV, Axis::PIPELINE, -1, 25e6, Stream::PIPELINE_FORWARD));
  const uint32_t r2 = receiver.add(p2p(TaskKind::RECV, Axis::PIPELINE, -1, 50e6, Stream::PIPELINE_FORWARD));
  receiver.add(compute(3 * MS), {r1});
  receiver.add(compute(1 * MS), {r2});
  const network::ClusterConfig cluster = make_cluster(2, 1, 300e9, 25e9, 5e-6);
  const SimulationResult r = run(make_workload({1, 1, 1, 1, 2}, {sender, receiver}, {0, 1}), cluster, {1});
  const double first = 5e-6 + 25e6 / 25e9;   // p2p_time: latency + size / NIC share
  const double second = 5e-6 + 50e6 / 25e9;
  ASSERT_EQ(r.timeline.size(), 4u);
  EXPECT_DOUBLE_EQ(r.timeline[0].end_s, 2 * MS + first);
  EXPECT_DOUBLE_EQ(r.timeline[1].end_s, 2 * MS + first + second);
  EXPECT_DOUBLE_EQ(r.timeline[2].start_s, 2 * MS + first);
  EXPECT_DOUBLE_EQ(r.timeline[3].start_s, r.timeline[2].end_s) << "the compute stream serializes";
  EXPECT_DOUBLE_EQ(r.iteration_time.value(), 2 * MS + first + 3 * MS + 1 * MS);
  EXPECT_EQ(r.critical_rank, 1);
}

TEST(Semantics, MemoryPeakFollowsAllocationsInTimeOrder) {
  // Compute stream: +4 GiB at 0, +2 GiB at 1 ms, -4 and -2 GiB at 2 ms. Copy stream: +3 GiB at
  // 0.25 ms, -3 GiB at 0.75 ms. In time order the peak is 4 + 3 = 7 GiB (program order would say 6).
  core::Program p;
  p.static_memory = core::Bytes(10 * core::GiB);
  const uint32_t a = p.add(memory(4 * core::GiB));
  const uint32_t c = p.add(compute(1 * MS), {a});
  const uint32_t b = p.add(memory(2 * core::GiB), {c});
  p.add(compute(1 * MS), {b});
  const uint32_t f = p.add(memory(-4 * core::GiB));
  p.add(memory(-2 * core::GiB), {f});
  const uint32_t x = p.add(copy(0.25 * MS));
  const uint32_t y = p.add(memory(3 * core::GiB, Stream::COPY), {x});
  const uint32_t z = p.add(copy(0.5 * MS), {y});
  p.add(memory(-3 * core::GiB, Stream::COPY), {z});
  const SimulationResult r = run(make_workload({1, 1, 1, 1, 1}, {p}, {0}), make_cluster(1, 1));
  ASSERT_EQ(r.peak_dynamic_by_program.size(), 1u);
  EXPECT_DOUBLE_EQ(r.peak_dynamic_by_program[0].value(), 7 * core::GiB);
  EXPECT_DOUBLE_EQ(r.peak_memory_by_program[0].value(), 17 * core::GiB);
}

TEST(Semantics, SimultaneousMemoryEventsApplyInProgramOrder) {
  core::Program p;
  p.add(memory(-1 * core::GiB, Stream::COPY));  // a free at t = 0 issued first
  p.add(memory(3 * core::GiB));                 // an allocation at t = 0 on another stream
  p.add(memory(-2 * core::GiB));
  const SimulationResult r = run(make_workload({1, 1, 1, 1, 1}, {p}, {0}), make_cluster(1, 1));
  EXPECT_DOUBLE_EQ(r.peak_dynamic_by_program[0].value(), 2 * core::GiB);
}

TEST(Semantics, DeadlockThrowsAndNamesTheStuckTasks) {
  // Both stages receive before they send, on one stream: each waits for the other's send forever.
  std::vector<core::Program> programs(2);
  for (int s = 0; s < 2; ++s) {
    programs[s].name = s == 0 ? "stage 0" : "stage 1";
    programs[s].add(compute(1 * MS));
    const uint32_t r = programs[s].add(p2p(TaskKind::RECV, Axis::PIPELINE, 1, 1e6, Stream::PIPELINE_FORWARD));
    programs[s].add(p2p(TaskKind::SEND, Axis::PIPELINE, 1, 1e6, Stream::PIPELINE_FORWARD), {r});
  }
  const core::Workload w = make_workload({1, 1, 1, 1, 2}, programs, {0, 1});
  try {
    run(w, make_cluster(1, 2));
    FAIL() << "a deadlock must throw";
  } catch (const core::InternalError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("deadlock"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 0 (program \"stage 0\")"), std::string::npos) << m;
    EXPECT_NE(m.find("task 1 (recv"), std::string::npos) << m;
    EXPECT_NE(m.find("waits for rank 1 to post the matching send"), std::string::npos) << m;
  }
}

TEST(Semantics, CollectiveMissingOnOneMemberIsADeadlock) {
  core::Program calls;
  calls.add(collective(core::CollectiveOp::ALL_GATHER, 0, 1e6, Stream::DATA_COMM));
  core::Program idle;
  idle.add(compute(1 * MS));
  core::Workload w = make_workload({1, 1, 1, 2, 1}, {calls, idle}, {0, 1});
  w.groups = {{"data", Axis::DATA, {}, {}}};
  EXPECT_THROW(
      {
        try {
          run(w, make_cluster(1, 2));
        } catch (const core::InternalError& e) {
          EXPECT_NE(std::string(e.what()).find("\"data\" communicator (call 0)"), std::string::npos) << e.what();
          throw;
        }
      },
      core::InternalError);
}

TEST(Semantics, MembersDisagreeingOnACollectiveIsABug) {
  std::vector<core::Program> programs(2);
  programs[0].add(collective(core::CollectiveOp::ALL_REDUCE, 0, 1e6, Stream::DATA_COMM));
  programs[1].add(collective(core::CollectiveOp::ALL_REDUCE, 0, 2e6, Stream::DATA_COMM));
  core::Workload w = make_workload({1, 1, 1, 2, 1}, programs, {0, 1});
  w.groups = {{"data", Axis::DATA, {}, {}}};
  EXPECT_THROW(run(w, make_cluster(1, 2)), core::InternalError);
}

TEST(Semantics, CollectivesMatchByCallOrderAcrossStreams) {
  // Two all_reduces on one communicator from different streams: call k meets call k, whatever the
  // stream, so rank 1's late first call holds back rank 0's first call only.
  std::vector<core::Program> programs(2);
  for (int r = 0; r < 2; ++r) {
    const uint32_t c = programs[r].add(compute((r == 0 ? 1 : 4) * MS));
    programs[r].add(collective(core::CollectiveOp::ALL_REDUCE, 0, 0, Stream::DATA_COMM), {c});
    programs[r].add(collective(core::CollectiveOp::ALL_REDUCE, 0, 0, Stream::TENSOR_COMM));
  }
  core::Workload w = make_workload({1, 1, 1, 2, 1}, programs, {0, 1});
  w.groups = {{"data", Axis::DATA, {}, {}}};
  const SimulationResult r = run(w, make_cluster(1, 2, 300e9, 25e9, 0), {0});
  EXPECT_DOUBLE_EQ(r.timeline[1].end_s, 4 * MS);
  EXPECT_DOUBLE_EQ(r.timeline[2].end_s, 0);
}

// The executor prices communication only through its CommunicationModel: a model with fixed costs
// gives timelines computable by hand.
class FixedCostModel final : public CommunicationModel {
 public:
  core::Seconds collective_time(core::CollectiveOp, core::Bytes, const network::GroupPlacement& group) override {
    ++collective_queries;
    return core::Seconds(group.ranks * MS);
  }
  core::Seconds p2p_time(core::Bytes, bool same_node) override { return core::Seconds(same_node ? 1 * MS : 3 * MS); }
  int collective_queries = 0;
};

TEST(Semantics, CommunicationIsPricedByThePluggedModelWithCachedCollectives) {
  core::Program p;
  uint32_t last = p.add(compute(1 * MS));
  for (int i = 0; i < 5; ++i) {
    last = p.add(collective(core::CollectiveOp::ALL_REDUCE, 0, 1e6, Stream::DATA_COMM), {last});
  }
  core::Workload w = make_workload({1, 1, 1, 4, 1}, {p}, {0, 0, 0, 0});
  w.groups = {{"data", Axis::DATA, {}, {}}};
  FixedCostModel model;
  SimulationOptions options;
  options.use_symmetry = false;
  const SimulationResult r = execute(w, make_cluster(1, 4), unit_profile(), options, model);
  EXPECT_DOUBLE_EQ(r.iteration_time.value(), 1 * MS + 5 * 4 * MS);
  EXPECT_EQ(model.collective_queries, 1) << "one placement, op and size: priced once";
  EXPECT_DOUBLE_EQ(r.comm_time[static_cast<size_t>(Axis::DATA)].value(), 20 * MS);
}

// Hybrid sharding on 2 nodes of 2 GPUs, shard groups of 2 (one node each), replicas across the nodes
// (cut groups, core::AxisCut). With NVLink 100 GB/s, one 25 GB/s NIC per GPU and 1 us per step:
//   all_gather of 8 MB over the node's 2 GPUs      ring: (1/2)·8e6/100e9 + 1 us = 41 us
//   reduce_scatter of 8 MB over them               41 us
//   all_reduce of the 4 MB shard over 2 nodes      ring: 2·(1/2)·4e6/25e9 + 2 us = 162 us
//                                                  (tree: 2·4e6/25e9 + 2 us = 322 us)
// per layer 244 us, all exposed data-parallel communication. Sharding over all 4 GPUs instead would
// reduce-scatter the whole 8 MB across the nodes.
TEST(Semantics, HybridShardingPricesEachGroupOnItsOwnLinks) {
  const core::Workload w = hybrid_sharded_workload(4, 2, 3, 8e6);
  const network::ClusterConfig cluster = make_cluster(2, 2, 100e9, 25e9, 1e-6);
  const SimulationResult r = run(w, cluster);
  EXPECT_NEAR(r.iteration_time.value(), 3 * 244e-6, 1e-12);
  EXPECT_NEAR(r.comm_time[static_cast<size_t>(Axis::DATA)].value(), 3 * 244e-6, 1e-12);
  EXPECT_NEAR(r.breakdown.exposed_comm[static_cast<size_t>(Axis::DATA)].value(), 3 * 244e-6, 1e-12);
  EXPECT_EQ(r.simulated_ranks, 4) << "a cut data axis is not folded";
}

TEST(Semantics, TheAlgorithmOptionReachesTheCostModel) {
  // A small all_reduce over 64 nodes: the tree's log-depth latency beats the ring's, and AUTO takes it.
  core::Program p;
  p.add(collective(core::CollectiveOp::ALL_REDUCE, 0, 4096, Stream::DATA_COMM));
  std::vector<uint32_t> all(64, 0);
  core::Workload w = make_workload({1, 1, 1, 64, 1}, {p}, all);
  w.groups = {{"data", Axis::DATA, {}, {}}};
  const network::ClusterConfig cluster = make_cluster(64, 1, 300e9, 25e9, 5e-6);
  auto time = [&](network::Algorithm a) {
    SimulationOptions options;
    options.algorithm = a;
    return make_analytic_backend()->run(w, cluster, unit_profile(), options).iteration_time.value();
  };
  EXPECT_LT(time(network::Algorithm::TREE), time(network::Algorithm::RING));
  EXPECT_EQ(time(network::Algorithm::AUTO), time(network::Algorithm::TREE));
}

}  // namespace
}  // namespace trainsim::engine
