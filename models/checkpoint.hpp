#pragma once
// What a checkpoint holds and who writes it (training.checkpoint, models/checkpoint_config.hpp), and
// the tasks that put checkpoint traffic into a workload, so that the engine times it against the
// training traffic (docs/resilience.md, "In the engine").
//
// Size. A checkpoint holds the model state needed to resume: the weights in the precision they are
// kept in (weight_bytes_per_parameter: 2 in 16-bit training, 1 with FP8 parameters, 4 in fp32) and
// the optimizer states (optimizer_bytes_per_parameter: fp32 master + Adam moments, 12 bytes in mixed
// precision, 8 in fp32), for every parameter of the model once (replicas hold copies, shards are
// written once). Gradients and activations are not saved. Megatron-LM mixed precision: 14 bytes per
// parameter (SC21 reports 13.8 TB for its 1T model).
//
// Writers. data-parallel sharding: every rank writes an equal share, total / world. model-parallel:
// the data-parallel rank 0 of each model-parallel group writes its whole shard, total / (world / DP)
// (DP = the data degree; with the default expert reading, expert ranks count as model-parallel).
// Shares are taken equal: the embedding and output layer of the first and last pipeline stages are
// spread over all writers (under 2% of the bytes of the bundled models).
//
// Example: Megatron 1T (1.008e12 parameters), bf16, 3,072 GPUs, DP 6, data-parallel sharding:
//   checkpoint_size(...).total = 14.1 TB, per_writer = 4.59 GB, writers = 3072.

#include <cstdint>

#include "models/model_spec.hpp"
#include "models/strategy.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::models {

struct CheckpointSize {
  double bytes_per_parameter = 0;  // weights + optimizer states
  core::Bytes total;               // the whole checkpoint
  int64_t writers = 0;             // ranks writing at once
  core::Bytes per_writer;          // total / writers
  int writing_nodes = 0;           // nodes holding at least one writer
  int writers_per_node = 0;        // the most writers on one node
  core::Bytes per_node() const { return per_writer * static_cast<double>(writers_per_node); }
};

// REQUIRES: the strategy passed check_strategy; gpus_per_node >= 1 divides the world size or not.
CheckpointSize checkpoint_size(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p,
                               CheckpointSharding sharding, int gpus_per_node);

// Which checkpoint traffic to add to a workload (one iteration that checkpoints):
//   SYNC_WRITE  at the end of the iteration (after every task of the rank), a DEVICE_TO_STORAGE copy
//               of `bytes`: training stops until the shard is on the parallel file system
//   SNAPSHOT    at the end, a DEVICE_TO_HOST copy of `bytes` (async and multilevel modes: the stall)
//   FLUSH       at the start, a HOST_TO_STORAGE copy of `bytes` on the STORAGE stream with no
//               dependency: the previous snapshot's background flush, running while this iteration
//               trains (it crosses the node's NICs with data-parallel traffic in the SimGrid backend);
//               the STORAGE stream does not extend the iteration (sim/core/workload.hpp)
enum class CheckpointTraffic { SYNC_WRITE, SNAPSHOT, FLUSH };

// Adds the traffic to every program of `w` (every rank: with model-parallel sharding the engine
// makes every rank write a writer's share, keeping the ranks symmetric; docs/resilience.md).
// REQUIRES: bytes > 0; w validated.
void add_checkpoint_traffic(core::Workload& w, CheckpointTraffic what, core::Bytes bytes);

}  // namespace trainsim::models
