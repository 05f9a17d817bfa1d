// optimizations.gradient_compression end to end, on the bundled bandwidth-bound data-parallel job
// (GPT-3 1.3B, 32 A100 on 4 nodes with one 25 Gb/s NIC each): the key reads back from the resolved
// scenario, the report says what compression sent and saved, the iteration-time effect, the
// uncompressed warm-up, the error-feedback memory, and search's estimate sees the same reductions.

#include <gtest/gtest.h>

#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/plan/search.hpp"
#include "sim/plan/search_estimate.hpp"
#include "tests/cli/task_estimate.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::string SCENARIO = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/compression/gpt-1.3b-powersgd-25gbe-32.json";

core::Json report(const std::vector<std::string>& overrides, const std::string& backend = "analytic") {
  const Scenario s = load_scenario(SCENARIO, overrides);
  return report_json(s, predict(s, backend));
}

std::string method(const std::string& m) { return "optimizations.gradient_compression.method=" + m; }

TEST(CompressionScenario, ResolvedScenarioReadsBackToTheSamePrediction) {
  const Scenario s = load_scenario(SCENARIO);
  const core::Json resolved = s.to_json();
  EXPECT_EQ(resolved["optimizations"]["gradient_compression"]["method"], "powersgd");
  EXPECT_EQ(resolved["optimizations"]["gradient_compression"]["rank"], 4);
  EXPECT_EQ(resolved["optimizations"]["gradient_compression"]["error_feedback"], true);
  const Scenario back = read_scenario(resolved, "resolved.json");
  EXPECT_EQ(back.compression.to_json(), s.compression.to_json());
  EXPECT_DOUBLE_EQ(predict(back, "analytic").iteration_time_s(), predict(s, "analytic").iteration_time_s());
  const Scenario off = load_scenario(SCENARIO, {method("none")});
  EXPECT_FALSE(off.compression.enabled());
  EXPECT_FALSE(off.to_json()["optimizations"].contains("gradient_compression"));
}

// The job is bandwidth-bound: the 5.3 GB fp32 all-reduce through one 25 Gb/s NIC per node takes
// longer than the compute. Each method makes it faster, and reports what it sent against the plain
// all-reduce: a ring all-reduce over n = 32 ranks sends 2(n-1)/n of its N·4 bytes, bf16 half that,
// int8 a quarter (+ scales), top-k at 1% an all-gather of (n-1)·0.01·N·(4 + 4) bytes, 3.125x less
// (31·0.08 against 7.75), not 50x: its traffic grows with n.
TEST(CompressionScenario, EachMethodShortensTheBandwidthBoundIteration) {
  const core::Json none = report({method("none")});
  EXPECT_FALSE(none.contains("gradient_compression"));
  EXPECT_FALSE(none["memory"]["breakdown_bytes"].contains("error_feedback"));
  const double n_params = none["memory"]["breakdown_bytes"]["weights"].get<double>() / 2;  // bf16 weights
  const double plain = 2.0 * 31 / 32 * n_params * 4;
  const double base = none["iteration_time_s"].get<double>();
  EXPECT_GT(none["breakdown_s"]["exposed_communication"].get<double>(), none["breakdown_s"]["compute"].get<double>());

  double previous = base;
  for (const std::string m : {"bf16", "int8", "powersgd"}) {
    SCOPED_TRACE(m);
    const core::Json r = report({method(m)});
    const core::Json& gc = r["gradient_compression"];
    EXPECT_EQ(gc["method"], m);
    EXPECT_NEAR(gc["sent_bytes_per_iteration"]["uncompressed"].get<double>(), plain, 1);
    EXPECT_DOUBLE_EQ(gc["bytes_saved_per_iteration"].get<double>(),
                     gc["sent_bytes_per_iteration"]["uncompressed"].get<double>() -
                         gc["sent_bytes_per_iteration"]["compressed"].get<double>());
    EXPECT_LT(r["iteration_time_s"].get<double>(), previous);
    previous = r["iteration_time_s"].get<double>();
  }
  EXPECT_NEAR(report({method("bf16")})["gradient_compression"]["compression_ratio"].get<double>(), 2, 1e-9);
  const core::Json topk = report({method("topk")});
  EXPECT_NEAR(topk["gradient_compression"]["compression_ratio"].get<double>(), 3.125, 1e-9);
  EXPECT_LT(topk["iteration_time_s"].get<double>(), base);
  // Top-k keeps one fp32 residual per gradient element.
  EXPECT_EQ(topk["memory"]["breakdown_bytes"]["error_feedback"], static_cast<int64_t>(n_params * 4));
  EXPECT_EQ(topk["gradient_compression"]["error_feedback_bytes"], topk["memory"]["breakdown_bytes"]["error_feedback"]);
  // The error feedback is part of the peak: the same job without it is lighter by as much.
  const core::Json no_feedback = report({method("topk"), "optimizations.gradient_compression.error_feedback=false"});
  EXPECT_EQ(topk["memory"]["peak_bytes_per_gpu"].get<int64_t>() - no_feedback["memory"]["peak_bytes_per_gpu"].get<int64_t>(),
            static_cast<int64_t>(n_params * 4));
}

// Both backends see the same compressed workload.
TEST(CompressionScenario, SimGridAgreesWithTheAnalyticBackend) {
  const double analytic = report({})["iteration_time_s"].get<double>();
  const double simgrid = report({}, "simgrid")["iteration_time_s"].get<double>();
  EXPECT_NEAR(simgrid / analytic, 1, 0.05);
}

