#include "calibrate/accuracy.hpp"

#include <gtest/gtest.h>

#include "sim/core/error.hpp"

namespace trainsim::calibrate {
namespace {

TEST(Accuracy, SignedErrorIsRelativeToTheMeasurement) {
  EXPECT_DOUBLE_EQ(signed_error(11.0, 10.0), 0.1);
  EXPECT_DOUBLE_EQ(signed_error(9.0, 10.0), -0.1);
  EXPECT_THROW(signed_error(1.0, 0.0), core::InternalError);
}

TEST(Accuracy, SummaryOfOddAndEvenCounts) {
  const ErrorSummary odd = summarize({0.05, -0.20, 0.01});
  EXPECT_EQ(odd.cases, 3u);
  EXPECT_DOUBLE_EQ(odd.median_abs, 0.05);
  EXPECT_DOUBLE_EQ(odd.max_abs, 0.20);
  EXPECT_EQ(odd.worst, 1u);
  EXPECT_NEAR(odd.mean_abs, 0.26 / 3, 1e-15);
  const ErrorSummary even = summarize({-0.04, 0.02, 0.10, -0.01});
  EXPECT_DOUBLE_EQ(even.median_abs, 0.03) << "mean of the two middle |errors|";
  EXPECT_EQ(even.worst, 2u);
}

}  // namespace
}  // namespace trainsim::calibrate
