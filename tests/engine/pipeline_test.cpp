// Pipeline schedules with free communication against the closed forms of Narayanan et al.,
// "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM" (SC'21), §2.2.1:
// with p stages, m micro-batches and per-micro-batch forward and backward times t_f and t_b, GPipe
// and 1F1B both take (m + p - 1)(t_f + t_b) per iteration, of which the bubble is (p - 1)(t_f + t_b),
// a fraction (p - 1)/(m + p - 1).

#include <cmath>
#include <gtest/gtest.h>
#include <tuple>

#include "sim/engine/backend.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

using namespace testing;

class PipelineOracle : public ::testing::TestWithParam<std::tuple<Schedule, int, int>> {};

TEST_P(PipelineOracle, IterationAndBubbleMatchTheClosedForm) {
  const auto [schedule, p, m] = GetParam();
  const double t_f = 1.5e-3;
  const double t_b = 2 * t_f;
  const core::Workload w = pipeline_workload(p, m, t_f, t_b, schedule);
  // One GPU per node: every send crosses the (free) network.
  const SimulationResult r = make_analytic_backend()->run(w, free_network_cluster(p, 1), unit_profile(), {});
  const double expected = (m + p - 1) * (t_f + t_b);
  const double tolerance = 1e-9 * expected;
  EXPECT_NEAR(r.iteration_time.value(), expected, tolerance);
  EXPECT_EQ(r.critical_rank, 0) << "the first stage runs the last backward";
  const Breakdown& b = r.breakdown;
  EXPECT_NEAR(b.compute.value(), m * (t_f + t_b), tolerance);
  EXPECT_NEAR(b.compute_by_phase[static_cast<size_t>(core::Phase::FORWARD)].value(), m * t_f, tolerance);
  EXPECT_NEAR(b.compute_by_phase[static_cast<size_t>(core::Phase::BACKWARD)].value(), m * t_b, tolerance);
  EXPECT_NEAR(b.pipeline_bubble.value(), (p - 1) * (t_f + t_b), tolerance);
  EXPECT_NEAR(b.pipeline_bubble.value() / r.iteration_time.value(), (p - 1.0) / (m + p - 1.0), 1e-9);
  EXPECT_NEAR(b.exposed_comm_total().value(), 0, tolerance);
  EXPECT_NEAR((b.compute + b.exposed_comm_total() + b.pipeline_bubble + b.other).value(), r.iteration_time.value(),
              1e-9 * expected);
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineOracle,
                         ::testing::Combine(::testing::Values(Schedule::GPIPE, Schedule::ONE_F_ONE_B),
                                            ::testing::Values(1, 2, 4, 8), ::testing::Values(1, 3, 8, 16)));

// With a priced network the bubble grows by the transfers on the critical path; the parts still add
// up exactly and the pipeline stream's busy time is the first stage's own transfers.
TEST(Pipeline, PricedTransfersAreExposedPipelineCommunication) {
  const int p = 4;
  const int m = 8;
  const core::Workload w = pipeline_workload(p, m, 1e-3, 2e-3, Schedule::ONE_F_ONE_B, 50e6);
  const network::ClusterConfig cluster = make_cluster(p, 1, 300e9, 25e9, 0);
  const SimulationResult r = make_analytic_backend()->run(w, cluster, unit_profile(), {});
  const double transfer = 50e6 / 25e9;
  EXPECT_GT(r.iteration_time.value(), (m + p - 1) * 3e-3);
  const Breakdown& b = r.breakdown;
  EXPECT_NEAR((b.compute + b.exposed_comm_total() + b.pipeline_bubble + b.other).value(), r.iteration_time.value(),
              1e-12);
  EXPECT_GT(b.exposed_comm[static_cast<size_t>(core::Axis::PIPELINE)].value(), 0);
  // Stage 0 sends m activations (one after another on its forward stream) and receives m gradients
  // (on its backward stream); the pipeline's busy time is the union of both.
  EXPECT_EQ(r.critical_rank, 0);
  const double busy = r.comm_time[static_cast<size_t>(core::Axis::PIPELINE)].value();
  EXPECT_GE(busy, m * transfer - 1e-12);
  EXPECT_LE(busy, 2 * m * transfer + 1e-12);
}

}  // namespace
}  // namespace trainsim::engine
