// search's closed-form estimate (sim/plan/search_estimate.hpp) prices an early-stopped full
// recomputation (parallelism.recompute_early_stop) as the workload does: the ops it leaves out, and
// the tensor-parallel collective after the MLP down-projection, are not re-run.

#include <gtest/gtest.h>

#include <filesystem>

#include "sim/plan/prediction.hpp"
#include "sim/plan/search_estimate.hpp"

namespace trainsim::plan {
namespace {

const std::filesystem::path SOURCE(TRAINSIM_SOURCE_DIR);

TEST(RecomputeEstimate, EarlyStopSavesWhatTheProgramSaves) {
  // GPT-3 6.7B with sequence parallelism, TP1 x DP8 and TP2 x DP4, the early stop set explicitly.
  for (const char* tensor : {"1", "2"}) {
    SCOPED_TRACE(tensor);
    auto load = [&](bool early_stop) {
      return load_scenario((SOURCE / "scenarios/gpt3-6.7b-a100-8.json").string(),
                           {"parallelism.recompute=full", std::string("parallelism.tensor=") + tensor,
                            std::string("parallelism.data=") + (tensor[0] == '1' ? "8" : "4"),
                            std::string("parallelism.recompute_early_stop=") + (early_stop ? "true" : "false")});
    };
    const Scenario whole = load(false), early = load(true);
    auto estimate = [](const Scenario& s) {
      return estimate_layout(s.model, s.training, s.parallelism, s.cluster, s.profile).iteration_time_s;
    };
    auto analytic = [](const Scenario& s) { return report_json(s, predict(s, "analytic")).at("iteration_time_s").get<double>(); };
    const double estimated = estimate(whole) - estimate(early), predicted = analytic(whole) - analytic(early);
    EXPECT_GT(predicted, 0.03 * analytic(whole));
    EXPECT_NEAR(estimated / predicted, 1.0, 0.02);  // 1.27743 s both at TP1, 1.35606 s at TP2 (2026-11-27)
  }
}

}  // namespace
}  // namespace trainsim::plan
