#pragma once
// A GPU whose draws are round numbers (core/power.hpp): TDP 700 W, idle 100 W, so GEMM-bound 700 W,
// memory-bound 490 W, communicating 280 W, waiting 100 W. For the hand-worked energy oracles.

#include "sim/core/power.hpp"

namespace trainsim::plan {

inline core::GpuPower gpu_700_100() {
  core::GpuPower g;
  g.tdp_w = 700;
  g.idle_w = 100;
  return g;
}

}  // namespace trainsim::plan
