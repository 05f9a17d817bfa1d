#pragma once
// DeepSpeed ZeRO-3's gathered parameters held on the GPU (models/deepspeed_config.hpp has the
// coordinator), for the workload builder's memory breakdown and search's first-pass estimate.

#include "models/deepspeed_config.hpp"

namespace trainsim::models {

// Elements DeepSpeed ZeRO-3 holds gathered at most (the memory breakdown's `buffers`, in elements):
// its hooks stop prefetching at max_live_parameters and a demand fetch of a unit's parameters can
// pass that by one unit, `largest_unit`; never more than the stage's `stage_parameters`.
double zero3_peak_live_elements(const DeepSpeedZeroConfig& config, double largest_unit, double stage_parameters);

}  // namespace trainsim::models
