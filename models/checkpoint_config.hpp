#pragma once
// training.checkpoint: how often and how a training run saves its state (docs/scenario.md). Read by
// TrainingConfig::from_json; what it costs is models/checkpoint.hpp and sim/plan/resilience.hpp.
//
//   "checkpoint": {
//     "interval": "auto",          // steps between checkpoints (a positive integer), a duration
//                                  //   ("30 min": rounded down to whole iterations, at least one
//                                  //   iteration long), or "auto" (default): Daly's optimum from the
//                                  //   checkpoint cost and the cluster's failure rate
//     "mode": "async",             // sync: training waits while the state goes to the parallel file
//                                  //   system; async (default): it waits only for the snapshot to
//                                  //   host memory, which is flushed in the background (CheckFreq,
//                                  //   DataStates, PyTorch DCP async_save, Megatron-core async save);
//                                  //   multilevel: async, the snapshot also written to node-local
//                                  //   storage, so a restart reads the surviving nodes' shards locally
//     "sharding": "data-parallel"  // data-parallel (default): every rank writes 1/DP of its
//                                  //   model-parallel shard (Megatron-core's fully parallel save);
//                                  //   model-parallel: data-parallel rank 0 of each model-parallel
//                                  //   group writes the whole shard (Megatron-LM's classic save)
//   }

#include <cstdint>
#include <string>

#include "sim/core/json_reader.hpp"
#include "sim/core/units.hpp"

namespace trainsim::models {

enum class CheckpointMode { SYNC, ASYNC, MULTILEVEL };
enum class CheckpointSharding { DATA_PARALLEL, MODEL_PARALLEL };
std::string to_string(CheckpointMode m);      // "sync", "async", "multilevel"
std::string to_string(CheckpointSharding s);  // "data-parallel", "model-parallel"

struct CheckpointConfig {
  enum class Interval { AUTO, STEPS, DURATION };
  Interval interval = Interval::AUTO;
  int64_t steps = 0;                 // STEPS: >= 1
  core::Seconds duration;            // DURATION: > 0
  CheckpointMode mode = CheckpointMode::ASYNC;
  CheckpointSharding sharding = CheckpointSharding::DATA_PARALLEL;

  // Reads the object; problems go to r's Diagnostics (calls r.finish()).
  static CheckpointConfig from_json(core::ObjectReader& r);
  core::Json to_json() const;
};

}  // namespace trainsim::models
