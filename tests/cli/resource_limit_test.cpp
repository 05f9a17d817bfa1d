// simulation.max_tasks: the task-count estimate made before a workload is built (what the budget is
// compared with) against the real count, on every bundled scenario and validation case; and the
// refusal, with the estimate, of a scenario above the budget.

#include <chrono>
#include <filesystem>
#include <gtest/gtest.h>

#include "models/workload_builder.hpp"
#include "sim/plan/prediction.hpp"
#include "tests/cli/task_estimate.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::filesystem::path SOURCE(TRAINSIM_SOURCE_DIR);

std::vector<std::filesystem::path> bundled() {
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"scenarios", "scenarios/sanity", "scenarios/offload", "scenarios/resilience",
                          "scenarios/compression", "scenarios/network", "scenarios/pipeline", "scenarios/bench", "scenarios/cnn",
                          "validation/training"}) {
    for (const auto& e : std::filesystem::directory_iterator(SOURCE / dir)) {
      if (e.path().extension() == ".json") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The estimate of the programs' tasks is within a factor of 1.25 either way of the real count
// (measured 0.97-1.13, docs/scenario.md), and far below the default budget, so that every bundled
// scenario and validation case runs.
TEST(TaskBudget, EstimateIsWithinAFactorOfTheRealTaskCount) {
  const auto files = bundled();
  ASSERT_GE(files.size(), 20u);
  for (const auto& f : files) {
    SCOPED_TRACE(f.filename().string());
    const Scenario s = load_scenario(f.string());
    const double estimate = test_support::expect_task_estimate_near_real(s);
    EXPECT_LT(estimate, static_cast<double>(DEFAULT_MAX_TASKS) / 4);
  }
}

TEST(TaskBudget, HugeGlobalBatchIsRefusedUpFrontWithTheEstimate) {
  const std::string file = (SOURCE / "scenarios/gpt3-6.7b-a100-8.json").string();
  const auto start = std::chrono::steady_clock::now();
  try {
    load_scenario(file, {"training.global_batch=8000000"});
    FAIL() << "accepted 500,000 micro-batches";
  } catch (const ImpossibleScenario& e) {
    ASSERT_EQ(e.problems().size(), 1u);
    EXPECT_EQ(e.problems()[0].pointer, "/simulation/max_tasks");
    EXPECT_NE(e.problems()[0].message.find("500000 micro-batches of 32 layers"), std::string::npos) << e.what();
    EXPECT_NE(e.problems()[0].message.find("above the budget of 12000000 tasks"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

TEST(TaskBudget, TheBudgetIsOverridableAndCheckedByPredict) {
  const std::string file = (SOURCE / "scenarios/gpt3-6.7b-a100-8.json").string();
  // Raised, the same scenario reads.
  EXPECT_NO_THROW(load_scenario(file, {"training.global_batch=8000000", "simulation.max_tasks=1000000000000"}));
  // Lowered below a bundled scenario's need, it is refused by load_scenario and by predict().
  EXPECT_THROW(load_scenario(file, {"simulation.max_tasks=1000"}), ImpossibleScenario);
  Scenario s = load_scenario(file);
  s.simulation.max_tasks = 1000;
  EXPECT_THROW(predict(s, "analytic"), ImpossibleScenario);
}

TEST(TaskBudget, OutOfRangeBudgetIsABadInput) {
  const std::string file = (SOURCE / "scenarios/gpt3-6.7b-a100-8.json").string();
  try {
    load_scenario(file, {"simulation.max_tasks=0"});
    FAIL();
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.problems()[0].pointer, "/simulation/max_tasks");
  }
}

}  // namespace
}  // namespace trainsim::cli
