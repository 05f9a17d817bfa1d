// The emulator's per-rank plan (sim/engine/emulation_plan.hpp): how the Workload IR maps onto MPI
// communicators, channels and timed waits, checked by hand on tiny workloads.

#include <gtest/gtest.h>

#include "sim/core/error.hpp"
#include "sim/engine/emulation_plan.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

using core::Axis;
using core::Stream;
using core::TaskKind;
using namespace testing;

// Layout tensor 2 x data 2 (ranks: r = t + 2 d): groups "tensor" {0,1},{2,3} and "data" {0,2},{1,3}.
core::Workload tp_dp_workload() {
  core::Program p;
  const uint32_t c = p.add(compute(0.010));
  const uint32_t a = p.add(collective(core::CollectiveOp::ALL_REDUCE, 0, 1000, Stream::TENSOR_COMM), {c});
  p.add(memory(64));
  p.add(collective(core::CollectiveOp::ALL_GATHER, 1, 4000, Stream::DATA_COMM), {a});
  p.add(collective(core::CollectiveOp::REDUCE_SCATTER, 1, 4000, Stream::DATA_COMM));
  core::Workload w = make_workload({2, 1, 1, 2, 1}, {p}, {0, 0, 0, 0});
  w.groups.push_back({"tensor", Axis::TENSOR, {}, {}});
  w.groups.push_back({"data", Axis::DATA, {}, {}});
  w.validate();
  return w;
}

TEST(EmulationPlan, GroupsBecomeCommunicatorsColoredByTheirLowestRank) {
  const core::Workload w = tp_dp_workload();
  const EmulationPlan plan = plan_emulation(w, 3, make_cluster(1, 4), unit_profile().device, {}, "s.json");
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(plan.groups[0].ranks, (std::vector<int>{2, 3}));  // tensor: same data coordinate 1
  EXPECT_EQ(plan.groups[0].color, 2);
  EXPECT_EQ(plan.groups[0].key, 1);
  EXPECT_EQ(plan.groups[1].ranks, (std::vector<int>{1, 3}));  // data: same tensor coordinate 1
  EXPECT_EQ(plan.groups[1].color, 1);
  EXPECT_EQ(plan.groups[1].key, 1);
  EXPECT_EQ(plan.world_size, 4);
}

TEST(EmulationPlan, ComputeIsAScaledWaitAndCollectivesKeepTheirCallOrderPerGroup) {
  const core::Workload w = tp_dp_workload();
  EmulationOptions o;
  o.scale_compute = 0.5;
  o.scale_bytes = 0.001;
  const EmulationPlan plan = plan_emulation(w, 0, make_cluster(1, 4), unit_profile().device, o, "s.json");
  ASSERT_EQ(plan.tasks.size(), 5u);
  // unit_profile: 0.010 s of peak FLOPs takes 0.010 s; scaled by 0.5.
  EXPECT_EQ(plan.tasks[0].kind, EmulatedKind::WAIT);
  EXPECT_NEAR(plan.tasks[0].seconds, 0.005, 1e-12);
  EXPECT_NEAR(plan.wait_seconds, 0.005, 1e-12);
  EXPECT_EQ(plan.tasks[1].kind, EmulatedKind::COLLECTIVE);
  EXPECT_EQ(plan.tasks[1].bytes, 1u);  // 1000 B x 0.001
  EXPECT_EQ(plan.tasks[1].deps, (std::vector<uint32_t>{0}));
  EXPECT_EQ(plan.tasks[2].kind, EmulatedKind::NOOP);
  EXPECT_EQ(plan.noop_count, 1u);
  EXPECT_EQ(plan.tasks[3].seq, 0u);  // first call on "data"
  EXPECT_EQ(plan.tasks[4].seq, 1u);  // second call on "data"
  EXPECT_EQ(plan.tasks[4].bytes, 4u);
  EXPECT_EQ(plan.tasks[1].seq, 0u);  // first call on "tensor"
}

