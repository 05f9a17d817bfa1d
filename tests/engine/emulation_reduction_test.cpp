// Scale reduction of the emulator (sim/engine/emulation_subset.hpp, emulation_plan.hpp "Scale
// reduction"): which ranks --ranks selects, which present rank stands in for an absent one, and how
// calls with absent members are run or modelled, checked by hand on tiny workloads.

#include <gtest/gtest.h>

#include "sim/core/error.hpp"
#include "sim/engine/emulation_plan.hpp"
#include "sim/engine/emulation_subset.hpp"
#include "sim/engine/predicted_times.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

using core::Axis;
using core::Stream;
using core::TaskKind;
using namespace testing;

std::string problem(const std::function<void()>& f) {
  try {
    f();
  } catch (const core::InputError& e) {
    return e.problems().at(0).to_string();
  }
  return "no error";
}

// Prices calls by hand: a collective costs 1 ms per member, a message 1 us per byte plus 1 ms
// between nodes.
class HandModel final : public CommunicationModel {
 public:
  core::Seconds collective_time(core::CollectiveOp, core::Bytes, const network::GroupPlacement& group) override {
    return core::Seconds(1e-3 * group.ranks);
  }
  core::Seconds p2p_time(core::Bytes size, bool same_node) override {
    return core::Seconds(1e-6 * size.value() + (same_node ? 0 : 1e-3));
  }
};

TEST(EmulationSubset, NodesAndStagesOfTheLlamaLayout) {
  // TP8 x DP2 x PP4 on 8 nodes of 8 (scenarios/llama3-70b-h100-64.json): rank = t + 8 d + 16 p.
  const core::ParallelLayout layout({8, 1, 1, 2, 4});
  const network::ClusterConfig cluster = make_cluster(8, 8);
  const EmulationSubset node3 = EmulationSubset::parse("node:3", layout, cluster);
  EXPECT_EQ(node3.ranks(), (std::vector<int>{24, 25, 26, 27, 28, 29, 30, 31}));  // d = 1, p = 1
  EXPECT_EQ(node3.lo(Axis::DATA), 1);
  EXPECT_EQ(node3.span(Axis::TENSOR), 8);
  EXPECT_EQ(node3.mpi_rank_of(26), 2);
  EXPECT_EQ(node3.mpi_rank_of(8), -1);
  const EmulationSubset stage2 = EmulationSubset::parse("stage:2", layout, cluster);
  ASSERT_EQ(stage2.ranks().size(), 16u);
  EXPECT_EQ(stage2.ranks().front(), 32);
  EXPECT_EQ(stage2.ranks().back(), 47);
  EXPECT_TRUE(EmulationSubset::parse("all", layout, cluster).all());
  EXPECT_FALSE(stage2.all());
}

TEST(EmulationSubset, BadSpecsAreInputErrors) {
  const core::ParallelLayout layout({8, 1, 1, 2, 4});
  const network::ClusterConfig cluster = make_cluster(8, 8);
  auto parse = [&](const std::string& spec) { return problem([&] { EmulationSubset::parse(spec, layout, cluster); }); };
  EXPECT_EQ(parse("node:8"), "--ranks: expected a node 0..7 after \"node:\", found \"node:8\"");
  EXPECT_EQ(parse("stage:-1"), "--ranks: expected a pipeline stage 0..3 after \"stage:\", found \"stage:-1\"");
  EXPECT_EQ(parse("node:"), "--ranks: expected a node 0..7 after \"node:\", found \"node:\"");
  EXPECT_EQ(parse("nodes:1"), "--ranks: expected \"all\", \"node:N\" or \"stage:S\", found \"nodes:1\"");
  // TP3 x DP8 on 3 nodes of 8: node 0 holds t 0..2 of d 0 and 1, and t 0..1 of d 2: no box.
  const core::ParallelLayout odd({3, 1, 1, 8, 1});
  EXPECT_EQ(problem([&] { EmulationSubset::parse("node:0", odd, make_cluster(3, 8)); }),
            "--ranks: the 8 ranks of node 0 do not form a box of the parallel layout (tensor 3 x context 1 x expert "
            "1 x data 8 x pipeline 1, filled fastest first): a node boundary splits an axis; use stage:S or all");
}

