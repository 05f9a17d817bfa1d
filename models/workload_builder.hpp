#pragma once
// Strategy -> Workload IR: one program per pipeline stage (ranks of one stage share it), with
// layer-level compute tasks, tensor/sequence-parallel collectives, pipeline send/recv under GPipe,
// 1F1B or interleaved 1F1B, data-parallel gradient buckets overlapped with backward, ZeRO 1-3
// collectives, and the optimizer step.

#include <string>
#include <vector>

#include "models/accounting.hpp"
#include "models/model_spec.hpp"
#include "models/strategy.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::models {

struct BuiltWorkload {
  core::Workload workload;
  IterationFlops flops;                   // whole job, per iteration
  int64_t samples_per_iteration = 0;
  int64_t tokens_per_iteration = 0;
  int micro_batches = 0;                  // per pipeline, per iteration
  std::vector<int> stage_layers;          // resolved layers per chunk, pipeline order
  bool balanced_split = true;             // false when stage_layers came from the scenario
  std::vector<MemoryBreakdown> memory;    // per program (pipeline stage), analytic
};

// REQUIRES: check_strategy() found no problem for these arguments.
BuiltWorkload build_workload(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);

// The balanced split of `layers` into `chunks` (earlier chunks get the remainder).
std::vector<int> balanced_split(int layers, int chunks);

}  // namespace trainsim::models