TEST(EmulationPlan, SendsAndReceivesGetOneChannelPerPeerAndTag) {
  // Two pipeline stages: next and previous stage are the same rank, apart by their tags.
  core::Program p;
  core::Task fwd = p2p(TaskKind::SEND, Axis::PIPELINE, 1, 100, Stream::PIPELINE_FORWARD);
  fwd.tag = 0;
  core::Task bwd = p2p(TaskKind::RECV, Axis::PIPELINE, -1, 100, Stream::PIPELINE_BACKWARD);
  bwd.tag = 1;
  p.add(fwd);
  p.add(bwd);
  p.add(fwd);
  const core::Workload w = make_workload({1, 1, 1, 1, 2}, {p}, {0, 0});
  const EmulationPlan plan = plan_emulation(w, 0, make_cluster(1, 2), unit_profile().device, {}, "s.json");
  ASSERT_EQ(plan.channels.size(), 2u);
  EXPECT_EQ(plan.tasks[0].peer, 1);
  EXPECT_EQ(plan.tasks[1].peer, 1);  // offset -1 of stage 0 in 2 stages
  EXPECT_EQ(plan.tasks[0].channel, plan.tasks[2].channel);
  EXPECT_NE(plan.tasks[0].channel, plan.tasks[1].channel);
  EXPECT_EQ(plan.tasks[2].seq, 1u);
  EXPECT_EQ(plan.tasks[1].kind, EmulatedKind::RECV);
  EXPECT_EQ(plan.tasks[1].tag, 1);
}

TEST(EmulationPlan, TooManyOrTooFewRanksAreInputErrors) {
  const core::Workload w = tp_dp_workload();
  const EmulationSubset all(w.layout);
  EXPECT_NO_THROW(check_emulation_world(all, 4, "s.json"));
  try {
    check_emulation_world(all, 8, "s.json");
    FAIL() << "8 ranks for a 4-rank job";
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.problems().at(0).message,
              "the scenario has 4 ranks (its parallel layout), mpirun started 8: emulation runs one MPI process per "
              "rank; start it with mpirun -np 4");
  }
  EXPECT_THROW(check_emulation_world(all, 2, "s.json"), core::InputError);
}

TEST(EmulationPlan, ACollectiveOnAGroupTheRankIsNotInCannotBeMapped) {
  // "embedding" joins pipeline stages 0 and 2 of 3; stage 1's program calls it anyway.
  core::Program p;
  p.add(collective(core::CollectiveOp::ALL_REDUCE, 0, 100, Stream::PIPELINE_FORWARD));
  core::Workload w = make_workload({1, 1, 1, 1, 3}, {p}, {0, 0, 0});
  w.groups.push_back({"embedding", Axis::PIPELINE, {0, 2}, {}});
  EXPECT_NO_THROW(plan_emulation(w, 2, make_cluster(1, 3), unit_profile().device, {}, "s.json"));
  try {
    plan_emulation(w, 1, make_cluster(1, 3), unit_profile().device, {}, "s.json");
    FAIL() << "rank 1 is not in the embedding group";
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.problems().at(0).to_string(),
              "s.json: group 'embedding' cannot be mapped onto an MPI communicator: rank 1 calls a collective on "
              "it but is not one of its members");
  }
}

TEST(EmulationPlan, ScalesOutsideZeroToOneAreInputErrors) {
  const core::Workload w = tp_dp_workload();
  EmulationOptions o;
  o.scale_compute = 0;
  EXPECT_THROW(plan_emulation(w, 0, make_cluster(1, 4), unit_profile().device, o, "s.json"), core::InputError);
  o.scale_compute = 1;
  o.scale_bytes = -1;
  EXPECT_THROW(plan_emulation(w, 0, make_cluster(1, 4), unit_profile().device, o, "s.json"), core::InputError);
  // Above 1: longer waits than the scenario's compute, larger buffers than its messages (1e300
  // waited forever).
  o.scale_bytes = 1;
  o.scale_compute = 1e300;
  EXPECT_THROW(plan_emulation(w, 0, make_cluster(1, 4), unit_profile().device, o, "s.json"), core::InputError);
  o.scale_compute = 1;
  o.scale_bytes = 1.5;
  EXPECT_THROW(plan_emulation(w, 0, make_cluster(1, 4), unit_profile().device, o, "s.json"), core::InputError);
  o.scale_bytes = 1;
  EXPECT_NO_THROW(plan_emulation(w, 0, make_cluster(1, 4), unit_profile().device, o, "s.json"));
}

TEST(EmulationPlan, TheScaledWorkloadIsWhatTheEmulatorRuns) {
  // The analytic backend on the scaled job: 0.005 s of compute, then the collectives.
  const core::Workload w = tp_dp_workload();
  EmulationOptions o;
  o.scale_compute = 0.5;
  o.scale_bytes = 0.001;
  const core::Workload s = scaled_workload(w, make_cluster(1, 4), unit_profile().device, o);
  EXPECT_NEAR(s.programs[0].tasks[0].seconds, 0.005, 1e-12);
  EXPECT_EQ(s.programs[0].tasks[1].bytes, 1.0);
  EXPECT_EQ(s.programs[0].tasks[3].bytes, 4.0);
  EXPECT_EQ(s.programs[0].tasks[2].bytes, 64.0);  // memory untouched
}

}  // namespace
}  // namespace trainsim::engine
