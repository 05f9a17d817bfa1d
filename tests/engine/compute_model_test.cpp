#include "sim/engine/compute_model.hpp"

#include <gtest/gtest.h>

#include "sim/core/error.hpp"

namespace trainsim::engine {
namespace {

core::Task task(double flops, double bytes, core::OpClass op = core::OpClass::GEMM) {
  core::Task t;
  t.flops = flops;
  t.bytes = bytes;
  t.op_class = op;
  return t;
}

// The roofline with a size-dependent efficiency (sim/engine/compute_model.hpp):
// t = max(F / (peak * eff(F)), bytes / (HBM * mem_eff)) + overhead.
TEST(ComputeTime, IsTheSlowerOfMathAndMemoryPlusOverhead) {
  const core::GpuSpec& gpu = *core::find_gpu("H100-SXM5-80GB");
  core::DeviceProfile profile;
  profile.ops[static_cast<size_t>(core::OpClass::GEMM)] = {0.8, 1e9, 0.5};
  profile.kernel_overhead = core::Seconds(3e-6);
  const double peak = 989e12;
  // Math-bound: 1e12 FLOPs at 0.8 * 1e12 / (1e12 + 1e9) of peak.
  const double eff = 0.8 * 1e12 / (1e12 + 1e9);
  EXPECT_DOUBLE_EQ(compute_time(task(1e12, 1e6), core::Precision::BF16, gpu, profile).value(), 1e12 / (peak * eff) + 3e-6);
  // Memory-bound: 1 GB over half of 3.35 TB/s.
  EXPECT_DOUBLE_EQ(compute_time(task(1e6, 1e9), core::Precision::BF16, gpu, profile).value(), 1e9 / (3.35e12 * 0.5) + 3e-6);
  // FP8 doubles the peak.
  EXPECT_DOUBLE_EQ(compute_time(task(1e12, 0), core::Precision::FP8, gpu, profile).value(), 1e12 / (1979e12 * eff) + 3e-6);
  // An empty task costs the overhead.
  EXPECT_DOUBLE_EQ(compute_time(task(0, 0), core::Precision::BF16, gpu, profile).value(), 3e-6);
}

TEST(ComputeTime, UnsupportedPrecisionIsABug) {
  EXPECT_THROW(compute_time(task(1e9, 0), core::Precision::BF16, *core::find_gpu("V100-SXM2-32GB"),
                            core::DeviceProfile::defaults()),
               core::InternalError);
}

}  // namespace
}  // namespace trainsim::engine
