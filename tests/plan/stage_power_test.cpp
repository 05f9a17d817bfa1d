// Per-stage power planning (sim/plan/stage_power.hpp): the clocks and energy of a 2-stage pipeline
// worked by hand, and a planned pipeline that saves energy at the same iteration time (within 1%).

#include <gtest/gtest.h>

#include <cmath>

#include "sim/plan/scenario.hpp"
#include "tests/plan/gpu_power_fixture.hpp"
#include "sim/plan/stage_power.hpp"

namespace trainsim::plan {
namespace {

using core::PowerActivity;

TEST(StageClocks, TheStageOffTheCriticalPathSlowsToTheCriticalStagesCompute) {
  // stage 0: G 3 s, M 0.5 s; stage 1: G 4 s, M 0.5 s. C_max = 4.5: f_0 = 3 / (4.5 - 0.5) = 0.75, f_1 = 1.
  const std::vector<double> f = stage_clocks({{3, 0.5}, {4, 0.5}});
  ASSERT_EQ(f.size(), 2u);
  EXPECT_DOUBLE_EQ(f[0], 0.75);
  EXPECT_DOUBLE_EQ(f[1], 1.0);
  // A stage with far less compute stops at the lowest clock.
  EXPECT_DOUBLE_EQ(stage_clocks({{1, 0}, {4, 0}})[0], MIN_STAGE_CLOCK);
  EXPECT_DOUBLE_EQ(stage_clocks({{0, 1}, {4, 0}})[0], 1.0);  // no tensor-core work: nothing to slow
}

TEST(StageClocks, TwoStageEnergyByHand) {
  const core::GpuPower full = gpu_700_100();
  const core::GpuPower slow = power_at_clock(full, 0.75);
  EXPECT_DOUBLE_EQ(slow.limit_w(), 353.125);  // 100 + 600 x 0.75^3
  // Stage 0 over a 5 s iteration before: G [0, 3), M [3, 3.5), waiting [3.5, 5):
  //   3 x 700 + 0.5 x 490 + 1.5 x 100 = 2495 J
  const std::vector<ActivityPiece> before = {
      {0, 3, PowerActivity::GEMM_BOUND}, {3, 3.5, PowerActivity::MEMORY_BOUND}, {3.5, 5, PowerActivity::WAITING}};
  EXPECT_DOUBLE_EQ(rank_gpu_energy_j(before, full), 2495);
  // After, at clock 0.75: G [0, 4) at 353.125 W, M [4, 4.5) capped at 353.125 W, waiting [4.5, 5) at 100 W:
  //   1412.5 + 176.5625 + 50 = 1639.0625 J, a saving of 855.9375 J (34.3%)
  const std::vector<ActivityPiece> after = {
      {0, 4, PowerActivity::GEMM_BOUND}, {4, 4.5, PowerActivity::MEMORY_BOUND}, {4.5, 5, PowerActivity::WAITING}};
  EXPECT_DOUBLE_EQ(rank_gpu_energy_j(after, slow), 1639.0625);
}

TEST(StagePowerPlan, AnUnbalancedPipelineSavesEnergyAtTheSameIterationTime) {
  // 32 layers on 2 stages of 12 and 20: the first stage computes 40% less and waits.
  const Scenario s = load_scenario(std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/gpt3-6.7b-a100-8.json",
                                   {"parallelism.tensor=2", "parallelism.pipeline=2", "parallelism.data=2",
                                    "parallelism.stage_layers=[12,20]"});
  const StagePowerPlan plan = plan_stage_power(s, 0.01, 3);
  ASSERT_EQ(plan.stages.size(), 2u);
  // The trade-off curve runs from the baseline (full clocks) to the unbacked plan: slower, less energy.
  ASSERT_EQ(plan.curve.size(), 3u);
  EXPECT_DOUBLE_EQ(plan.curve[0].time_s, plan.baseline_time_s);
  EXPECT_DOUBLE_EQ(plan.curve[0].gpu_j, plan.baseline_gpu_j);
  EXPECT_GT(plan.curve[2].time_s, plan.curve[1].time_s);
  EXPECT_LT(plan.curve[2].gpu_j, plan.curve[1].gpu_j);
  EXPECT_LT(plan.curve[1].gpu_j, plan.curve[0].gpu_j);
  EXPECT_LT(plan.stages[0].clock, 1.0);
  EXPECT_DOUBLE_EQ(plan.stages[1].clock, 1.0);
  EXPECT_LE(plan.planned_time_s, plan.baseline_time_s * 1.01);
  EXPECT_LT(plan.planned_gpu_j, plan.baseline_gpu_j);
  EXPECT_LT(plan.planned_j, plan.baseline_j);
}

TEST(StagePowerPlan, NeedsUncappedGpus) {
  const Scenario s = load_scenario(std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/gpt3-6.7b-a100-8.json",
                                   {"cluster.gpu.power_cap=\"300 W\""});
  EXPECT_THROW(plan_stage_power(s), core::InputError);
}

}  // namespace
}  // namespace trainsim::plan
