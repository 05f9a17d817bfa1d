#pragma once
// The task-count estimate that simulation.max_tasks is compared with, held to the real count of the
// built workload: within a factor of 1.25 either way (docs/scenario.md, simulation.max_tasks).

#include <gtest/gtest.h>

#include "models/workload_builder.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::cli::test_support {

// Expects the estimate within 1.25x of the real count; returns the estimate.
inline double expect_task_estimate_near_real(const plan::Scenario& s) {
  const double estimate = models::estimate_task_count(s.model, s.training, s.parallelism, s.offload, s.compression);
  const double real = static_cast<double>(
      models::build_workload(s.model, s.training, s.parallelism, s.pruning, s.offload, s.compression)
          .workload.task_count());
  EXPECT_GE(estimate, real / 1.25) << real;
  EXPECT_LE(estimate, real * 1.25) << real;
  return estimate;
}

}  // namespace trainsim::cli::test_support
