#pragma once
// training.deepspeed: how DeepSpeed ZeRO-3 fetches parameters (docs/scenario.md), and the fetch
// schedule its parameter coordinator follows. Read by TrainingConfig::from_json; accepted under the
// deepspeed stack (check_strategy rejects it elsewhere), used at zero_stage 3 with zero_impl deepspeed.
//
//   "deepspeed": {
//     "prefetch_bucket_elements": 5e7,  // stage3_prefetch_bucket_size: most parameter elements a
//                                       //   module hook issues for prefetch (0: no prefetch)
//     "max_live_parameters": 1e9,       // stage3_max_live_parameters: prefetching stops while this
//                                       //   many gathered elements are live on the GPU
//     "persistence_threshold": 1e5      // stage3_param_persistence_threshold: parameters with fewer
//                                       //   elements are never partitioned (never gathered)
//   }
// Defaults: DeepSpeed's own (deepspeed/runtime/zero/config.py, DeepSpeedZeroConfig:
// prefetch_bucket_size pp_int(5e7), max_live_parameters pp_int(1e9), param_persistence_threshold
// pp_int(1e5)).
//
// How the coordinator runs (deepspeed/runtime/zero/partitioned_param_coordinator.py,
// fetch_sub_module / release_sub_module, the version since deepspeedai/DeepSpeed#1453): a hook
// before every submodule (i) all-gathers the submodule's own parameters that are not yet gathered,
// and (ii) pops parameters off the recorded trace, in order of first use, issuing all-gathers for
// them until it has issued prefetch_bucket_elements (whole parameters: at least one) or the
// gathered parameters would exceed max_live_parameters; a hook after it releases the parameters it
// will not use again. A parameter is a weight matrix: DeepSpeed gathers whole tensors, one
// all-gather per hook for what that hook issues.

#include <cstdint>
#include <vector>

#include "sim/core/json_reader.hpp"

namespace trainsim::models {

struct DeepSpeedZeroConfig {
  double prefetch_bucket_elements = 5e7;
  double max_live_parameters = 1e9;
  double persistence_threshold = 1e5;

  // Reads the object; problems go to r's Diagnostics (calls r.finish()).
  static DeepSpeedZeroConfig from_json(core::ObjectReader& r);
  core::Json to_json() const;
};

// Host time of one parameter fetch by a ZeRO-3 hook (fetch_sub_module and release_sub_module of a
// submodule with a partitioned parameter): about four host-side CUDA calls from Python (the flat
// buffer's allocation and the copy of the shard into it, the all-gather's launch, the wait's event
// record, the release's free), each at the eager stack's measured host time per launch
// (core::EAGER_HOST_PER_LAUNCH_S, 25 us: docs/gpu-runs.md). An estimate from that measurement, not
// a measurement of DeepSpeed's hooks.
inline constexpr int DEEPSPEED_FETCH_HOST_CALLS = 4;

// The host runs ahead of the GPU by at most this many parameter waits: fetch_sub_module keeps the
// events of the last waits and synchronizes on the oldest once more than
// __max_ongoing_fetch_events = 2 are pending (partitioned_param_coordinator.py).
inline constexpr int DEEPSPEED_HOST_LEAD_FETCHES = 3;

// One pass's parameter trace: hooks in execution order, each with the parameters its submodule
// uses (indices into `elements`, which lists the parameters in order of first use: the prefetch
// queue).
struct Zero3Trace {
  std::vector<double> elements;
  std::vector<std::vector<int>> uses;
};

struct Zero3Schedule {
  std::vector<int> issued_at;  // per parameter: the hook that issues its all-gather
  double peak_live = 0;        // most elements gathered and not yet released at any hook
};

// The coordinator's schedule for a trace: at each hook the demand fetch of its parameters not yet
// issued, then the prefetch: with budget = min(prefetch_bucket_elements, max_live_parameters - live),
// the next parameters of the queue while fewer than `budget` elements were prefetched at this hook
// (whole parameters, so at least one when the budget is positive), then the release of the
// parameters this hook uses for the last time.
// REQUIRES: every parameter is used by some hook, first uses in the order of `elements`.
Zero3Schedule zero3_fetch_schedule(const Zero3Trace& trace, const DeepSpeedZeroConfig& config);

}  // namespace trainsim::models
