// optimizations.pruning end to end: the scenario key reads back from the resolved scenario, the
// report's "pruning" object says what pruning changed against the same job dense, the dense
// iterations before start_iteration are predicted and counted in time to train, and search's
// closed-form estimate sees the same sparse model states as the workload builder.

#include <gtest/gtest.h>

#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/plan/search_estimate.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::string SCENARIO = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/llama3-8b-2of4-h100-16.json";

core::Json report(const std::vector<std::string>& overrides) {
  const Scenario s = load_scenario(SCENARIO, overrides);
  return report_json(s, predict(s, "analytic"));
}

TEST(PruningScenario, ResolvedScenarioReadsBackToTheSamePrediction) {
  const Scenario s = load_scenario(SCENARIO);
  const core::Json resolved = s.to_json();
  EXPECT_EQ(resolved["optimizations"]["pruning"]["method"], "2:4");
  EXPECT_EQ(resolved["optimizations"]["pruning"]["communication"], "values");
  const Scenario back = read_scenario(resolved, "resolved.json");
  EXPECT_EQ(back.pruning.to_json(), s.pruning.to_json());
  EXPECT_DOUBLE_EQ(predict(back, "analytic").iteration_time_s(), predict(s, "analytic").iteration_time_s());
  // method "none" turns the scenario dense, and prints no pruning.
  const Scenario dense = load_scenario(SCENARIO, {"optimizations.pruning.method=none"});
  EXPECT_FALSE(dense.pruning.enabled());
  EXPECT_FALSE(dense.to_json()["optimizations"].contains("pruning"));
}

// What 2:4 changed, against the same scenario dense. Llama 3 8B: the pruned matrices hold P of the
// T parameters; half of P is dropped from weights, gradients, optimizer states and (communication
// "values") from what data parallelism sends; the weights gain P/8 bytes of 2-bit metadata.
TEST(PruningScenario, ReportSaysWhatPruningChangedAgainstDense) {
  const core::Json pruned = report({});
  const core::Json dense = report({"optimizations.pruning.method=none"});
  ASSERT_TRUE(pruned.contains("pruning"));
  EXPECT_FALSE(dense.contains("pruning"));
  const core::Json& pr = pruned["pruning"];
  const double p = pr["pruned_parameters_per_gpu"].get<double>();
  const double total = dense["memory"]["breakdown_bytes"]["weights"].get<double>() / 2;  // bf16 weights
  // 32 layers x (4096 x 6144 + 4096 x 4096 + 3 x 4096 x 14336) linear weights.
  EXPECT_DOUBLE_EQ(p, 32.0 * (4096.0 * 6144 + 4096.0 * 4096 + 3 * 4096.0 * 14336));
  for (const char* state : {"weights", "gradients", "optimizer_states"}) {
    EXPECT_EQ(pr["dense_memory_bytes"][state], dense["memory"]["breakdown_bytes"][state]) << state;
    EXPECT_EQ(pr["memory_bytes"][state], pruned["memory"]["breakdown_bytes"][state]) << state;
  }
  EXPECT_NEAR(pr["memory_bytes"]["weights"].get<double>(), (total - p / 2) * 2 + p / 8, 1);
  EXPECT_NEAR(pr["memory_bytes"]["gradients"].get<double>(), (total - p / 2) * 4, 1);
  EXPECT_NEAR(pr["data_communication_bytes"].get<double>() / pr["dense_data_communication_bytes"].get<double>(),
              1 - p / 2 / total, 1e-9);
  // Sparse tensor cores make the iteration faster; the model FLOPs (MFU's) are the dense model's.
  EXPECT_LT(pruned["iteration_time_s"].get<double>(), dense["iteration_time_s"].get<double>());
  EXPECT_DOUBLE_EQ(pruned["model_tflops_per_gpu"].get<double>() * pruned["iteration_time_s"].get<double>(),
                   dense["model_tflops_per_gpu"].get<double>() * dense["iteration_time_s"].get<double>());
  EXPECT_NEAR(pr["gemm_speedup"]["forward"].get<double>(), 1.7, 1e-12);
  EXPECT_NEAR(pr["gemm_speedup"]["backward"].get<double>(), 1 / (0.5 / 1.7 + 0.5), 1e-12);
  EXPECT_TRUE(pruned["memory"]["fits"].get<bool>());
  EXPECT_FALSE(dense["memory"]["fits"].get<bool>());
  EXPECT_FALSE(pr.contains("dense_phase")) << "pruned from iteration 0";
}

// Pruning from iteration 100 of 1,000 (tokens = 1,000 x 128 x 8192): the first 100 iterations run
// dense (the dense job's time; it needs 90 GiB, so the report says it does not fit), the other 900
// pruned: days = (100 x dense + 900 x pruned) / 86,400.
TEST(PruningScenario, DenseIterationsBeforeTheStartCountInTimeToTrain) {
  const std::string tokens = "training.tokens=" + std::to_string(1000LL * 128 * 8192);
  const core::Json r = report({tokens, "optimizations.pruning.start_iteration=100"});
  const core::Json dense = report({tokens, "optimizations.pruning.method=none"});
  const double pruned_s = r["iteration_time_s"].get<double>();
  const double dense_s = dense["iteration_time_s"].get<double>();
  const core::Json& phase = r["pruning"]["dense_phase"];
  EXPECT_EQ(phase["iterations"], 100);
  EXPECT_DOUBLE_EQ(phase["iteration_time_s"].get<double>(), dense_s);
  EXPECT_EQ(phase["peak_bytes_per_gpu"], dense["memory"]["peak_bytes_per_gpu"]);
  EXPECT_FALSE(phase["fits"].get<bool>());
  EXPECT_EQ(r["time_to_train"]["iterations"], 1000);
  EXPECT_NEAR(r["time_to_train"]["days"].get<double>(), (100 * dense_s + 900 * pruned_s) / 86400, 1e-12);
  // A start beyond the run: every iteration dense.
  const core::Json late = report({tokens, "optimizations.pruning.start_iteration=5000"});
  EXPECT_NEAR(late["time_to_train"]["days"].get<double>(), 1000 * dense_s / 86400, 1e-12);
  // The table says so.
  const Scenario s = load_scenario(SCENARIO, {"optimizations.pruning.start_iteration=100"});
  const std::string table = report_table(s, predict(s, "analytic"));
  EXPECT_NE(table.find("dense until iteration 100"), std::string::npos) << table;
  EXPECT_NE(table.find("OUT OF MEMORY"), std::string::npos) << table;
}

// search keeps the scenario's pruning for every layout (docs/search.md): its closed-form estimate
// counts the same sparse model states as the workload builder.
TEST(PruningScenario, SearchEstimateSeesTheSparseModelStates) {
  const Scenario s = load_scenario(SCENARIO);
  const Estimate pruned = estimate_layout(s.model, s.training, s.parallelism, s.cluster, s.profile, s.pruning);
  const Estimate dense = estimate_layout(s.model, s.training, s.parallelism, s.cluster, s.profile);
  const core::Json r = report_json(s, predict(s, "analytic"));
  auto states = [](const core::Json& m) {
    return m["weights"].get<double>() + m["gradients"].get<double>() + m["optimizer_states"].get<double>();
  };
  EXPECT_NEAR(dense.peak_memory_bytes - pruned.peak_memory_bytes,
              states(r["pruning"]["dense_memory_bytes"]) - states(r["pruning"]["memory_bytes"]), 4);
  EXPECT_LT(pruned.iteration_time_s, dense.iteration_time_s);
}

}  // namespace
}  // namespace trainsim::cli
