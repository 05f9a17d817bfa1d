#include "sim/report/axis.hpp"

#include <gtest/gtest.h>

namespace trainsim::report {
namespace {

std::vector<std::string> labels(const Scale& s) {
  std::vector<std::string> out;
  for (const Tick& t : s.ticks) out.push_back(t.label);
  return out;
}

TEST(LinearScale, NiceStepsFromZero) {
  const Scale s = linear_scale(1.2e5, 3.7e5);
  EXPECT_EQ(labels(s), (std::vector<std::string>{"0", "100k", "200k", "300k", "400k"}));
  EXPECT_DOUBLE_EQ(s.lo, 0);
  EXPECT_DOUBLE_EQ(s.hi, 4e5);
  EXPECT_DOUBLE_EQ(s.to_pixel(2e5, 300, 100), 200);
}

TEST(LinearScale, WithoutZeroAndDegenerate) {
  EXPECT_EQ(labels(linear_scale(0.42, 0.58, 4, false)), (std::vector<std::string>{"0.4", "0.45", "0.5", "0.55", "0.6"}));
  const Scale flat = linear_scale(5, 5, 5, false);
  EXPECT_LT(flat.lo, 5);
  EXPECT_GT(flat.hi, 5);
}

TEST(Log2Scale, PowersOfTwo) {
  const Scale s = log2_scale(16, 512);
  EXPECT_EQ(labels(s), (std::vector<std::string>{"16", "32", "64", "128", "256", "512"}));
  EXPECT_DOUBLE_EQ(s.to_pixel(64, 0, 500), 200);  // log2: 64 is 2/5 of the way from 16 to 512
  EXPECT_EQ(log2_scale(1, 16384).ticks.size(), 8u);  // 15 powers: every second one
}

TEST(FormatTick, CompactLabels) {
  EXPECT_EQ(format_tick(0), "0");
  EXPECT_EQ(format_tick(0.25), "0.25");
  EXPECT_EQ(format_tick(16384), "16384");
  EXPECT_EQ(format_tick(250000), "250k");
  EXPECT_EQ(format_tick(1.5e6), "1.5M");
  EXPECT_EQ(format_tick(2e9), "2G");
}

}  // namespace
}  // namespace trainsim::report
