#pragma once
// Time of a compute task on a GPU: the slower of its FLOPs at the op class's efficiency of the
// precision's dense peak and its HBM bytes at the op class's memory efficiency, plus a fixed kernel
// overhead:  t = max(F / (peak · eff(F)), bytes / (HBM · mem_eff)) + overhead.

#include "sim/core/device.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::engine {

// REQUIRES: task.kind == COMPUTE and gpu.peak(precision) > 0.
core::Seconds compute_time(const core::Task& task, core::Precision precision, const core::GpuSpec& gpu,
                           const core::DeviceProfile& profile);

}  // namespace trainsim::engine