TEST(EmulationSubset, AnAbsentRankIsStoodInForAlongSymmetricAxesOnly) {
  // TP2 x DP4 x PP2 on 4 nodes of 4: rank = t + 2 d + 8 p; node 0 = t 0..1, d 0..1, p 0.
  core::Program p;
  p.add(compute(0.001));
  core::Workload w = make_workload({2, 1, 1, 4, 2}, {p, p}, {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1});
  w.symmetric_axes = {true, true, true, true, false};
  const EmulationSubset node0 = EmulationSubset::parse("node:0", w.layout, make_cluster(4, 4));
  EXPECT_EQ(node0.stand_in(w, 3), 3);   // present
  EXPECT_EQ(node0.stand_in(w, 5), 1);   // t 1, d 2 -> d 0 (a shift by the span 2)
  EXPECT_EQ(node0.stand_in(w, 7), 3);   // t 1, d 3 -> d 1
  EXPECT_EQ(node0.stand_in(w, 9), -1);  // another pipeline stage: no symmetry
  w.symmetric_axes[static_cast<size_t>(Axis::DATA)] = false;
  EXPECT_EQ(node0.stand_in(w, 5), -1);
}

// DP4 on 2 nodes of 2 (rank = d), node 0 = ranks 0 and 1: a ring of sends along the data axis and
// a data-parallel all_reduce.
core::Workload data_ring() {
  core::Program p;
  p.add(p2p(TaskKind::SEND, Axis::DATA, 1, 100, Stream::DATA_COMM));
  p.add(p2p(TaskKind::RECV, Axis::DATA, -1, 100, Stream::DATA_COMM));
  p.add(collective(core::CollectiveOp::ALL_REDUCE, 0, 4000, Stream::DATA_COMM));
  core::Workload w = make_workload({1, 1, 1, 4, 1}, {p}, {0, 0, 0, 0});
  w.groups.push_back({"data", Axis::DATA, {}, {}});
  w.symmetric_axes = {true, true, true, true, false};
  w.validate();
  return w;
}

