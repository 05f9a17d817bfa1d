#include "calibrate/profile_fit.hpp"

#include <gtest/gtest.h>

#include "tests/calibrate/synthetic_trace.hpp"

namespace trainsim::calibrate {
namespace {

using testing::SyntheticParameters;

FitOptions a100_options() {
  FitOptions o;
  o.gpu = *core::find_gpu("A100-SXM4-80GB");
  o.links = {core::BytesPerSecond(testing::NVLINK), core::Seconds(testing::INTRA_HOP_S),
             core::BytesPerSecond(testing::NIC_PER_GPU), core::Seconds(testing::INTER_HOP_S)};
  return o;
}

const FitCategory& category(const ProfileFit& fit, const std::string& name) {
  for (const FitCategory& c : fit.categories) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no category " << name;
  static const FitCategory none;
  return none;
}

TEST(ProfileFit, ExactSyntheticDataGivesExactParameters) {
  const SyntheticParameters p;
  const ProfileFit fit = fit_profile(TraceSet(testing::make_synthetic_run(p).ranks), a100_options());
  const core::OpEfficiency& gemm = fit.profile.device.op(core::OpClass::GEMM);
  EXPECT_NEAR(gemm.max_efficiency, p.gemm_max_efficiency, 1e-4);
  EXPECT_NEAR(gemm.half_flops / p.gemm_half_flops, 1.0, 1e-3);
  EXPECT_NEAR(fit.profile.device.op(core::OpClass::ELEMENTWISE).memory_efficiency, p.memory_efficiency, 1e-4);
  EXPECT_NEAR(fit.profile.network.intra_node.bandwidth_efficiency, p.intra_bandwidth_efficiency, 1e-4);
  EXPECT_NEAR(fit.profile.network.intra_node.step_latency.value(), p.intra_step_latency_s, 1e-9);
  EXPECT_NEAR(fit.profile.network.inter_node.bandwidth_efficiency, p.inter_bandwidth_efficiency, 1e-4);
  EXPECT_NEAR(fit.profile.network.inter_node.step_latency.value(), p.inter_step_latency_s, 1e-9);

  const FitCategory& g = category(fit, "gemm bf16");
  EXPECT_TRUE(g.in_profile);
  EXPECT_EQ(g.samples, 12u * 3u * 16u);  // 12 shapes, 3 iterations, 16 ranks
  EXPECT_NEAR(g.r_squared, 1.0, 1e-9);
  // One sample per collective call (the 8 ranks of a node make one call), 3 iterations.
  EXPECT_EQ(category(fit, "intra_node").samples, 12u * 2u * 3u);
  EXPECT_EQ(category(fit, "inter_node").samples, 4u * 8u * 3u);
  EXPECT_EQ(category(fit, "intra_node all_gather").samples, 4u * 2u * 3u);
  EXPECT_FALSE(category(fit, "flash_attention").fitted);
  EXPECT_NE(category(fit, "elementwise").note.find("not fitted"), std::string::npos);
}

TEST(ProfileFit, NoisyDataReportsRSquaredBelowOne) {
  SyntheticParameters p;
  p.gemm_noise = 0.03;
  const ProfileFit fit = fit_profile(TraceSet(testing::make_synthetic_run(p).ranks), a100_options());
  const FitCategory& g = category(fit, "gemm bf16");
  EXPECT_TRUE(g.fitted);
  EXPECT_LT(g.r_squared, 1.0);
  EXPECT_GT(g.rms_relative_residual, 0.01);
  EXPECT_NEAR(fit.profile.device.op(core::OpClass::GEMM).max_efficiency, p.gemm_max_efficiency, 0.05);
}

TEST(ProfileFit, TooFewPointsKeepTheDefaults) {
  SyntheticParameters p;
  p.gemm_shapes = 2;
  // One rank of one iteration holds 2 GEMMs: fewer than the 4 samples asked for.
  std::vector<core::TraceFile> one = {testing::make_synthetic_run(p).ranks.front()};
  one.front().records.resize(one.front().records.size() / 3);
  FitOptions o = a100_options();
  o.min_samples = 4;
  const ProfileFit fit = fit_profile(TraceSet(std::move(one)), o);
  const core::Profile defaults;
  EXPECT_EQ(fit.profile.device.op(core::OpClass::GEMM).max_efficiency, defaults.device.op(core::OpClass::GEMM).max_efficiency);
  EXPECT_EQ(fit.profile.device.op(core::OpClass::GEMM).half_flops, defaults.device.op(core::OpClass::GEMM).half_flops);
  const FitCategory& g = category(fit, "gemm bf16");
  EXPECT_FALSE(g.fitted);
  EXPECT_FALSE(g.in_profile);
  EXPECT_NE(g.note.find("too few samples"), std::string::npos);
  // A single rank sees no other host: no inter-node samples, defaults kept.
  EXPECT_EQ(fit.profile.network.inter_node.bandwidth_efficiency, defaults.network.inter_node.bandwidth_efficiency);
}

TEST(ProfileFit, JsonIsAVersionedProfileWithTheFit) {
  const ProfileFit fit = fit_profile(TraceSet(testing::make_synthetic_run({}).ranks), a100_options());
  const core::Json j = profile_fit_json(fit);
  EXPECT_EQ(j["schema"], "trainsim.profile/1");
  EXPECT_EQ(j["fit"]["gpu"], "A100-SXM4-80GB");
  EXPECT_EQ(j["fit"]["traces"].size(), 16u);
  core::Diagnostics diag;
  core::ObjectReader r(j, "profile.json", "", diag);
  const core::Profile back = core::Profile::from_json(r);
  EXPECT_TRUE(diag.empty());
  EXPECT_NEAR(back.network.inter_node.step_latency.value(), 6e-6, 1e-9);  // 6 digits in the file
  EXPECT_NEAR(back.device.op(core::OpClass::GEMM).max_efficiency, 0.72, 1e-4);
  EXPECT_NE(format_fit_table(fit).find("gemm bf16"), std::string::npos);
}

TEST(ProfileFit, CatalogGpuOfATracedDeviceName) {
  EXPECT_EQ(catalog_gpu_for("NVIDIA A100-SXM4-80GB")->name, "A100-SXM4-80GB");
  EXPECT_EQ(catalog_gpu_for("H100-SXM5-80GB")->name, "H100-SXM5-80GB");
  EXPECT_EQ(catalog_gpu_for("NVIDIA H100 80GB HBM3")->name, "H100-SXM5-80GB");  // what the driver calls the SXM5
  EXPECT_EQ(catalog_gpu_for("NVIDIA H200")->name, "H200-SXM-141GB");
  EXPECT_EQ(catalog_gpu_for("GeForce GTX 1080"), nullptr);
}

}  // namespace
}  // namespace trainsim::calibrate
