#include "sim/engine/compute_model.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::engine {
namespace {

// FlashAttention with a causal mask computes only the blocks on and below the diagonal.
constexpr double FLASH_CAUSAL_FRACTION = 0.5;

// FLOPs divided by utilization, for the products the task runs.
double quantized_flops(const core::Task& task, int sms, const core::DeviceProfile& profile) {
  const core::GemmShape& g = task.gemm;
  if (task.op_class != core::OpClass::GEMM || g.count == 0 || g.m <= 0 || g.n <= 0 || g.k <= 0 || sms <= 0 ||
      profile.gemm_tiles.empty()) {
    return task.flops;
  }
  if (task.phase != core::Phase::BACKWARD) return task.flops / best_tile(g.m, g.n, g.count, sms, profile).utilization;
  const double dgrad = best_tile(g.m, g.k, g.count, sms, profile).utilization;
  const double wgrad = best_tile(g.k, g.n, g.count, sms, profile).utilization;
  return 0.5 * task.flops / dgrad + 0.5 * task.flops / wgrad;
}

}  // namespace

core::Seconds compute_time(const core::Task& task, core::Precision precision, const core::GpuSpec& gpu,
                           const core::DeviceProfile& profile) {
  TRAINSIM_CHECK(task.kind == core::TaskKind::COMPUTE, "compute_time is for compute tasks");
  const core::Precision p = task.has_precision ? task.precision : precision;
  const core::FlopsPerSecond peak = gpu.peak(p);
  TRAINSIM_CHECK(peak.value() > 0, fmt::format("{} has no dense {} peak", gpu.name, core::to_string(p)));
  const core::OpEfficiency& eff = profile.op(task.op_class);
  double math = 0;
  if (task.flops > 0) {
    const bool tensor_core = task.op_class == core::OpClass::GEMM || task.op_class == core::OpClass::FLASH_ATTENTION;
    const double scale = tensor_core ? profile.gemm_precision_scale[static_cast<size_t>(p)] : 1.0;
    double work = quantized_flops(task, gpu.sm_count, profile);
    if (task.op_class == core::OpClass::FLASH_ATTENTION) work *= FLASH_CAUSAL_FRACTION;
    math = (work + eff.half_flops) / (peak.value() * eff.max_efficiency * scale);
  }
  const double memory = task.bytes > 0 ? task.bytes / (gpu.hbm_bandwidth.value() * eff.memory_efficiency) : 0.0;
  return core::Seconds(std::max(math, memory)) + profile.kernel_overhead;
}

}  // namespace trainsim::engine
