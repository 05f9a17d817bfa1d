#include "sim/engine/compute_model.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::engine {

core::Seconds compute_time(const core::Task& task, core::Precision precision, const core::GpuSpec& gpu,
                           const core::DeviceProfile& profile) {
  TRAINSIM_CHECK(task.kind == core::TaskKind::COMPUTE, "compute_time is for compute tasks");
  const core::FlopsPerSecond peak = gpu.peak(precision);
  TRAINSIM_CHECK(peak.value() > 0, fmt::format("{} has no dense {} peak", gpu.name, core::to_string(precision)));
  const core::OpEfficiency& eff = profile.op(task.op_class);
  const core::Flops flops(task.flops);
  const core::Seconds math = task.flops > 0 ? flops / (peak * eff.at(flops)) : core::Seconds(0);
  const core::Seconds memory = task.bytes > 0 ? core::Bytes(task.bytes) / (gpu.hbm_bandwidth * eff.memory_efficiency)
                                              : core::Seconds(0);
  return std::max(math, memory) + profile.kernel_overhead;
}

}  // namespace trainsim::engine
