// The power model (sim/core/power.hpp): draws by activity, the cap's clock, watts parsing, the
// cluster.power section and the GPU object's power keys, with their input errors. Oracles are
// worked by hand from the formulas in power.hpp.

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/core/power.hpp"

namespace trainsim::core {
namespace {

GpuPower h100_like() {
  GpuPower p;
  p.tdp_w = 700;
  p.idle_w = 100;
  return p;
}

TEST(GpuPower, DrawsByActivityAreIdlePlusTheirShareOfTheDynamicRange) {
  const GpuPower p = h100_like();
  EXPECT_DOUBLE_EQ(p.draw_w(PowerActivity::GEMM_BOUND), 700);           // 100 + 1.00 x 600
  EXPECT_DOUBLE_EQ(p.draw_w(PowerActivity::MEMORY_BOUND), 490);         // 100 + 0.65 x 600
  EXPECT_DOUBLE_EQ(p.draw_w(PowerActivity::COMMUNICATION), 280);        // 100 + 0.30 x 600
  EXPECT_DOUBLE_EQ(p.draw_w(PowerActivity::WAITING), 100);              // 100 + 0 x 600
}

TEST(GpuPower, ACapLimitsEveryDrawAndSlowsTheClockByTheCubeLaw) {
  GpuPower p = h100_like();
  p.power_cap_w = 400;
  EXPECT_DOUBLE_EQ(p.draw_w(PowerActivity::GEMM_BOUND), 400);
  EXPECT_DOUBLE_EQ(p.draw_w(PowerActivity::MEMORY_BOUND), 400);  // 490 capped
  EXPECT_DOUBLE_EQ(p.draw_w(PowerActivity::COMMUNICATION), 280);
  // (400 - 100) / (700 - 100) = 0.5; 0.5^(1/3) = 0.7937
  EXPECT_NEAR(p.clock_ratio(), 0.793700526, 1e-9);
  EXPECT_DOUBLE_EQ(h100_like().clock_ratio(), 1.0);
}

TEST(GpuPower, CatalogGpusTakeTheirDatasheetTdpAndIdleAtTheMeasuredShareOfIt) {
  const GpuPower h100 = catalog_gpu_power("H100-SXM5-80GB");
  EXPECT_DOUBLE_EQ(h100.tdp_w, 700);
  EXPECT_DOUBLE_EQ(h100.idle_w, 119);  // 0.17 x 700 W (an H200 measured 119.9 W with a context open)
  EXPECT_DOUBLE_EQ(catalog_gpu_power("A100-SXM4-80GB").tdp_w, 400);
  EXPECT_DOUBLE_EQ(catalog_gpu_power("V100-SXM2-32GB").tdp_w, 300);
  EXPECT_FALSE(h100.source.empty());
  EXPECT_DOUBLE_EQ(catalog_gpu_power("no such GPU").tdp_w, 0);
}

TEST(Watts, ParsesNumbersAndUnitStrings) {
  double w = 0;
  EXPECT_TRUE(parse_watts(Json(700), w));
  EXPECT_DOUBLE_EQ(w, 700);
  EXPECT_TRUE(parse_watts(Json("2.6 kW"), w));
  EXPECT_DOUBLE_EQ(w, 2600);
  EXPECT_TRUE(parse_watts(Json("30MW"), w));
  EXPECT_DOUBLE_EQ(w, 30e6);
  EXPECT_FALSE(parse_watts(Json("700"), w));   // a string needs its unit
  EXPECT_FALSE(parse_watts(Json("700 J"), w));
  EXPECT_FALSE(parse_watts(Json(true), w));
  EXPECT_EQ(format_watts(24.1e6), "24.1 MW");
  EXPECT_EQ(format_watts(2600), "2.6 kW");
  EXPECT_EQ(format_watts(87.5), "87.5 W");
}

ClusterPower read_power(const Json& section) {
  Diagnostics diag;
  ObjectReader r(section, "s.json", "/cluster/power", diag);
  ClusterPower p = ClusterPower::from_json(r);
  diag.throw_if_any();
  return p;
}

std::string power_errors(const Json& section) {
  try {
    read_power(section);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(ClusterPower, DefaultsAndTheNonGpuPowerOfANode) {
  const ClusterPower p = read_power(Json::object());
  EXPECT_DOUBLE_EQ(p.pue, 1.1);
  // 2 nodes x (2600 + 8 x (25 + 50)) = 2 x 3200
  EXPECT_DOUBLE_EQ(p.non_gpu_w(2, 8), 6400);
  EXPECT_FALSE(p.price_per_kwh.has_value());
  EXPECT_FALSE(p.grid_gco2_per_kwh.has_value());
  const ClusterPower q = read_power(p.to_json());
  EXPECT_DOUBLE_EQ(q.host_w, p.host_w);
}

TEST(ClusterPower, ReadsEveryKeyAndRoundTrips) {
  const ClusterPower p = read_power({{"pue", 1.3}, {"host_power", "1.5 kW"}, {"nic_power", 20}, {"switch_power", "0 W"},
                                     {"price_per_kwh", 0.08}, {"grid_gco2_per_kwh", 400}});
  EXPECT_DOUBLE_EQ(p.pue, 1.3);
  EXPECT_DOUBLE_EQ(p.host_w, 1500);
  EXPECT_DOUBLE_EQ(p.nic_w, 20);
  EXPECT_DOUBLE_EQ(p.switch_w_per_nic, 0);
  EXPECT_DOUBLE_EQ(*p.price_per_kwh, 0.08);
  EXPECT_DOUBLE_EQ(*p.grid_gco2_per_kwh, 400);
  const ClusterPower q = read_power(p.to_json());
  EXPECT_DOUBLE_EQ(q.host_w, 1500);
  EXPECT_DOUBLE_EQ(*q.grid_gco2_per_kwh, 400);
}

TEST(ClusterPower, BadValuesNameTheirKey) {
  EXPECT_NE(power_errors({{"pue", 0.9}}).find("/cluster/power/pue: expected a power usage effectiveness"),
            std::string::npos);
  EXPECT_NE(power_errors({{"host_power", "-5 W"}}).find("/cluster/power/host_power: expected a node's power"),
            std::string::npos);
  EXPECT_NE(power_errors({{"grid_gco2_per_kwh", -1}}).find("/cluster/power/grid_gco2_per_kwh"), std::string::npos);
  EXPECT_NE(power_errors({{"pue", 1.2}, {"watts", 3}}).find("/cluster/power/watts"), std::string::npos);
}

// The GPU object's power keys over an H100's figures.
GpuPower read_keys(const Json& keys) {
  GpuPower p = catalog_gpu_power("H100-SXM5-80GB");
  Diagnostics diag;
  ObjectReader r(keys, "s.json", "/cluster/gpu", diag);
  read_gpu_power(r, p);
  diag.throw_if_any();
  return p;
}

std::string key_errors(const Json& keys) {
  try {
    read_keys(keys);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(GpuObjectPower, ACapKeepsTheBaseFiguresAndRoundTrips) {
  const GpuPower p = read_keys({{"power_cap", "500 W"}});
  EXPECT_DOUBLE_EQ(p.tdp_w, 700);
  EXPECT_DOUBLE_EQ(*p.power_cap_w, 500);
  Json written = Json::object();
  gpu_power_to_json(p, catalog_gpu_power("H100-SXM5-80GB"), written);
  EXPECT_EQ(written, Json({{"power_cap", "500 W"}}));  // the base's tdp and idle are not repeated
  const GpuPower back = read_keys(written);
  EXPECT_DOUBLE_EQ(*back.power_cap_w, 500);
  EXPECT_DOUBLE_EQ(back.idle_w, 119);
}

TEST(GpuObjectPower, AGivenTdpSetsIdleToTheDefaultShareUnlessGiven) {
  EXPECT_DOUBLE_EQ(read_keys({{"tdp", "800 W"}}).idle_w, 136);  // 0.17 x 800 W
  const GpuPower p = read_keys({{"tdp", "800 W"}, {"idle_power", "60 W"}});
  EXPECT_DOUBLE_EQ(p.idle_w, 60);
  Json written = Json::object();
  gpu_power_to_json(p, catalog_gpu_power("H100-SXM5-80GB"), written);
  EXPECT_DOUBLE_EQ(read_keys(written).idle_w, 60);
  EXPECT_DOUBLE_EQ(read_keys(written).tdp_w, 800);
}

TEST(GpuObjectPower, ACapAboveTdpOrBelowIdleIsAnError) {
  EXPECT_NE(key_errors({{"power_cap", "800 W"}})
                .find("s.json: /cluster/gpu/power_cap: expected a power cap above the GPU's idle power (119 W) and at "
                      "most its TDP (700 W), found 800 W"),
            std::string::npos);
  EXPECT_NE(key_errors({{"power_cap", "50 W"}}).find("/cluster/gpu/power_cap"), std::string::npos);
  EXPECT_NE(key_errors({{"tdp", "-700 W"}}).find("/cluster/gpu/tdp"), std::string::npos);
  EXPECT_NE(key_errors({{"idle_power", "700 W"}}).find("/cluster/gpu/idle_power"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::core
