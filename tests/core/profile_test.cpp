// Profiles: the size-dependent network efficiency curves (reading, interpolation, round trip) and
// their input errors.

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/core/device.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim::core {
namespace {

Profile read_profile(const Json& doc) {
  Diagnostics diag;
  ObjectReader r(doc, "p.json", "", diag);
  Profile p = Profile::from_json(r);
  diag.throw_if_any();
  return p;
}

Json curve_doc(const Json& points) {
  return Json{{"schema", "trainsim.profile/1"},
              {"network", {{"intra_node", {{"bandwidth_efficiency", 0.8}, {"by_size", {{"all_reduce", points}}}}}}}};
}

TEST(Profile, EfficiencyCurveInterpolatesInLogSizeAndIsFlatBeyondItsEnds) {
  const Profile p = read_profile(curve_doc(Json::array({{{"size", "1 MiB"}, {"efficiency", 0.2}},
                                                        {{"size", "4 MiB"}, {"efficiency", 0.6}}})));
  const LinkEfficiency& l = p.network.intra_node;
  EXPECT_TRUE(l.size_dependent());
  EXPECT_DOUBLE_EQ(l.efficiency(CollectiveOp::ALL_REDUCE, Bytes(1 << 20)), 0.2);
  EXPECT_DOUBLE_EQ(l.efficiency(CollectiveOp::ALL_REDUCE, Bytes(1 << 10)), 0.2);
  EXPECT_DOUBLE_EQ(l.efficiency(CollectiveOp::ALL_REDUCE, Bytes(4 << 20)), 0.6);
  EXPECT_DOUBLE_EQ(l.efficiency(CollectiveOp::ALL_REDUCE, Bytes(1e12)), 0.6);
  // 2 MiB is half-way between 1 and 4 MiB in log(size).
  EXPECT_NEAR(l.efficiency(CollectiveOp::ALL_REDUCE, Bytes(2 << 20)), 0.4, 1e-12);
  // Ops without a curve, and the other scope, keep their constants.
  EXPECT_DOUBLE_EQ(l.efficiency(CollectiveOp::ALL_GATHER, Bytes(2 << 20)), 0.8);
  EXPECT_FALSE(p.network.inter_node.size_dependent());
  EXPECT_DOUBLE_EQ(p.network.inter_node.efficiency(CollectiveOp::ALL_REDUCE, Bytes(2 << 20)),
                   NetworkProfile::defaults().inter_node.bandwidth_efficiency);
}

TEST(Profile, EfficiencyCurveRoundTripsThroughJson) {
  const Profile p = read_profile(curve_doc(Json::array({{{"size", "1000003 B"}, {"efficiency", 0.25}},
                                                        {{"size", "64 MiB"}, {"efficiency", 0.6}}})));
  const Json written = p.to_json();
  const Profile back = read_profile(written);
  ASSERT_EQ(back.network.intra_node.by_size[0].size(), 2u);
  EXPECT_EQ(back.network.intra_node.by_size[0][0].size_bytes, 1000003.0);
  EXPECT_EQ(back.network.intra_node.by_size[0][1].size_bytes, double(64 << 20));
  EXPECT_EQ(back.network.intra_node.by_size[0][1].efficiency, 0.6);
  EXPECT_EQ(written["network"]["intra_node"]["by_size"]["all_reduce"][1]["size"], "64 MiB");
  EXPECT_FALSE(written["network"]["inter_node"].contains("by_size"));
}

std::string error_of(const Json& doc) {
  try {
    read_profile(doc);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Profile, BadEfficiencyCurvesNameTheFieldAndWhatWasExpected) {
  EXPECT_NE(error_of(curve_doc(Json::array({{{"size", "4 MiB"}, {"efficiency", 0.2}},
                                            {{"size", "1 MiB"}, {"efficiency", 0.6}}})))
                .find("p.json: /network/intra_node/by_size/all_reduce/1/size: expected sizes in increasing order, "
                      "found 1 MiB after 4 MiB"),
            std::string::npos);
  EXPECT_NE(error_of(curve_doc(Json::array({{{"size", "1 MiB"}, {"efficiency", 1.5}}})))
                .find("/network/intra_node/by_size/all_reduce/0/efficiency"),
            std::string::npos);
  EXPECT_NE(error_of(curve_doc(Json::array())).find("/network/intra_node/by_size/all_reduce: expected a non-empty array"),
            std::string::npos);
  EXPECT_NE(error_of(curve_doc(Json::array({{{"size", "1 MiB"}, {"eficiency", 0.5}}}))).find("did you mean"),
            std::string::npos);
  Json unknown_op = curve_doc(Json::array({{{"size", "1 MiB"}, {"efficiency", 0.5}}}));
  unknown_op["network"]["intra_node"]["by_size"]["allreduce"] = unknown_op["network"]["intra_node"]["by_size"]["all_reduce"];
  EXPECT_NE(error_of(unknown_op).find("by_size/allreduce"), std::string::npos) << error_of(unknown_op);
}

// Item 3 of issue 17: a profile says which GPU (and software) it was fitted on.
TEST(Profile, FittedOnRoundTripsAndOlderCalibrateOutputsGiveTheirFitGpu) {
  const Profile p = read_profile(Json{{"schema", "trainsim.profile/1"},
                                      {"fitted_on", {{"gpu", "A100-SXM4-80GB"}, {"cuda", "12.4"}, {"nccl", "2.21.5"},
                                                     {"framework", "pytorch"}}}});
  EXPECT_EQ(p.device.fitted_on.gpu, "A100-SXM4-80GB");
  EXPECT_EQ(p.device.fitted_on.cuda, "12.4");
  EXPECT_EQ(p.device.fitted_on.nccl, "2.21.5");
  EXPECT_EQ(p.device.fitted_on.framework, "pytorch");
  const Json written = p.to_json();
  EXPECT_EQ(written["fitted_on"]["nccl"], "2.21.5");
  EXPECT_EQ(read_profile(written).device.fitted_on.cuda, "12.4");

  // `calibrate` before fitted_on wrote the GPU under "fit".
  const Profile old = read_profile(Json{{"schema", "trainsim.profile/1"}, {"fit", {{"gpu", "H100-SXM5-80GB"}}}});
  EXPECT_EQ(old.device.fitted_on.gpu, "H100-SXM5-80GB");

  // Neither: the base's (the built-in profile the file amends); the datasheet defaults name no GPU.
  Profile base;
  base.device = DeviceProfile::defaults_for("B200");
  Diagnostics diag;
  const Json bare = {{"schema", "trainsim.profile/1"}, {"device", {{"kernel_overhead", "3 us"}}}};
  ObjectReader r(bare, "p.json", "", diag);
  EXPECT_EQ(Profile::from_json(r, base).device.fitted_on.gpu, "B200");
  EXPECT_TRUE(DeviceProfile::defaults().fitted_on.empty());
  EXPECT_FALSE(Profile{}.to_json().contains("fitted_on"));

  EXPECT_NE(error_of(Json{{"fitted_on", {{"gpu", 12}}}}).find("p.json: /fitted_on/gpu: expected a string"),
            std::string::npos);
  EXPECT_NE(error_of(Json{{"fitted_on", {{"cuda_version", "12"}}}}).find("/fitted_on/cuda_version: unknown key"),
            std::string::npos);
}

}  // namespace
}  // namespace trainsim::core