TEST(EmulationReduction, MessagesToMirroredRanksGoToTheirStandInsWithTheirOwnTags) {
  const core::Workload w = data_ring();
  const network::ClusterConfig cluster = make_cluster(2, 2);
  const EmulationSubset node0 = EmulationSubset::parse("node:0", w.layout, cluster);
  EXPECT_TRUE(emulation_partners(w, node0, 0).empty());  // every absent rank is stood in for
  const PredictedTimes none;
  HandModel model;
  const Reduction reduction{node0, none, model};
  const EmulationPlan r0 = plan_emulation(w, 0, cluster, unit_profile().device, {}, "s.json", &reduction);
  const EmulationPlan r1 = plan_emulation(w, 1, cluster, unit_profile().device, {}, "s.json", &reduction);
  // Rank 0 sends to 1 (present): the IR's tag. Rank 1 receives it the same way.
  EXPECT_EQ(r0.tasks[0].stand_in, 1);
  EXPECT_EQ(r0.tasks[0].mpi_tag, 0);
  EXPECT_EQ(r1.tasks[1].stand_in, 0);
  EXPECT_EQ(r1.tasks[1].mpi_tag, 0);
  // Rank 1 sends to 2 (absent; 2 - 2 = 0 stands in) and rank 0 receives from 3 (3 - 2 = 1 stands in):
  // the mirror of 1 -> 2 by -2 is 3 -> 0, so they meet, on tag 256 x (1 + 3 + 1): axes before
  // data are 3 coordinates (tensor, context, expert: one each), the sender's offset is 1.
  EXPECT_EQ(r1.tasks[0].stand_in, 0);
  EXPECT_EQ(r1.tasks[0].mpi_tag, 1280);
  EXPECT_EQ(r0.tasks[1].stand_in, 1);
  EXPECT_EQ(r0.tasks[1].mpi_tag, 1280);
  EXPECT_FALSE(r0.tasks[1].modelled);
  EXPECT_EQ(r0.max_mpi_tag, 1280);
  // The all_reduce runs on the 2 present members of 4, resized so that each sends what it would:
  // 4000 B x (2 x 3/4) / (2 x 1/2) = 6000 B (nccl-tests' bus-bandwidth factors).
  EXPECT_EQ(r0.groups[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(r0.groups[0].members, 4);
  EXPECT_EQ(r0.groups[0].color, 0);
  EXPECT_EQ(r1.groups[0].key, 1);
  EXPECT_EQ(r0.tasks[2].bytes, 6000u);
  EXPECT_FALSE(r0.tasks[2].modelled);
  EXPECT_EQ(r0.tasks[2].not_before, 0);
  EXPECT_EQ(r0.measured_calls, 3u);
  EXPECT_EQ(r0.modelled_calls, 0u);
}

TEST(EmulationReduction, AMirrorThatIsTheRankItselfIsModelled) {
  // DP2 on 2 nodes of 1, node 0 = rank 0: its ring partner 1 is its own mirror.
  core::Program p;
  p.add(p2p(TaskKind::SEND, Axis::DATA, 1, 500, Stream::DATA_COMM));
  p.add(collective(core::CollectiveOp::ALL_GATHER, 0, 4000, Stream::DATA_COMM));
  core::Workload w = make_workload({1, 1, 1, 2, 1}, {p}, {0, 0});
  w.groups.push_back({"data", Axis::DATA, {}, {}});
  w.symmetric_axes = {true, true, true, true, false};
  const network::ClusterConfig cluster = make_cluster(2, 1);
  const EmulationSubset node0 = EmulationSubset::parse("node:0", w.layout, cluster);
  const PredictedTimes none;
  HandModel model;
  const Reduction reduction{node0, none, model};
  const EmulationPlan r0 = plan_emulation(w, 0, cluster, unit_profile().device, {}, "s.json", &reduction);
  EXPECT_TRUE(r0.tasks[0].modelled);
  EXPECT_NEAR(r0.tasks[0].seconds, 500e-6 + 1e-3, 1e-15);  // HandModel: 1 us/B, 1 ms across nodes
  EXPECT_EQ(r0.tasks[0].not_before, 0);                     // its mirror arrives with it
  EXPECT_TRUE(r0.tasks[1].modelled);                        // one present member of 2
  EXPECT_NEAR(r0.tasks[1].seconds, 2e-3, 1e-15);            // HandModel: 1 ms per member
  EXPECT_EQ(r0.groups[0].color, -1);                        // no communicator
  EXPECT_EQ(r0.modelled_calls, 2u);
}

// PP2 x DP2 on 2 nodes of 2 (rank = d + 2 p), node 0 = stage 0. Stage 0 computes and sends to
// stage 1; both stages all_reduce on the "embedding" group (first and last stage).
core::Workload two_stages() {
  core::Program s0;
  const uint32_t c = s0.add(compute(0.010));
  s0.add(p2p(TaskKind::SEND, Axis::PIPELINE, 1, 100, Stream::PIPELINE_FORWARD), {c});
  s0.add(collective(core::CollectiveOp::ALL_REDUCE, 0, 400, Stream::DATA_COMM), {c});
  core::Program s1;
  const uint32_t r = s1.add(p2p(TaskKind::RECV, Axis::PIPELINE, -1, 100, Stream::PIPELINE_FORWARD));
  const uint32_t c1 = s1.add(compute(0.020), {r});
  s1.add(collective(core::CollectiveOp::ALL_REDUCE, 0, 400, Stream::DATA_COMM), {c1});
  core::Workload w = make_workload({1, 1, 1, 2, 2}, {s0, s1}, {0, 0, 1, 1});
  w.groups.push_back({"embedding", Axis::PIPELINE, {0, 1}, {}});
  w.symmetric_axes = {true, true, true, true, false};
  w.validate();
  return w;
}

TEST(PredictedTimes, ReadyIsTheLatestOfTheStreamPredecessorAndTheDependencies) {
  const core::Workload w = two_stages();
  SimulationResult result;
  // Rank 2 (stage 1): the receive meets the send at 10 ms and takes 1 ms; compute 20 ms; the
  // all_reduce starts when rank 0 arrives... at 31 ms here, 1 ms long.
  result.timeline = {{2, Stream::PIPELINE_FORWARD, 0.010, 0.011, 0},
                     {2, Stream::COMPUTE, 0.011, 0.031, 1},
                     {2, Stream::DATA_COMM, 0.031, 0.032, 2}};
  const PredictedTimes t(w, result);
  EXPECT_TRUE(t.has(2));
  EXPECT_FALSE(t.has(0));
  EXPECT_EQ(t.ready(2, 0), 0);       // first of its stream, no dependencies
  EXPECT_EQ(t.start(2, 0), 0.010);   // the call's start: its partner's arrival
  EXPECT_EQ(t.ready(2, 1), 0.011);   // its dependency, the receive, ends
  EXPECT_EQ(t.ready(2, 2), 0.031);
  EXPECT_EQ(t.last_end(2), 0.032);
}

TEST(EmulationReduction, CallsWithUnmatchedMembersWaitForTheirPredictedArrival) {
  const core::Workload w = two_stages();
  const network::ClusterConfig cluster = make_cluster(2, 2);
  const EmulationSubset node0 = EmulationSubset::parse("node:0", w.layout, cluster);
  EXPECT_EQ(emulation_partners(w, node0, 0), (std::vector<int>{2}));  // stage 1, d 0: no stand-in
  EXPECT_EQ(emulation_partners(w, node0, 1), (std::vector<int>{3}));
  SimulationResult result;
  result.timeline = {{2, Stream::PIPELINE_FORWARD, 0.010, 0.011, 0},
                     {2, Stream::COMPUTE, 0.011, 0.031, 1},
                     {2, Stream::DATA_COMM, 0.031, 0.032, 2}};
  const PredictedTimes predicted(w, result);
  HandModel model;
  const Reduction reduction{node0, predicted, model};
  EmulationOptions o;
  o.scale_bytes = 0.5;
  const EmulationPlan r0 = plan_emulation(w, 0, cluster, unit_profile().device, o, "s.json", &reduction);
  // The send to stage 1: modelled, 50 B x 1 us + 1 ms across nodes, not before rank 2's receive is
  // ready (0: it heads its stream).
  EXPECT_TRUE(r0.tasks[1].modelled);
  EXPECT_NEAR(r0.tasks[1].seconds, 50e-6 + 1e-3, 1e-15);
  EXPECT_EQ(r0.tasks[1].not_before, 0);
  // The embedding all_reduce: modelled (1 present member of 2: 2 ms by HandModel), not before rank 2
  // reaches its own call at 31 ms.
  EXPECT_TRUE(r0.tasks[2].modelled);
  EXPECT_NEAR(r0.tasks[2].seconds, 2e-3, 1e-15);
  EXPECT_EQ(r0.tasks[2].not_before, 0.031);
  EXPECT_EQ(r0.tasks[2].bytes, 200u);
}

TEST(EmulationReduction, TheWorldSizeIsTheSubsets) {
  const core::Workload w = two_stages();
  const EmulationSubset node0 = EmulationSubset::parse("node:0", w.layout, make_cluster(2, 2));
  EXPECT_NO_THROW(check_emulation_world(node0, 2, "s.json"));
  EXPECT_EQ(problem([&] { check_emulation_world(node0, 4, "s.json"); }),
            "s.json: --ranks node:0 selects 2 of the scenario's ranks, mpirun started 4: emulation runs one MPI "
            "process per selected rank; start it with mpirun -np 2");
}

}  // namespace
}  // namespace trainsim::engine
