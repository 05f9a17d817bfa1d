#include "sim/engine/compute_model.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::engine {
namespace {

// FlashAttention with a causal mask computes only the blocks on and below the diagonal.
constexpr double FLASH_CAUSAL_FRACTION = 0.5;

double operand_ratio(const core::GemmTile& t) { return double(t.m) * t.n / (t.m + t.n); }

// FLOPs divided by utilization and by the sparse kernel's speedup, for the products the task runs.
double quantized_flops(const core::Task& task, const core::GpuSpec& gpu, const core::DeviceProfile& profile) {
  const core::GemmShape& g = task.gemm;
  const bool sparse = task.op_class == core::OpClass::GEMM && task.sparsity != core::GemmSparsity::NONE;
  const double speedup = sparse ? sparse_speedup(task, gpu, profile) : 1.0;
  // 2:4 weight gradients are dense GEMMs (their output is the weight, not a product with it).
  const double wgrad_speedup = task.sparsity == core::GemmSparsity::STRUCTURED_2_4 ? 1.0 : speedup;
  // Shares of the task's FLOPs that are data gradient and weight gradient (a split backward runs one).
  const bool backward = task.phase == core::Phase::BACKWARD;
  const double input_share = task.gradient == core::BackwardPart::INPUT ? 1.0 : task.gradient == core::BackwardPart::WEIGHT ? 0.0 : 0.5;
  if (task.op_class != core::OpClass::GEMM || g.count == 0 || g.m <= 0 || g.n <= 0 || g.k <= 0 || gpu.sm_count <= 0 ||
      profile.gemm_tiles.empty()) {
    if (!backward) return task.flops / speedup;
    return input_share * task.flops / speedup + (1 - input_share) * task.flops / wgrad_speedup;
  }
  const int sms = gpu.sm_count;
  if (!backward) {
    return task.flops / best_tile(g.m, g.n, g.count, sms, profile).utilization / speedup;
  }
  const double dgrad = best_tile(g.m, g.k, g.count, sms, profile).utilization;
  const double wgrad = best_tile(g.k, g.n, g.count, sms, profile).utilization;
  return input_share * task.flops / dgrad / speedup + (1 - input_share) * task.flops / wgrad / wgrad_speedup;
}

}  // namespace

double flash_head_dim_factor(double head_dim, double overhead) {
  if (head_dim <= 0 || overhead <= 0) return 1.0;
  constexpr double MEASURED = 128;  // the head size of the FlashAttention ceilings (device.cpp)
  return std::min(1.0, (head_dim / (head_dim + overhead)) / (MEASURED / (MEASURED + overhead)));
}

int kernel_launches(const core::Task& task) {
  // A split backward (zero-bubble B or W) runs one of the two.
  return task.phase == core::Phase::BACKWARD && task.gradient == core::BackwardPart::BOTH ? 2 : 1;
}

core::Seconds host_bound(core::Seconds device, int launches, const core::DeviceProfile& profile) {
  return std::max(device, profile.host_overhead_per_kernel * static_cast<double>(launches));
}

double sparse_speedup(const core::Task& task, const core::GpuSpec& gpu, const core::DeviceProfile& profile) {
  const double d = task.density;
  switch (task.sparsity) {
    case core::GemmSparsity::NONE: return 1.0;
    case core::GemmSparsity::STRUCTURED_2_4:
      TRAINSIM_CHECK(gpu.sparse_tensor_cores, fmt::format("a 2:4 sparse GEMM on {}, which has no sparse tensor cores", gpu.name));
      return 2.0 * profile.sparse.structured_2_4_scale;
    case core::GemmSparsity::UNSTRUCTURED:
      TRAINSIM_CHECK(d > 0 && d <= 1, "sparse GEMM density outside (0, 1]");
      return profile.sparse.unstructured_efficiency(1.0 - d) / d;
    case core::GemmSparsity::BLOCK: {
      TRAINSIM_CHECK(d > 0 && d <= 1 && task.sparse_block > 0, "block-sparse GEMM without a density or block size");
      const core::GemmTile& full = profile.gemm_full_tile;
      const core::GemmTile block{full.m, task.sparse_block};
      return std::min(1.0, operand_ratio(block) / operand_ratio(full)) / d;
    }
  }
  return 1.0;
}

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
    double work = quantized_flops(task, gpu, profile);
    if (task.op_class == core::OpClass::FLASH_ATTENTION) {
      work *= FLASH_CAUSAL_FRACTION / flash_head_dim_factor(task.gemm.k, profile.flash_head_dim_overhead);
    }
    math = (work + eff.half_flops) / (peak.value() * eff.max_efficiency * scale);
  }
  const double memory = task.bytes > 0 ? task.bytes / (gpu.hbm_bandwidth.value() * eff.memory_efficiency) : 0.0;
  const core::Seconds device = core::Seconds(std::max(math, memory) * profile.straggler_slowdown) + profile.kernel_overhead;
  return host_bound(device, kernel_launches(task), profile);
}

}  // namespace trainsim::engine
