// Ready pools (sim/core/workload.hpp, READY POOL: AxoNN's message-driven execution, Singh & Bhatele
// 2022) on hand-built pipelines with exact pass times (fixtures.hpp timed_pipeline_workload:
// forward 1 s, backward 2 s, one compute task each), every timeline drawn by hand.

#include <gtest/gtest.h>

#include <string>

#include "sim/engine/backend.hpp"
#include "sim/engine/ready_pool.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

using namespace testing;
using Rows = std::vector<std::string>;

SimulationResult run(const core::Workload& w, const network::ClusterConfig& c) {
  SimulationOptions options;
  for (int r = 0; r < w.layout.world_size(); ++r) options.timeline_ranks.push_back(r);
  return make_analytic_backend()->run(w, c, unit_profile(), options);
}

// Transfers take bytes / 1 GB/s, no latency: 0-byte transfers are instantaneous.
network::ClusterConfig one_gb_per_s(int stages) { return make_cluster(stages, 1, 1e9, 1e9, 0); }

TEST(ChooseBlock, EarliestArrivalFirstThenLowerQueue) {
  // The rule of schedule.hpp's async_pipeline_order: at t = max(free, earliest arrival), the
  // candidate that arrived first; on ties the lower queue (backward before forward).
  PoolChoice c = choose_block({{7, 1, true, 3.0}, {4, 0, true, 5.0}}, 4.0);
  EXPECT_EQ(c.kind, PoolChoice::ISSUE);
  EXPECT_EQ(c.block, 7u);
  EXPECT_EQ(c.time, 4.0);
  c = choose_block({{7, 1, true, 5.0}, {4, 0, true, 5.0}}, 2.0);
  EXPECT_EQ(c.block, 4u);
  EXPECT_EQ(c.time, 5.0) << "the stream idles until the first input arrives";
  // An input not known yet could still arrive first: the choice waits for the clock.
  c = choose_block({{7, 1, true, 5.0}, {4, 0, false, 0.0}}, 2.0);
  EXPECT_EQ(c.kind, PoolChoice::DEFER);
  EXPECT_EQ(c.block, 7u);
  EXPECT_EQ(c.time, 5.0);
  EXPECT_EQ(choose_block({{4, 0, false, 0.0}}, 2.0).kind, PoolChoice::WAIT);
  EXPECT_EQ(choose_block({}, 2.0).kind, PoolChoice::WAIT);
}

// (a) Uncontended: the order decided at run time is the one schedule.hpp's async_pipeline_order
// computes (tests/models/schedule_test.cpp draws the same rows; tests/integration/async_pipeline_test
// compares them pass by pass). Under 1F1B's limit (p - s in flight) that is 1F1B's own order.
TEST(ReadyPool, UncontendedOneFOneBLimitRunsOneFOneB) {
  PipelineSpec spec;
  spec.pool = true;
  const core::Workload w = timed_pipeline_workload(spec);
  EXPECT_EQ(draw_passes(w, run(w, one_gb_per_s(4))), (Rows{"0123......aa4bb5cc6dd7ee.ff.gg.hh",
                                                   ".012....aa3bb4cc5dd6ee7ff.gg.hh..",
                                                   "..01..aa2bb3cc4dd5ee6ff7gg.hh....",
                                                   "...0aa1bb2cc3dd4ee5ff6gg7hh......"}));
}

TEST(ReadyPool, UncontendedGpipeLimitRunsWhatArrivesFirst) {
  // GPipe's limit (all m in flight): a stage runs forwards while activations keep coming, and a
  // backward as soon as its gradient is in. Stage 3 at t = 4: F0 done, its own B0 ready at 4 and F1's
  // activations arrive at 4 (stage 2 ends F1 then): a tie, backward first.
  PipelineSpec spec;
  spec.pool = true;
  spec.order = Schedule::GPIPE;
  spec.limit = {8, 8, 8, 8};
  const core::Workload w = timed_pipeline_workload(spec);
  EXPECT_EQ(draw_passes(w, run(w, one_gb_per_s(4))), (Rows{"01234567..aa...bb.ccdd...eeffgghh",
                                                   ".0123456aa7..bb.ccdd...eeffgghh..",
                                                   "..0123aa456bb7ccdd...eeffgghh....",
                                                   "...0aa123bbccdd4567eeffgghh......"}));
}

