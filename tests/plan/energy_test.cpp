// Energy of an iteration from rank timelines (sim/plan/energy.hpp), against sums worked by hand, and
// the report's energy from both backends on a small scenario.

#include <gtest/gtest.h>

#include <cmath>

#include "sim/plan/energy.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"
#include "tests/plan/gpu_power_fixture.hpp"
#include "sim/plan/time_to_train.hpp"

namespace trainsim::plan {
namespace {

using core::PowerActivity;

// Only GPUs, no facility overhead, so the oracles are the GPUs' sums.
core::ClusterPower gpus_only() {
  core::ClusterPower c;
  c.pue = 1;
  c.host_w = c.nic_w = c.switch_w_per_nic = 0;
  return c;
}

// Two ranks over a 4 s iteration:
//   rank 0: GEMM [0, 2), communication [1, 3) (overlaps the GEMM over [1, 2): GEMM wins), waits [3, 4)
//   rank 1: waits [0, 1), memory-bound [1, 2), communication [2, 4)
std::vector<RankPowerTimeline> two_ranks() {
  RankPowerTimeline r0{1, 0, {{0, 2, PowerActivity::GEMM_BOUND}, {1, 3, PowerActivity::COMMUNICATION}}, {}};
  RankPowerTimeline r1{1, 0, {{1, 2, PowerActivity::MEMORY_BOUND}, {2, 4, PowerActivity::COMMUNICATION}}, {}};
  return {r0, r1};
}

TEST(IterationEnergy, TwoRanksByHand) {
  const EnergyFigures e = iteration_energy(two_ranks(), 4.0, gpu_700_100(), gpus_only(), 1, 8);
  // seconds: GEMM 2 (rank 0), memory 1 (rank 1), communication 1 + 2 = 3, waiting 1 + 1 = 2
  EXPECT_DOUBLE_EQ(e.gpu_s[0], 2);
  EXPECT_DOUBLE_EQ(e.gpu_s[1], 1);
  EXPECT_DOUBLE_EQ(e.gpu_s[2], 3);
  EXPECT_DOUBLE_EQ(e.gpu_s[3], 2);
  // rank 0: 2 x 700 + 1 x 280 + 1 x 100 = 1780; rank 1: 100 + 490 + 2 x 280 = 1150; total 2930 J
  EXPECT_DOUBLE_EQ(e.gpu_j_total, 2930);
  EXPECT_DOUBLE_EQ(e.per_iteration_j, 2930);
  EXPECT_DOUBLE_EQ(e.average_power_w, 732.5);
  // power over time: [0,1) 700 + 100 = 800; [1,2) 700 + 490 = 1190; [2,3) 280 + 280 = 560; [3,4) 100 + 280 = 380
  EXPECT_DOUBLE_EQ(e.peak_power_w, 1190);
}

// Several GPU types (cluster.pools): rank 1 on a GPU of TDP 400 W, idle 50 W (GEMM-bound 400 W,
// memory-bound 50 + 0.65 x 350 = 277.5 W, communicating 50 + 0.3 x 350 = 155 W, waiting 50 W), rank 0
// on the 700 W GPU as above.
TEST(IterationEnergy, EachRankDrawsAsItsOwnGpu) {
  std::vector<RankPowerTimeline> ranks = two_ranks();
  core::GpuPower small;
  small.tdp_w = 400;
  small.idle_w = 50;
  ranks[1].gpu = small;
  const EnergyFigures e = iteration_energy(ranks, 4.0, gpu_700_100(), gpus_only(), 1, 8);
  EXPECT_DOUBLE_EQ(e.gpu_s[2], 3);  // seconds are the same
  // rank 0: 1780 J as above; rank 1: 50 + 277.5 + 2 x 155 = 637.5 J
  EXPECT_DOUBLE_EQ(e.gpu_j_total, 1780 + 637.5);
  EXPECT_DOUBLE_EQ(e.gpu_j[2], 280 + 2 * 155);  // communication: 1 s on rank 0, 2 s on rank 1
  // power over time: [0,1) 700 + 50; [1,2) 700 + 277.5 = 977.5; [2,3) 280 + 155; [3,4) 100 + 155
  EXPECT_DOUBLE_EQ(e.peak_power_w, 977.5);
}

TEST(IterationEnergy, RanksStandForTheirProgramAndTheRestOfTheClusterAndPueCount) {
  std::vector<RankPowerTimeline> ranks = two_ranks();
  ranks[0].ranks = 3;  // rank 0's program runs on 3 GPUs
  core::ClusterPower c = gpus_only();
  c.pue = 1.5;
  c.host_w = 100;
  c.nic_w = 10;
  c.switch_w_per_nic = 5;
  // non-GPU: 2 nodes x (100 + 2 x 15) = 260 W, over 4 s = 1040 J
  const EnergyFigures e = iteration_energy(ranks, 4.0, gpu_700_100(), c, 2, 2);
  EXPECT_DOUBLE_EQ(e.gpu_j_total, 3 * 1780 + 1150);
  EXPECT_DOUBLE_EQ(e.non_gpu_j, 1040);
  EXPECT_DOUBLE_EQ(e.per_iteration_j, (6490 + 1040) * 1.5);
  // peak over [1, 2): 3 x 700 + 490 + 260 = 2850, times 1.5
  EXPECT_DOUBLE_EQ(e.peak_power_w, 2850 * 1.5);
}

TEST(IterationEnergy, ASteadyStateWindowWrapsOntoTheIteration) {
  // A rank whose iteration starts at 3 s: GEMM [3, 5) of the window [3, 7) lands on [3, 4) and [0, 1)
  // of the period; a second rank computes GEMM over [0, 1) too: the peak is both at 700 W.
  RankPowerTimeline late{1, 3, {{3, 5, PowerActivity::GEMM_BOUND}}, {}};
  RankPowerTimeline early{1, 0, {{0, 1, PowerActivity::GEMM_BOUND}}, {}};
  const EnergyFigures e = iteration_energy({late, early}, 4.0, gpu_700_100(), gpus_only(), 1, 8);
  EXPECT_DOUBLE_EQ(e.gpu_s[0], 3);
  EXPECT_DOUBLE_EQ(e.gpu_s[3], 5);
  EXPECT_DOUBLE_EQ(e.peak_power_w, 1400);
  const std::vector<ActivityPiece> pieces = activity_pieces(late, 4.0);
  double covered = 0;
  for (const ActivityPiece& p : pieces) {
    EXPECT_GE(p.start_s, 0);
    EXPECT_LE(p.end_s, 4.0);
    covered += p.end_s - p.start_s;
  }
  EXPECT_DOUBLE_EQ(covered, 4.0);
}

TEST(RunEnergy, MegawattHoursCostAndCarbonFromTheTimeToTrain) {
  EnergyFigures e;
  e.average_power_w = 10e6;  // 10 MW
  TimeToTrain t;
  t.days = 10;  // 240 h: 2,400 MWh
  t.with_failures = TimeToTrain::WithFailures{};
  t.with_failures->days = 12;  // 2,880 MWh
  core::ClusterPower c;
  c.price_per_kwh = 0.1;
  c.grid_gco2_per_kwh = 400;
  add_run_energy(e, t, c);
  EXPECT_DOUBLE_EQ(e.run->mwh, 2400);
  EXPECT_DOUBLE_EQ(*e.run->with_failures_mwh, 2880);
  EXPECT_DOUBLE_EQ(*e.run->cost_usd, 288000);  // the expected energy (with failures) x 1000 kWh x $0.1
  EXPECT_DOUBLE_EQ(*e.run->tco2, 1152);         // 2880 MWh x 400 g / 1000
}

// The report's energy on a bundled scenario from both backends: its GPU seconds add up to the
// world size times the iteration time, and the figures relate as energy.hpp says.
class ReportEnergy : public ::testing::TestWithParam<const char*> {};

TEST_P(ReportEnergy, AddsUpOverTheIteration) {
  const Scenario s = load_scenario(std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/gpt3-6.7b-a100-8.json",
                                   {"training.tokens=1e9", "cluster.power.grid_gco2_per_kwh=400"});
  const Prediction p = predict(s, GetParam());
  ASSERT_TRUE(p.energy.has_value());
  const EnergyFigures& e = *p.energy;
  double seconds = 0;
  for (double v : e.gpu_s) seconds += v;
  EXPECT_NEAR(seconds, s.cluster.world_size() * p.iteration_time_s(), 1e-9 * seconds);
  EXPECT_GT(e.gpu_s[static_cast<size_t>(PowerActivity::GEMM_BOUND)], 0);
  EXPECT_NEAR(e.average_power_w * p.iteration_time_s(), e.per_iteration_j, 1e-9 * e.per_iteration_j);
  EXPECT_GE(e.peak_power_w, e.average_power_w * (1 - 1e-12));
  // never above every GPU at TDP plus the rest
  const double ceiling = (8 * 400 + s.power.non_gpu_w(1, s.cluster.network.nics_per_node)) * s.power.pue;
  EXPECT_LE(e.peak_power_w, ceiling * (1 + 1e-12));
  const core::Json report = report_json(s, p);
  ASSERT_TRUE(report.contains("energy"));
  EXPECT_DOUBLE_EQ(report["energy"]["per_iteration_j"].get<double>(), e.per_iteration_j);
  EXPECT_GT(report["energy"]["run_mwh"].get<double>(), 0);
  EXPECT_NEAR(report["energy"]["tco2"].get<double>(), report["energy"]["run_mwh"].get<double>() * 0.4, 1e-9);
  EXPECT_TRUE(p.result.timeline.empty());  // the ranks recorded for energy are not the caller's timeline
}

INSTANTIATE_TEST_SUITE_P(Backends, ReportEnergy, ::testing::Values("analytic", "simgrid"));

// A job on 8 H100s (700 W) and 8 A100s (400 W), data parallel with the batch split by speed: each
// pool's ranks draw as their own GPU, so the GPUs' joules lie strictly between the same seconds all
// priced as A100s and all as H100s, and the peak stays under both pools at TDP plus the rest.
class PoolEnergy : public ::testing::TestWithParam<const char*> {};

TEST_P(PoolEnergy, EachPoolAtItsOwnPower) {
  const Scenario s = load_scenario(std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/mixed/gpt3-1.3b-h100-a100-dp.json",
                                   {"training.tokens=1e9"});
  const core::Json report = predict_report(s, GetParam());  // SimGrid in a child process
  ASSERT_TRUE(report.contains("energy"));
  const core::Json& e = report["energy"];
  const double time = report["iteration_time_s"].get<double>();
  const core::GpuPower a100 = core::catalog_gpu_power("A100-SXM4-80GB"), h100 = core::catalog_gpu_power("H100-SXM5-80GB");
  ASSERT_EQ(a100.tdp_w, 400);
  ASSERT_EQ(h100.tdp_w, 700);
  double seconds = 0, as_a100 = 0, as_h100 = 0;
  for (int a = 0; a < core::POWER_ACTIVITY_COUNT; ++a) {
    const double sec = e["gpu"]["s"][std::string(core::to_string(static_cast<PowerActivity>(a)))].get<double>();
    seconds += sec;
    as_a100 += sec * a100.draw_w(static_cast<PowerActivity>(a));
    as_h100 += sec * h100.draw_w(static_cast<PowerActivity>(a));
  }
  EXPECT_NEAR(seconds, 16 * time, 1e-9 * seconds);
  const double joules = e["gpu"]["j_total"].get<double>();
  EXPECT_GT(joules, as_a100);
  EXPECT_LT(joules, as_h100);
  EXPECT_NEAR(e["average_power_w"].get<double>() * time, e["per_iteration_j"].get<double>(),
              1e-9 * e["per_iteration_j"].get<double>());
  const double ceiling = (8 * 700 + 8 * 400 + s.power.non_gpu_w(2, s.cluster.network.nics_per_node)) * s.power.pue;
  EXPECT_LE(e["peak_power_w"].get<double>(), ceiling * (1 + 1e-12));
  EXPECT_GT(e["run_mwh"].get<double>(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, PoolEnergy, ::testing::Values("analytic", "simgrid"));

TEST(PowerCap, SlowsComputeAndLowersTheDraw) {
  const std::string file = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/gpt3-6.7b-a100-8.json";
  const Prediction free = predict(load_scenario(file), "analytic");
  const Prediction capped =
      predict(load_scenario(file, {"cluster.gpu.power_cap=\"250 W\""}), "analytic");
  EXPECT_GT(capped.iteration_time_s(), free.iteration_time_s());
  EXPECT_LT(capped.energy->peak_power_w, free.energy->peak_power_w);
}

TEST(ScenarioPower, CatalogGpuAndClusterDefaultsAndTheResolvedFormReadsBack) {
  const std::string file = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/gpt3-6.7b-a100-8.json";
  const Scenario s = load_scenario(file, {"cluster.gpu.power_cap=\"300 W\"", "cluster.power.pue=1.25"});
  EXPECT_DOUBLE_EQ(s.gpu_power.tdp_w, 400);  // A100 SXM4
  EXPECT_DOUBLE_EQ(s.gpu_power.idle_w, 68);  // 0.17 x 400 W (core/power.hpp DEFAULT_IDLE_SHARE)
  EXPECT_DOUBLE_EQ(*s.gpu_power.power_cap_w, 300);
  EXPECT_DOUBLE_EQ(s.power.pue, 1.25);
  const core::Json resolved = s.to_json();
  EXPECT_EQ(resolved["cluster"]["gpu"]["power_cap"], "300 W");
  const Scenario back = read_scenario(resolved, file);
  EXPECT_DOUBLE_EQ(*back.gpu_power.power_cap_w, 300);
  EXPECT_DOUBLE_EQ(back.power.pue, 1.25);
  EXPECT_DOUBLE_EQ(load_scenario(file).power.pue, 1.1);
}

}  // namespace
}  // namespace trainsim::plan
