#include "sim/core/variability.hpp"

#include <cmath>
#include <gtest/gtest.h>

namespace trainsim::core {
namespace {

// E[max of n standard normals]: exact for n = 2 and 3 (1/sqrt(pi), 3/(2 sqrt(pi))), and the tabulated
// values of Tippett (1925) / Harter (1961) for larger n, to 4 decimals.
TEST(Variability, ExpectedMaximumOfNormalsMatchesTheTables) {
  EXPECT_EQ(expected_max_of_normals(1), 0.0);
  EXPECT_NEAR(expected_max_of_normals(2), 1.0 / std::sqrt(M_PI), 1e-9);
  EXPECT_NEAR(expected_max_of_normals(3), 1.5 / std::sqrt(M_PI), 1e-9);
  EXPECT_NEAR(expected_max_of_normals(10), 1.5388, 1e-4);
  EXPECT_NEAR(expected_max_of_normals(100), 2.5076, 1e-4);
  EXPECT_NEAR(expected_max_of_normals(1000), 3.2414, 1e-4);
  // Grows like sqrt(2 ln n) (Gumbel): within 15% of it at 2^20 ranks and below it.
  const double n = 1 << 20;
  const double e = expected_max_of_normals(1 << 20);
  EXPECT_LT(e, std::sqrt(2 * std::log(n)));
  EXPECT_GT(e, 0.85 * std::sqrt(2 * std::log(n)));
}

TEST(Variability, StragglerSlowdownIsOnePlusSpreadTimesTheExpectedSlowest) {
  EXPECT_EQ(straggler_slowdown(0.0, 16384), 1.0);
  EXPECT_EQ(straggler_slowdown(0.02, 1), 1.0);
  EXPECT_NEAR(straggler_slowdown(0.02, 1000), 1.0 + 0.02 * 3.2414, 1e-5);
  EXPECT_LT(straggler_slowdown(0.01, 512), straggler_slowdown(0.01, 16384));
}

}  // namespace
}  // namespace trainsim::core
