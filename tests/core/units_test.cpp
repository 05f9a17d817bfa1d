#include "sim/core/units.hpp"

#include <gtest/gtest.h>

namespace trainsim::core {
namespace {

TEST(Units, ParsesBytesWithDecimalAndBinaryPrefixes) {
  Bytes b;
  ASSERT_TRUE(parse_bytes("80 GiB", b));
  EXPECT_DOUBLE_EQ(b.value(), 80.0 * 1024 * 1024 * 1024);
  ASSERT_TRUE(parse_bytes("1.5 GB", b));
  EXPECT_DOUBLE_EQ(b.value(), 1.5e9);
  ASSERT_TRUE(parse_bytes("16M", b));  // nccl-tests style: binary
  EXPECT_DOUBLE_EQ(b.value(), 16.0 * 1024 * 1024);
  ASSERT_TRUE(parse_bytes("4096", b));
  EXPECT_DOUBLE_EQ(b.value(), 4096);
}

TEST(Units, BandwidthDistinguishesBitsFromBytes) {
  BytesPerSecond r;
  ASSERT_TRUE(parse_bandwidth("200 Gb/s", r));
  EXPECT_DOUBLE_EQ(r.value(), 25e9);
  ASSERT_TRUE(parse_bandwidth("300 GB/s", r));
  EXPECT_DOUBLE_EQ(r.value(), 300e9);
  ASSERT_TRUE(parse_bandwidth("1 GiB/s", r));
  EXPECT_DOUBLE_EQ(r.value(), 1024.0 * 1024 * 1024);
}

TEST(Units, ParsesDurations) {
  Seconds s;
  ASSERT_TRUE(parse_duration("1.5 us", s));
  EXPECT_DOUBLE_EQ(s.value(), 1.5e-6);
  ASSERT_TRUE(parse_duration("2ms", s));
  EXPECT_DOUBLE_EQ(s.value(), 2e-3);
  EXPECT_FALSE(parse_duration("2", s)) << "a duration needs a unit";
}

TEST(Units, RejectsMalformedAndWrongDimension) {
  Bytes b;
  BytesPerSecond r;
  Seconds s;
  EXPECT_FALSE(parse_bytes("80 GiB/s", b));
  EXPECT_FALSE(parse_bytes("-1 GB", b));
  EXPECT_FALSE(parse_bytes("lots", b));
  EXPECT_FALSE(parse_bandwidth("200 Gb", r));
  EXPECT_FALSE(parse_duration("1 GB", s));
  EXPECT_FALSE(parse_bytes("nan", b));
}

TEST(Units, FormattingRoundTrips) {
  for (double v : {1.0, 1536.0, 80.0 * GiB, 3.5 * MiB}) {
    Bytes b;
    ASSERT_TRUE(parse_bytes(format_bytes(Bytes(v)), b)) << format_bytes(Bytes(v));
    EXPECT_NEAR(b.value(), v, v * 1e-5);
  }
  EXPECT_EQ(format_bandwidth(BytesPerSecond(300e9)), "300 GB/s");
  EXPECT_EQ(format_duration(Seconds(1.5e-6)), "1.5 us");
}

TEST(Units, CrossUnitArithmetic) {
  const Seconds t = Bytes(1e9) / BytesPerSecond(25e9);
  EXPECT_DOUBLE_EQ(t.value(), 0.04);
  const Seconds c = Flops(312e12) / FlopsPerSecond(312e12);
  EXPECT_DOUBLE_EQ(c.value(), 1.0);
}

}  // namespace
}  // namespace trainsim::core
