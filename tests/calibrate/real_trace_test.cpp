// A trace of a real run (tests/data/traces/h200-eager/: the first 260 KB of `trainsim trace` on a
// 4-layer eager PyTorch GPT step, H200, torch 2.11, CUDA 13.0; docs/gpu-runs.md). The first traces
// made on a GPU had not one external correlation record, so no GEMM kernel joined the cuBLAS call
// that gave its shape and calibration fitted no GEMM at all; this holds the join to a real file.

#include <gtest/gtest.h>

#include <algorithm>

#include "calibrate/profile_fit.hpp"
#include "calibrate/trace_set.hpp"
#include "sim/core/device.hpp"

namespace trainsim::calibrate {
namespace {

const std::string TRACE = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/traces/h200-eager";

TEST(RealTrace, H200EagerGemmKernelsJoinTheirCublasCalls) {
  const TraceSet traces = TraceSet::load({TRACE});
  const core::GpuSpec* gpu = core::find_gpu("H200-SXM-141GB");
  ASSERT_NE(gpu, nullptr);
  FitOptions options;
  options.gpu = *gpu;
  options.links.intra_bandwidth = core::BytesPerSecond(450e9);  // one GPU: no link is measured
  options.links.inter_bandwidth = core::BytesPerSecond(50e9);
  const ProfileFit fit = fit_profile(traces, options);
  const auto gemm = std::find_if(fit.categories.begin(), fit.categories.end(),
                                 [](const FitCategory& c) { return c.name == "gemm bf16"; });
  ASSERT_NE(gemm, fit.categories.end()) << format_fit_table(fit);
  // 94 GEMM kernels of this prefix are joined to a cublasLtMatmul record through CUPTI's external
  // correlation (counted from the file with `trainsim trace dump`).
  EXPECT_EQ(gemm->samples, 94u);
  EXPECT_TRUE(gemm->fitted);
  EXPECT_TRUE(gemm->in_profile);
}

}  // namespace
}  // namespace trainsim::calibrate
