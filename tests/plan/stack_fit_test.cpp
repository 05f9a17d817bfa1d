// The stack fit of a calibrated run (sim/plan/stack_fit.hpp) and the host latency it sets
// (core::DeviceProfile::step_host_latency), against hand-computed oracles.

#include "sim/plan/stack_fit.hpp"

#include <gtest/gtest.h>

#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {
namespace {

const std::string FIXTURE = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/traces/h200-fixture/scenario.json";

// Every program starts after the host latency, so the iteration grows by exactly that much, on a
// pipeline of 4 stages x 4 data-parallel replicas (16 programs' ranks) and on both backends.
TEST(StepHostLatency, AddsExactlyToTheIterationOnBothBackends) {
  const std::string file = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/pipeline/gpt3-2.7b-h100-16-ethernet-pp4.json";
  for (const char* backend : {"analytic", "simgrid"}) {
    const double base = predict(load_scenario(file), backend).iteration_time_s();
    const double later =
        predict(load_scenario(file, {"profile.device.step_host_latency=2.5 ms"}), backend).iteration_time_s();
    EXPECT_NEAR(later - base, 2.5e-3, 1e-9) << backend;
  }
}

// A traced run whose elementwise work took 2x the workload's, norms 1.5x, the rest as modelled, and
// 1 ms more per iteration than the fitted classes: the fit gives those factors and that latency,
// and the job then predicts the measured iteration. (No host bound per kernel, so that each task's
// time is its device time and the iteration moves by exactly the classes' changes.)
TEST(StackFit, RecoversClassFactorsAndTheHostLatency) {
  const Scenario job = load_scenario(FIXTURE, {"profile.device.host_overhead_per_kernel=0 s"});
  const std::array<double, core::OP_CLASS_COUNT> w = workload_seconds(job);
  calibrate::TracedWork traced;
  traced.seconds = w;
  traced.seconds[static_cast<size_t>(core::OpClass::ELEMENTWISE)] *= 2.0;
  traced.seconds[static_cast<size_t>(core::OpClass::NORM)] *= 1.5;
  traced.idle_s = 1e-3;
  // The iteration with those classes, by hand: the job is one rank with no communication worth the
  // name, so its iteration is its compute: the workload's time plus the class changes.
  const double classes = predict(job, "analytic").iteration_time_s() + w[static_cast<size_t>(core::OpClass::ELEMENTWISE)] +
                         0.5 * w[static_cast<size_t>(core::OpClass::NORM)];
  const double measured = classes + 1e-3;
  const StackFit f = fit_stack(job, traced, measured, "the test run");
  const core::DeviceProfile& device = f.device;
  for (const ClassGroupFit& g : f.groups) {
    const double want = g.name == "elementwise" ? 2.0 : g.name == "norm" ? 1.5 : 1.0;
    if (g.fitted) {
      EXPECT_NEAR(g.factor, want, 1e-5) << g.name;
    }
  }
  EXPECT_NEAR(f.predicted_classes_s, classes, 1e-6 * classes);
  EXPECT_NEAR(f.step_host_latency_s, 1e-3, 1e-6 * classes);
  EXPECT_NEAR(f.predicted_s, measured, 1e-9);
  EXPECT_NEAR(device.step_host_latency.value(), f.step_host_latency_s, 1e-15);
  bool sourced = false;
  for (const auto& [key, value] : device.sources) sourced = sourced || key == "stack_fit.elementwise";
  EXPECT_TRUE(sourced);
}

// Composer's own step latency (sim/core/stack.cpp, fitted on published runs) is not a traced run's:
// a job on the built-in profile claims no stack fit, in the table or in the JSON; the fitted
// profile of a traced run lists its classes and the latency it set.
TEST(StackFit, TheStacksOwnStepLatencyIsNotReportedAsFitted) {
  const std::string file =
      std::string(TRAINSIM_SOURCE_DIR) + "/validation/training-fsdp-dev/llmfoundry-mpt-7b-a100-80gb-8gpu-s2048-mb6-ga2.json";
  const Scenario job = load_scenario(file);
  ASSERT_GT(job.profile.device.step_host_latency.value(), 0.0);
  const Prediction p = predict(job, "analytic");
  EXPECT_EQ(report_table(job, p).find("stack fitted on a traced run"), std::string::npos);
  EXPECT_FALSE(report_json(job, p)["simulation"].contains("profile_stack_fit"));

  Scenario fitted = job;
  calibrate::TracedWork traced;
  traced.seconds = workload_seconds(job);
  traced.seconds[static_cast<size_t>(core::OpClass::ELEMENTWISE)] *= 2.0;
  const double measured = predict(job, "analytic").iteration_time_s() * 1.5;
  fitted.profile.device = fit_stack(job, traced, measured, "the test run").device;
  const core::Json listed = report_json(fitted, predict(fitted, "analytic"))["simulation"]["profile_stack_fit"];
  EXPECT_TRUE(listed.contains("stack_fit.elementwise"));
  ASSERT_TRUE(listed.contains("step_host_latency"));
  EXPECT_NE(listed["step_host_latency"].get<std::string>().find("the test run"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::plan