// 1-bit Adam's warm-up runs uncompressed: the report's warmup_phase is the uncompressed job's time.
TEST(CompressionScenario, OneBitAdamReportsItsUncompressedWarmup) {
  const core::Json r = report({method("onebit_adam"), "optimizations.gradient_compression.warmup_steps=1000"});
  const core::Json& gc = r["gradient_compression"];
  ASSERT_TRUE(gc.contains("warmup_phase"));
  EXPECT_EQ(gc["warmup_phase"]["iterations"], 1000);
  EXPECT_DOUBLE_EQ(gc["warmup_phase"]["iteration_time_s"].get<double>(),
                   report({method("none")})["iteration_time_s"].get<double>());
  EXPECT_LT(r["iteration_time_s"].get<double>(), gc["warmup_phase"]["iteration_time_s"].get<double>());
  const Scenario s = load_scenario(SCENARIO, {method("onebit_adam"), "optimizations.gradient_compression.warmup_steps=1000"});
  const std::string table = report_table(s, predict(s, "analytic"));
  EXPECT_NE(table.find("warm-up, 1000 iterations"), std::string::npos) << table;
  EXPECT_NE(table.find("error feedback"), std::string::npos) << table;
  // Time to train counts the warm-up's 1,000 iterations at the uncompressed time, the rest compressed.
  const core::Json with_tokens = report({method("onebit_adam"), "optimizations.gradient_compression.warmup_steps=1000",
                                         "training.tokens=1e10"});
  const core::Json& t = with_tokens["time_to_train"];
  const double iterations = t["iterations"].get<double>();
  ASSERT_GT(iterations, 1000);
  const double seconds = 1000 * gc["warmup_phase"]["iteration_time_s"].get<double>() +
                         (iterations - 1000) * r["iteration_time_s"].get<double>();
  EXPECT_NEAR(t["days"].get<double>() * 86400, seconds, 1e-9 * seconds);
}

// FSDP already reduces in bf16: bf16 compression changes nothing and the report says so.
TEST(CompressionScenario, Bf16OverSixteenBitReductionsIsAWarning) {
  const Scenario s = load_scenario(SCENARIO, {method("bf16"), "parallelism.zero_stage=3"});
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("it changes nothing"), std::string::npos) << s.warnings[0];
}

// search keeps the scenario's compression for every layout: its closed-form estimate sees the
// compressed reductions and the error-feedback memory, close to the analytic backend.
TEST(CompressionScenario, SearchEstimateSeesTheCompressedReductions) {
  for (const std::string m : {"none", "int8", "topk", "powersgd"}) {
    SCOPED_TRACE(m);
    const Scenario s = load_scenario(SCENARIO, {method(m)});
    const Estimate e =
        estimate_layout(s.model, s.training, s.parallelism, s.cluster, s.profile, s.pruning, s.offload, s.compression);
    const core::Json r = report_json(s, predict(s, "analytic"));
    EXPECT_NEAR(e.iteration_time_s / r["iteration_time_s"].get<double>(), 1, 0.2);
    EXPECT_NEAR(e.peak_memory_bytes / r["memory"]["peak_bytes_per_gpu"].get<double>(), 1, 0.1);
  }
}

// simulation.max_tasks's estimate counts the compression tasks (within the 1.25x of
// resource_limit_test.cpp), ZeRO-3's per-micro-batch ones included.
TEST(CompressionScenario, TaskEstimateCountsTheCompressionTasks) {
  const std::vector<std::vector<std::string>> variants = {
      {method("int8")}, {method("topk")}, {method("powersgd")},
      {method("onebit_adam"), "optimizations.gradient_compression.warmup_steps=10"},
      {method("fp8"), "parallelism.zero_stage=3"}, {method("powersgd"), "parallelism.bucket_size=\"1 GB\""}};
  for (const auto& v : variants) {
    SCOPED_TRACE(v.front());
    const Scenario s = load_scenario(SCENARIO, v);
    test_support::expect_task_estimate_near_real(s);
  }
}

// search --compression tries each method for every layout (as --offload does): twice the candidates
// for two methods, the ZeRO stages PowerSGD cannot run with rejected under that reason, and on this
// bandwidth-bound job the best layout is a compressed one. An unknown method names the flag.
TEST(CompressionScenario, SearchTriesTheCompressionMethods) {
  SearchOptions o;
  o.scenario = SCENARIO;
  o.refine = 10;
  o.max_micro_batch = 2;
  o.recheck = false;
  o.quiet = true;
  o.jobs = 1;
  const uint64_t plain = Search(o).candidate_count();
  o.compression = {"none", "powersgd"};
  const Search search(o);
  EXPECT_EQ(search.candidate_count(), 2 * plain);
  SearchResult r = search.evaluate();
  search.rank(r);
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_EQ(r.ranked.front().layout.compression, "powersgd") << r.ranked.front().layout.describe();
  bool refused = false;
  // One reason for both stages, with their real values (rejection_reasons).
  for (const auto& [reason, n] : rejection_reasons(r.rejected)) {
    refused |= reason.find("\"powersgd\" cannot feed ZeRO-{2, 3}'s reduce-scatter") == 0;
  }
  EXPECT_TRUE(refused);
  o.compression = {"top-k"};
  EXPECT_THROW(Search{o}, core::InputError);
}

}  // namespace
}  // namespace trainsim::cli