// (b) One slow link: every activation transfer from stage 0 to stage 1 takes 3 s (3 GB at 1 GB/s),
// every other transfer nothing; p = 3, m = 4, F = 1, B = 2. Stage 0 sends its activations one after
// another on its stream, each once the previous one is through.
//
// Fixed 1F1B (stage 1: F0 F1 B0 F2 B1 F3 B2 B3, its receives in that order on its stream):
//   stage 0  012........aa3.bb...cc.dd    B0 waits for stage 1's B0 (11), B1 (15), B2 (20), B3 (23)
//   stage 1  ....0...1aa.2bb..3cc.dd..    F1 at 8 (A1 is posted after stage 1 sent A0 on, 5 -> 8),
//                                         B0 9-11 (gradient in at 8), F2 12 (A2 9 -> 12), B1 13-15,
//                                         then F3 waits for A3 (14 -> 17): idle 15-17
//   stage 2  .....0aa.1bb.2cc..3dd....
// 25 s.
// Async (limits 3, 2, 1; receives posted ahead, so the activations land at 4, 7, 10 and, stage 0
// running F3 12-13, 16): stage 1 runs F0 at 4, F1 at 7 (before B0's gradient at 8), B0 8-10, F2
// 10-11 (its activations at 10, B1's gradient at 11), B1 11-13; at 13 B2's gradient arrives at 14,
// F3's activations at 16: it runs the backward first (14-16) where 1F1B would wait for the forward,
// and that gradient reaches stage 0 at 16 instead of 20:
//   stage 0  012.......aa3bb.cc....dd
//   stage 1  ....0..1aa2bb.cc3...dd..
//   stage 2  .....0aa1bb2cc...3dd....
// 24 s.
TEST(ReadyPool, ASlowLinkMakesAStageRunTheBackwardWhoseGradientCameFirst) {
  PipelineSpec spec;
  spec.stages = 3;
  spec.micro_batches = 4;
  spec.activation_bytes = {{3e9, 3e9, 3e9, 3e9}, {0, 0, 0, 0}, {0, 0, 0, 0}};
  const core::Workload fixed = timed_pipeline_workload(spec);
  const SimulationResult f = run(fixed, one_gb_per_s(3));
  EXPECT_EQ(draw_passes(fixed, f), (Rows{"012........aa3.bb...cc.dd",
                                  "....0...1aa.2bb..3cc.dd..",
                                  ".....0aa.1bb.2cc..3dd...."}));
  EXPECT_DOUBLE_EQ(f.iteration_time.value(), 25);
  spec.pool = true;
  const core::Workload async = timed_pipeline_workload(spec);
  const SimulationResult a = run(async, one_gb_per_s(3));
  EXPECT_EQ(draw_passes(async, a), (Rows{"012.......aa3bb.cc....dd",
                                  "....0..1aa2bb.cc3...dd..",
                                  ".....0aa1bb2cc...3dd...."}));
  EXPECT_DOUBLE_EQ(a.iteration_time.value(), 24);
}

// (d) The in-flight limit holds at run time: each forward allocates 1 GB and its backward frees it,
// so the activation peak of stage s is the most forwards run ahead of their backwards: at most the
// limit. 4 x 8 uncontended (rows above): 1F1B's limit gives 4, 3, 2, 1; GPipe's limit 8, 7, 6, 4
// (stage 2 runs F0-F3, B0, F4-F6: 6 held; stage 3 F1-F3 then F4-F7 after B3: 4).
TEST(ReadyPool, ActivationPeakIsTheForwardsInFlight) {
  PipelineSpec spec;
  spec.pool = true;
  spec.activation_memory = 1e9;
  auto peaks = [](const SimulationResult& r) {
    std::vector<double> gb;
    for (core::Bytes b : r.peak_dynamic_by_program) gb.push_back(b.value() / 1e9);
    return gb;
  };
  EXPECT_EQ(peaks(run(timed_pipeline_workload(spec), one_gb_per_s(4))), (std::vector<double>{4, 3, 2, 1}));
  spec.order = Schedule::GPIPE;
  spec.limit = {8, 8, 8, 8};
  EXPECT_EQ(peaks(run(timed_pipeline_workload(spec), one_gb_per_s(4))), (std::vector<double>{8, 7, 6, 4}));
  // Under the slow link of the previous test, with any limit L: never more than L held, and stage 0
  // (which runs forwards whenever it may) exactly min(L, m).
  for (int limit : {1, 2, 3, 4}) {
    SCOPED_TRACE(limit);
    spec.stages = 3;
    spec.micro_batches = 4;
    spec.order = Schedule::ONE_F_ONE_B;
    spec.limit = {limit, limit, limit};
    spec.activation_bytes = {{3e9, 3e9, 3e9, 3e9}, {0, 0, 0, 0}, {0, 0, 0, 0}};
    const std::vector<double> p = peaks(run(timed_pipeline_workload(spec), one_gb_per_s(3)));
    EXPECT_EQ(p[0], limit);
    for (double held : p) EXPECT_LE(held, limit);
  }
}

TEST(ReadyPool, AnInputThatNeverComesIsADeadlockNamingThePool) {
  // Stage 0 sends three activations; stage 1's pool waits for a fourth.
  PipelineSpec spec;
  spec.stages = 2;
  spec.micro_batches = 4;
  spec.pool = true;
  core::Workload w = timed_pipeline_workload(spec);
  core::Program& first = w.programs[0];
  for (core::Task& t : first.tasks) {
    if (t.kind == core::TaskKind::SEND && t.micro_batch == 3) t.kind = core::TaskKind::MEMORY;  // the send is gone
  }
  try {
    run(w, one_gb_per_s(2));
    FAIL() << "expected a deadlock";
  } catch (const WorkloadStuck& e) {
    EXPECT_NE(std::string(e.what()).find("waits for its ready pool to issue a block"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trainsim::engine
