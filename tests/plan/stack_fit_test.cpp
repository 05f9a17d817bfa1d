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

}  // namespace
}  // namespace trainsim::plan
