#include "calibrate/linear_fit.hpp"

#include <gtest/gtest.h>

namespace trainsim::calibrate {
namespace {

TEST(LinearFit, ExactDataGivesExactParameters) {
  // t = 5 us + F / 2e14, over four decades of F.
  std::vector<std::vector<double>> x;
  std::vector<double> t;
  for (double f : {1e8, 1e9, 1e10, 1e11, 1e12}) {
    x.push_back({1.0, f});
    t.push_back(5e-6 + f / 2e14);
  }
  const LinearFit fit = fit_linear(x, t);
  ASSERT_TRUE(fit.solved);
  EXPECT_NEAR(fit.coefficients[0], 5e-6, 5e-6 * 1e-9);
  EXPECT_NEAR(fit.coefficients[1], 1 / 2e14, 1 / 2e14 * 1e-9);
  EXPECT_NEAR(fit.r_squared, 1.0, 1e-12);
  EXPECT_LT(fit.rms_relative_residual, 1e-12);
  EXPECT_EQ(fit.samples, 5u);
}

TEST(LinearFit, NoisyDataReportsItsResiduals) {
  std::vector<std::vector<double>> x;
  std::vector<double> t;
  int i = 0;
  for (double s : {1.0, 2.0, 4.0, 8.0, 16.0, 32.0}) {
    x.push_back({1.0, s});
    t.push_back((1.0 + 0.5 * s) * (i++ % 2 == 0 ? 1.05 : 0.95));  // +/- 5 %
  }
  const LinearFit fit = fit_linear(x, t);
  ASSERT_TRUE(fit.solved);
  EXPECT_LT(fit.r_squared, 1.0);
  EXPECT_GT(fit.r_squared, 0.9);
  EXPECT_GT(fit.rms_relative_residual, 0.01);
  EXPECT_LT(fit.rms_relative_residual, 0.1);
  EXPECT_NEAR(fit.coefficients[1], 0.5, 0.05);
}

TEST(LinearFit, UnidentifiableOrTooFewRowsIsNotSolved) {
  // One size only: a fixed and a per-unit cost cannot be told apart.
  EXPECT_FALSE(fit_linear({{1.0, 4.0}, {1.0, 4.0}, {1.0, 4.0}}, {3.0, 3.0, 3.0}).solved);
  // Fewer rows than unknowns.
  EXPECT_FALSE(fit_linear({{1.0, 4.0}}, {3.0}).solved);
  EXPECT_FALSE(fit_linear({}, {}).solved);
  // A column of zeros.
  EXPECT_FALSE(fit_linear({{1.0, 0.0}, {2.0, 0.0}}, {1.0, 2.0}).solved);
}

}  // namespace
}  // namespace trainsim::calibrate
