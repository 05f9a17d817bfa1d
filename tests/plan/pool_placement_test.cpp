// A job on several GPU types (sim/plan/pool_placement.hpp, docs/scenario.md "Mixed GPU types inside
// one job"): the balanced splits against hand-solved min-max problems, the bundled examples'
// resolution and report, and the two backends on them. The iteration-time oracles of the mechanism
// itself are tests/engine/pool_test.cpp.

#include <filesystem>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sim/core/error.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/pool_placement.hpp"

namespace trainsim::plan {
namespace {

const std::filesystem::path SOURCE(TRAINSIM_SOURCE_DIR);
const std::string DP = (SOURCE / "scenarios/mixed/gpt3-1.3b-h100-a100-dp.json").string();
const std::string PP = (SOURCE / "scenarios/mixed/gpt3-2.7b-h100-a100-pp.json").string();

TEST(BalancedLayers, MinimizesTheSlowestChunk) {
  // 10 layers on a chunk of 1 s per layer and one of 2 s: {7, 3} costs max(7, 6) = 7 s; {6, 4}
  // costs 8 s and {8, 2} 8 s.
  EXPECT_EQ(balanced_layers(10, {1.0, 2.0}), (std::vector<int>{7, 3}));
  // Equal speeds: the balanced split, earlier chunks first on ties.
  EXPECT_EQ(balanced_layers(3, {1.0, 1.0}), (std::vector<int>{2, 1}));
  // Every chunk keeps a layer, however slow.
  EXPECT_EQ(balanced_layers(4, {1.0, 100.0, 1.0}), (std::vector<int>{2, 1, 1}));
}

TEST(BalancedMicroBatches, MinimizesTheSlowestReplica) {
  // 20 micro-batches over 2 + 2 replicas, 1 s and 2 s each: m0 + m1 = 10, max(m0, 2 m1) is least at
  // m1 = 3: {7, 3} (7 s; {6, 4} takes 8 s).
  EXPECT_EQ(balanced_micro_batches(20, {2, 2}, {1.0, 2.0}), (std::vector<int64_t>{7, 3}));
  // 10 over 4 + 2 replicas at 1 s and 3 s: 4 m0 + 2 m1 = 10 allows {1, 3} (9 s) and {2, 1} (3 s).
  EXPECT_EQ(balanced_micro_batches(10, {4, 2}, {1.0, 3.0}), (std::vector<int64_t>{2, 1}));
  // 5 micro-batches cannot go to 2 + 2 replicas in whole numbers.
  EXPECT_TRUE(balanced_micro_batches(5, {2, 2}, {1.0, 1.0}).empty());
}

TEST(MixedDataParallel, TheFasterTypeGetsMoreOfTheBatch) {
  const Scenario s = load_scenario(DP);
  ASSERT_EQ(s.cluster.pools.size(), 2u);
  EXPECT_EQ(s.cluster.world_size(), 16);
  EXPECT_EQ(s.cluster.pools[1].first_rank, 8);
  ASSERT_EQ(s.training.batch_split.size(), 2u);
  const auto& [h100, h100_samples] = s.training.batch_split[0];
  const auto& [a100, a100_samples] = s.training.batch_split[1];
  EXPECT_EQ(h100, "h100");
  EXPECT_EQ(a100, "a100");
  EXPECT_EQ(h100_samples + a100_samples, 256);
  EXPECT_GT(h100_samples, a100_samples);
  // 4 replicas of TP2 per pool, micro-batches of 2 samples.
  EXPECT_EQ(h100_samples % 8, 0);
  EXPECT_EQ(a100_samples % 8, 0);
  // The split is the min-max one for the pools' speeds.
  const std::vector<double> speed = micro_batch_seconds(s);
  ASSERT_EQ(speed.size(), 2u);
  EXPECT_LT(speed[0], speed[1]);  // an H100 computes a micro-batch faster than an A100
  EXPECT_EQ(balanced_micro_batches(128, {4, 4}, speed), (std::vector<int64_t>{h100_samples / 8, a100_samples / 8}));
}

TEST(MixedDataParallel, AGivenSplitIsKeptAndTheReportSaysWhichPoolBinds) {
  // All but 4 micro-batches per replica on the A100s: they finish last.
  const Scenario s = load_scenario(DP, {R"(training.batch_split={"h100": 32, "a100": 224})"});
  EXPECT_EQ(s.training.batch_split[0].second, 32);
  const Prediction p = predict(s, "analytic");
  const core::Json r = report_json(s, p);
  ASSERT_TRUE(r.contains("pools"));
  EXPECT_EQ(r["pools"]["binding"], "a100");
  const core::Json& by_pool = r["pools"]["by_pool"];
  EXPECT_EQ(by_pool[0]["micro_batches_per_replica"], 4);
  EXPECT_EQ(by_pool[1]["micro_batches_per_replica"], 28);
  EXPECT_EQ(by_pool[0]["samples"], 32);
  EXPECT_GT(by_pool[0]["idle_fraction"].get<double>(), by_pool[1]["idle_fraction"].get<double>());
  EXPECT_NE(r["pools"]["summary"].get<std::string>().find("pool a100) finish last"), std::string::npos);
  // The slower replicas' compute bounds the iteration from below.
  EXPECT_GE(p.iteration_time_s(), by_pool[1]["compute_s"].get<double>());
  EXPECT_NEAR(r["samples_per_s"].get<double>() * p.iteration_time_s(), 256, 1e-9);
}

TEST(MixedDataParallel, APoolsOwnSlowNicsSlowTheAllReduce) {
  // The A100 node with 2 NICs of 10 Gb/s instead of the fabric's 8 of 200 Gb/s: the gradient
  // all-reduce crosses them, so data-parallel communication takes longer; the batch split (compute
  // speeds) is the same. The resolved scenario keeps the pool's network.
  const std::string slow =
      R"(cluster.pools=[{"name": "h100", "gpu": "H100-SXM5-80GB", "nodes": 1}, )"
      R"({"name": "a100", "gpu": "A100-SXM4-80GB", "nodes": 1, "network": {"nics_per_node": 2, "nic_bandwidth": "10 Gb/s"}}])";
  const Scenario base = load_scenario(DP);
  const Scenario s = load_scenario(DP, {slow});
  ASSERT_TRUE(s.cluster.pools[1].own_network);
  EXPECT_EQ(s.cluster.pools[1].nics_per_node, 2);
  EXPECT_FALSE(s.cluster.pools[0].own_network);
  EXPECT_EQ(s.cluster.pools[0].nics_per_node, 8);  // the cluster's
  EXPECT_EQ(s.training.batch_split, base.training.batch_split);
  // One GPU's share of the slow node's NICs: 2 x 1.25 GB/s / 8 GPUs.
  EXPECT_DOUBLE_EQ(s.cluster.nic_bandwidth_per_gpu_of_node(1).value(), 2 * 1.25e9 / 8);
  EXPECT_DOUBLE_EQ(s.cluster.nic_bandwidth_per_gpu_of_node(0).value(), base.cluster.nic_bandwidth_per_gpu().value());
  const core::Json fast_report = report_json(base, predict(base, "analytic"));
  const Prediction p = predict(s, "analytic");
  const core::Json slow_report = report_json(s, p);
  EXPECT_GT(slow_report["communication_s"]["data"].get<double>(), fast_report["communication_s"]["data"].get<double>());
  EXPECT_GT(p.iteration_time_s(), fast_report["iteration_time_s"].get<double>());
  const Scenario again = read_scenario(s.to_json(Scenario::ProfileOut::AS_GIVEN), "resolved");
  ASSERT_TRUE(again.cluster.pools[1].own_network);
  EXPECT_EQ(predict(again, "analytic").iteration_time_s(), p.iteration_time_s());
}

TEST(MixedPipeline, LayersFollowStageSpeedAndBothBackendsAgree) {
  const Scenario s = load_scenario(PP);
  ASSERT_EQ(s.parallelism.stage_layers.size(), 2u);
  EXPECT_EQ(s.parallelism.stage_layers[0] + s.parallelism.stage_layers[1], 32);
  EXPECT_GT(s.parallelism.stage_layers[0], s.parallelism.stage_layers[1]);  // the H100 stage gets more
  const core::Json analytic = predict_report(s, "analytic");
  const core::Json simgrid = predict_report(s, "simgrid");
  EXPECT_EQ(analytic["pools"]["by_pool"][0]["stages"], core::Json::array({0}));
  EXPECT_EQ(analytic["pools"]["by_pool"][1]["layers"], s.parallelism.stage_layers[1]);
  EXPECT_NEAR(simgrid["iteration_time_s"].get<double>(), analytic["iteration_time_s"].get<double>(),
              0.02 * analytic["iteration_time_s"].get<double>());
  EXPECT_EQ(simgrid["pools"]["binding"], analytic["pools"]["binding"]);
}

TEST(MixedPipeline, TheResolvedScenarioReadsBackToTheSameJob) {
  const Scenario s = load_scenario(PP);
  const Scenario again = read_scenario(s.to_json(Scenario::ProfileOut::AS_GIVEN), "resolved");
  ASSERT_EQ(again.cluster.pools.size(), 2u);
  EXPECT_EQ(again.cluster.pools[0].gpu, "H100-SXM5-80GB");
  EXPECT_EQ(again.cluster.pools[1].nodes, 1);
  EXPECT_EQ(again.parallelism.stage_layers, s.parallelism.stage_layers);
  EXPECT_EQ(predict(again, "analytic").iteration_time_s(), predict(s, "analytic").iteration_time_s());
}

TEST(MixedPipeline, PoolsPriceEachStageWithItsOwnGpu) {
  // The same job with both stages on A100s is slower: the H100 stage now runs on an A100.
  const Scenario mixed = load_scenario(PP);
  const std::string layers = fmt::format("parallelism.stage_layers=[{},{}]", mixed.parallelism.stage_layers[0],
                                         mixed.parallelism.stage_layers[1]);
  const Scenario a100 = load_scenario(PP, {R"(cluster.pools=[{"name": "a", "gpu": "A100-SXM4-80GB", "nodes": 2}])", layers});
  EXPECT_GT(predict(a100, "analytic").iteration_time_s(), predict(mixed, "analytic").iteration_time_s());
}

}  // namespace
}  // namespace trainsim::plan
