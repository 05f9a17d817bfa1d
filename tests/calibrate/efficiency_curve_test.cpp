// Efficiency-by-size curves (profile_fit.hpp, "<scope> <op> curve"): collective samples made from a
// known per-step latency and known size-dependent efficiencies must give both back.

#include <gtest/gtest.h>

#include "calibrate/profile_fit.hpp"

namespace trainsim::calibrate {
namespace {

using core::CollectiveOp;

constexpr double NVLINK = 300e9;  // nominal figures of the fit (FitOptions::links)
constexpr double NIC = 25e9;
constexpr double INTRA_HOP_S = 1e-6;
constexpr double INTER_HOP_S = 2e-6;

FitOptions options() {
  FitOptions o;
  o.gpu = *core::find_gpu("A100-SXM4-80GB");
  o.links = {core::BytesPerSecond(NVLINK), core::Seconds(INTRA_HOP_S), core::BytesPerSecond(NIC),
             core::Seconds(INTER_HOP_S)};
  return o;
}

// The truth: a per-step latency and, per op, an efficiency curve (interpolated in log size).
struct Truth {
  double step_latency_s = 0;
  core::LinkEfficiency link;
};

// Written out here, not core::ring_steps: the truth does not come from the code under test.
double truth_ring_steps(CollectiveOp op, int n) { return (op == CollectiveOp::ALL_REDUCE ? 2.0 : 1.0) * (n - 1); }

double true_time(const Truth& truth, double hop, double bandwidth, CollectiveOp op, int n, double bytes) {
  return truth_ring_steps(op, n) * (hop + truth.step_latency_s) +
         core::bus_bandwidth_factor(op, n) * bytes / (bandwidth * truth.link.efficiency(op, core::Bytes(bytes)));
}

// Three calls per size from 8 B to 1 GiB: two on time and, when `late`, one 10 % late (the median
// ignores it).
void add_sweep(std::vector<CollectiveSample>& out, const Truth& truth, double hop, double bandwidth, CollectiveOp op,
               int n, CollectiveScope scope, bool late = true) {
  for (double bytes = 8; bytes <= core::GiB; bytes *= 2) {
    const double t = true_time(truth, hop, bandwidth, op, n, bytes);
    for (double slowdown : {1.0, late ? 1.1 : 1.0, 1.0}) {
      out.push_back({op, n, core::Bytes(bytes), core::Seconds(t * slowdown), scope});
    }
  }
}

const FitCategory* find(const ProfileFit& fit, const std::string& name) {
  for (const FitCategory& c : fit.categories) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

class EfficiencyCurve : public ::testing::Test {
 protected:
  void SetUp() override {
    intra_.step_latency_s = 1.5e-6;
    intra_.link.by_size[0] = {{64 * core::KiB, 0.15}, {8 * core::MiB, 0.45}, {1 * core::GiB, 0.80}};  // all_reduce
    intra_.link.by_size[static_cast<size_t>(CollectiveOp::ALL_GATHER)] = {{256 * core::KiB, 0.30}, {256 * core::MiB, 0.90}};
    inter_.step_latency_s = 6e-6;
    inter_.link.by_size[0] = {{1 * core::MiB, 0.50}, {64 * core::MiB, 0.92}};
    add_sweep(inputs_.collectives, intra_, INTRA_HOP_S, NVLINK, CollectiveOp::ALL_REDUCE, 8, CollectiveScope::INTRA_NODE);
    add_sweep(inputs_.collectives, intra_, INTRA_HOP_S, NVLINK, CollectiveOp::ALL_GATHER, 8, CollectiveScope::INTRA_NODE);
    add_sweep(inputs_.collectives, inter_, INTER_HOP_S, NIC, CollectiveOp::ALL_REDUCE, 4, CollectiveScope::INTER_NODE);
  }

  // Every recovered point of `op` within 2 % of the truth; returns how many there are.
  static size_t check_points(const core::LinkEfficiency& fitted, const Truth& truth, CollectiveOp op) {
    const std::vector<core::EfficiencyPoint>& curve = fitted.by_size[static_cast<size_t>(op)];
    for (const core::EfficiencyPoint& p : curve) {
      const double want = truth.link.efficiency(op, core::Bytes(p.size_bytes));
      EXPECT_NEAR(p.efficiency / want, 1.0, 0.02) << core::to_string(op) << " at " << p.size_bytes << " B";
    }
    return curve.size();
  }

  Truth intra_, inter_;
  FitInputs inputs_;
};

TEST_F(EfficiencyCurve, RecoversKnownPointsAndLatencyWithinTwoPercent) {
  const ProfileFit fit = fit_profile(inputs_, options());
  const core::NetworkProfile& net = fit.profile.network;
  EXPECT_NEAR(net.intra_node.step_latency.value() / intra_.step_latency_s, 1.0, 0.02);
  EXPECT_NEAR(net.inter_node.step_latency.value() / inter_.step_latency_s, 1.0, 0.02);
  // Only the sizes whose bandwidth term is >= 2 % of the time are points: from ~16 KiB (intra) up.
  EXPECT_GE(check_points(net.intra_node, intra_, CollectiveOp::ALL_REDUCE), 15u);
  EXPECT_GE(check_points(net.intra_node, intra_, CollectiveOp::ALL_GATHER), 15u);
  EXPECT_GE(check_points(net.inter_node, inter_, CollectiveOp::ALL_REDUCE), 15u);
  EXPECT_TRUE(net.intra_node.by_size[static_cast<size_t>(CollectiveOp::REDUCE_SCATTER)].empty());

  const FitCategory* curve = find(fit, "intra_node all_reduce curve");
  ASSERT_NE(curve, nullptr);
  EXPECT_TRUE(curve->in_profile);
  EXPECT_EQ(curve->samples, 28u * 3u);
  ASSERT_EQ(curve->curve.size(), net.intra_node.by_size[0].size());
  EXPECT_EQ(curve->curve.front().size_bytes, net.intra_node.by_size[0].front().size_bytes);
  EXPECT_EQ(curve->curve.back().efficiency, net.intra_node.by_size[0].back().efficiency);
  EXPECT_NE(curve->note.find("latency-bound size(s)"), std::string::npos) << curve->note;
  EXPECT_EQ(curve->note.find("does not vary"), std::string::npos) << curve->note;
  // The profile reproduces the on-time calls: only the late third of the samples is off (by ~9 %).
  EXPECT_NEAR(curve->rms_relative_residual, std::sqrt(1.0 / 3.0) * (1 - 1 / 1.1), 0.005);

  // The joint fit's constant efficiency stays for ops without a curve, and its latency was lowered
  // to the fastest call per step (a constant-efficiency fit overestimates it here).
  const FitCategory* joint = find(fit, "intra_node");
  ASSERT_NE(joint, nullptr);
  EXPECT_NE(joint->note.find("per-step latency lowered"), std::string::npos) << joint->note;
  EXPECT_GT(net.intra_node.bandwidth_efficiency, 0.15);
  EXPECT_LT(net.intra_node.bandwidth_efficiency, 0.9);

  // Without traces only the network is fitted.
  EXPECT_EQ(find(fit, "memory"), nullptr);
  EXPECT_TRUE(fit.traces.empty());
}

TEST_F(EfficiencyCurve, CurvesAreReportedInTheTableAndTheJson) {
  inputs_.nccl_tests = {"ar.txt"};
  const ProfileFit fit = fit_profile(inputs_, options());
  const std::string table = format_fit_table(fit);
  EXPECT_NE(table.find("calibration of A100-SXM4-80GB from 1 nccl-tests file(s)\n"), std::string::npos) << table;
  const core::Json j = profile_fit_json(fit);
  EXPECT_EQ(j["fit"]["nccl_tests"], core::Json::array({"ar.txt"}));
  bool found = false;
  for (const core::Json& c : j["fit"]["categories"]) {
    if (c["name"] != "inter_node all_reduce curve") continue;
    found = true;
    ASSERT_TRUE(c.contains("curve"));
    EXPECT_EQ(c["curve"].size(), fit.profile.network.inter_node.by_size[0].size());
    EXPECT_EQ(c["curve"][0]["size_bytes"], fit.profile.network.inter_node.by_size[0][0].size_bytes);
  }
  EXPECT_TRUE(found);
  EXPECT_NE(table.find("inter_node all_reduce curve"), std::string::npos);
  EXPECT_NE(table.find("curve: "), std::string::npos);
  EXPECT_NE(table.find("1 GiB: 0.8000"), std::string::npos) << table;  // intra all_reduce at 1 GiB
}

TEST_F(EfficiencyCurve, ConstantEfficiencyGivesAFlatCurveAndSaysSo) {
  Truth flat;
  flat.step_latency_s = 3e-6;
  flat.link.bandwidth_efficiency = 0.7;
  inputs_.collectives.clear();
  add_sweep(inputs_.collectives, flat, INTRA_HOP_S, NVLINK, CollectiveOp::REDUCE_SCATTER, 8, CollectiveScope::INTRA_NODE,
            false);
  const ProfileFit fit = fit_profile(inputs_, options());
  EXPECT_NEAR(fit.profile.network.intra_node.bandwidth_efficiency, 0.7, 1e-6);
  EXPECT_NEAR(fit.profile.network.intra_node.step_latency.value(), 3e-6, 1e-12);
  EXPECT_GE(check_points(fit.profile.network.intra_node, flat, CollectiveOp::REDUCE_SCATTER), 10u);
  const FitCategory* curve = find(fit, "intra_node reduce_scatter curve");
  ASSERT_NE(curve, nullptr);
  EXPECT_NE(curve->note.find("does not vary with size"), std::string::npos) << curve->note;
}

TEST_F(EfficiencyCurve, EfficiencyAboveOneIsClampedWithANote) {
  Truth fast;
  fast.step_latency_s = 3e-6;
  fast.link.by_size[0] = {{1 * core::MiB, 0.6}, {1 * core::GiB, 1.25}};  // faster than the nominal NVLink
  inputs_.collectives.clear();
  add_sweep(inputs_.collectives, fast, INTRA_HOP_S, NVLINK, CollectiveOp::ALL_REDUCE, 8, CollectiveScope::INTRA_NODE);
  const ProfileFit fit = fit_profile(inputs_, options());
  const std::vector<core::EfficiencyPoint>& curve = fit.profile.network.intra_node.by_size[0];
  ASSERT_FALSE(curve.empty());
  EXPECT_EQ(curve.back().efficiency, 1.0);
  const FitCategory* c = find(fit, "intra_node all_reduce curve");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->note.find("clamped to 1"), std::string::npos) << c->note;
}

TEST_F(EfficiencyCurve, NoCurveWithoutTwoSizesOrAJointFit) {
  inputs_.collectives.clear();
  // One size only: the scope cannot be fitted (latency and bandwidth inseparable), and no curve.
  for (int i = 0; i < 5; ++i) {
    inputs_.collectives.push_back({CollectiveOp::ALL_REDUCE, 8, core::Bytes(core::MiB), core::Seconds(50e-6),
                                   CollectiveScope::INTRA_NODE});
  }
  // Two sizes, but too few samples for the scope's joint fit: reported, not fitted.
  inputs_.collectives.push_back({CollectiveOp::ALL_REDUCE, 4, core::Bytes(core::MiB), core::Seconds(90e-6),
                                 CollectiveScope::INTER_NODE});
  inputs_.collectives.push_back({CollectiveOp::ALL_REDUCE, 4, core::Bytes(core::GiB), core::Seconds(0.06),
                                 CollectiveScope::INTER_NODE});
  // Several ranks on each of several hosts: counted, never fitted.
  inputs_.collectives.push_back({CollectiveOp::ALL_REDUCE, 16, core::Bytes(core::MiB), core::Seconds(90e-6),
                                 CollectiveScope::HIERARCHICAL});
  const ProfileFit fit = fit_profile(inputs_, options());
  EXPECT_FALSE(fit.profile.network.intra_node.size_dependent());
  EXPECT_FALSE(fit.profile.network.inter_node.size_dependent());
  EXPECT_EQ(find(fit, "intra_node all_reduce curve"), nullptr);
  const FitCategory* inter = find(fit, "inter_node all_reduce curve");
  ASSERT_NE(inter, nullptr);
  EXPECT_FALSE(inter->in_profile);
  EXPECT_NE(inter->note.find("no curve"), std::string::npos);
  const FitCategory* hierarchical = find(fit, "hierarchical");
  ASSERT_NE(hierarchical, nullptr);
  EXPECT_EQ(hierarchical->samples, 1u);
  EXPECT_NE(hierarchical->note.find("not fitted"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::calibrate
