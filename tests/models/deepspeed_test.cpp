// DeepSpeed ZeRO-3's parameter coordinator (models/deepspeed_config.hpp): the fetch schedule on
// hand-traced examples, and the keys of training.deepspeed.

#include <gtest/gtest.h>

#include "models/deepspeed_config.hpp"
#include "models/strategy.hpp"

namespace trainsim::models {
namespace {

// Four parameters of 60, 30, 100 and 20 elements; hooks 0..4, hook 1 without parameters (a module
// such as a dropout), hook k > 1 using parameter k - 1.
Zero3Trace four_parameters() {
  Zero3Trace t;
  t.elements = {60, 30, 100, 20};
  t.uses = {{0}, {}, {1}, {2}, {3}};
  return t;
}

DeepSpeedZeroConfig config(double bucket, double live) {
  DeepSpeedZeroConfig c;
  c.prefetch_bucket_elements = bucket;
  c.max_live_parameters = live;
  return c;
}

// Bucket 40, live cap 150, traced by hand as fetch_sub_module runs it:
//   hook 0: fetches p0 (live 60); budget min(40, 150 - 60) = 40: p1 (30 < 40, go on), p2 (130): live
//           190, the peak; releases p0 (130)
//   hook 1: budget min(40, 150 - 130) = 20: p3 (20): live 150
//   hooks 2-4: budget <= 0, nothing issued; each releases its parameter
TEST(Zero3FetchSchedule, PrefetchesWholeParametersUpToTheBucketAndTheLiveCap) {
  const Zero3Schedule s = zero3_fetch_schedule(four_parameters(), config(40, 150));
  EXPECT_EQ(s.issued_at, (std::vector<int>{0, 0, 0, 1}));
  EXPECT_DOUBLE_EQ(s.peak_live, 190);
}

// Bucket 0 (stage3_prefetch_bucket_size 0): every parameter is fetched by the hook that uses it; the
// peak is the largest parameter.
TEST(Zero3FetchSchedule, NoBucketFetchesOnDemand) {
  const Zero3Schedule s = zero3_fetch_schedule(four_parameters(), config(0, 1e9));
  EXPECT_EQ(s.issued_at, (std::vector<int>{0, 2, 3, 4}));
  EXPECT_DOUBLE_EQ(s.peak_live, 100);
}

// Live cap 50: hook 0 fetches p0 (60) and cannot prefetch (budget 50 - 60 < 0); after its release
// hook 1 prefetches p1 and p2 (30 < 40, then 130), which hold the GPU over the cap until hook 3
// releases p2; p3 waits for its own hook.
TEST(Zero3FetchSchedule, LiveCapStopsThePrefetch) {
  const Zero3Schedule s = zero3_fetch_schedule(four_parameters(), config(40, 50));
  EXPECT_EQ(s.issued_at, (std::vector<int>{0, 1, 1, 4}));
  EXPECT_DOUBLE_EQ(s.peak_live, 130);
}

// A parameter used twice (full recompute, then the backward) stays live until its second use.
TEST(Zero3FetchSchedule, ParametersStayLiveUntilTheirLastUse) {
  Zero3Trace t;
  t.elements = {10, 10};
  t.uses = {{0}, {1}, {1}, {0}};
  const Zero3Schedule s = zero3_fetch_schedule(t, config(0, 1e9));
  EXPECT_EQ(s.issued_at, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(s.peak_live, 20);
}

core::Json parse(const std::string& text) { return core::Json::parse(text); }

TEST(DeepSpeedZeroConfig, DefaultsAreDeepSpeedsAndKeysRoundTrip) {
  const DeepSpeedZeroConfig d;
  EXPECT_DOUBLE_EQ(d.prefetch_bucket_elements, 5e7);  // deepspeed/runtime/zero/config.py
  EXPECT_DOUBLE_EQ(d.max_live_parameters, 1e9);
  EXPECT_DOUBLE_EQ(d.persistence_threshold, 1e5);
  core::Diagnostics diag;
  const core::Json j = parse(R"({"prefetch_bucket_elements": 0, "max_live_parameters": 2e8})");
  core::ObjectReader r(j, "x", "/training/deepspeed", diag);
  const DeepSpeedZeroConfig c = DeepSpeedZeroConfig::from_json(r);
  ASSERT_TRUE(diag.empty()) << diag.problems()[0].to_string();
  EXPECT_DOUBLE_EQ(c.prefetch_bucket_elements, 0);
  EXPECT_DOUBLE_EQ(c.max_live_parameters, 2e8);
  EXPECT_DOUBLE_EQ(c.persistence_threshold, 1e5);
  const core::Json again = c.to_json();
  core::ObjectReader r2(again, "x", "/training/deepspeed", diag);
  EXPECT_EQ(DeepSpeedZeroConfig::from_json(r2).to_json(), again);
}

}  // namespace
}  // namespace trainsim::models
