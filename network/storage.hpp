#pragma once
// Where checkpoints go and how often the cluster fails: the "storage" and "reliability" objects of
// the "cluster" section (docs/scenario.md). Both are optional; they matter only with
// training.checkpoint (models/checkpoint.hpp), which needs cluster.storage.parallel_fs.
//
//   "storage": {
//     "node_local": {                    // the node's own drives (multilevel checkpoints); optional
//       "write_bandwidth": "12 GB/s",    // per node, required
//       "read_bandwidth": "25 GB/s"      // per node, required
//     },
//     "parallel_fs": {                   // the shared file system (Lustre, GPFS, ...)
//       "write_bandwidth": "680 GB/s",   // aggregate over the cluster, required
//       "read_bandwidth": "1 TB/s",      // aggregate over the cluster, required
//       "node_bandwidth": "50 GB/s",     // one node's link to it; default: its compute NICs
//                                        //   (nics_per_node x nic_bandwidth); required with "dedicated"
//       "network": "compute"             // compute (default): the traffic leaves through the node's
//                                        //   compute NICs and contends with training traffic in the
//                                        //   SimGrid backend; dedicated: separate storage NICs
//     }
//   },
//   "reliability": {
//     "node_mtbf": "6334.6 h",             // mean time between failures of one node (default below),
//                                        //   1 min to 100 years; or "failures_per_gpu_hour": 1.97e-5
//                                        //   (not both), a rate that makes such a node MTBF
//     "restart": "10 min",               // relaunch after a failure, before the checkpoint load
//     "warmup": "0 s"                    // after the load, before training progresses again
//   }
//
// A tier without its bandwidths, a zero or negative MTBF or failure rate are input errors naming the key.

#include <optional>

#include "sim/core/json_reader.hpp"
#include "sim/core/units.hpp"

namespace trainsim::network {

// Per node (node_local) or aggregate (parallel_fs) bandwidths of a storage tier.
struct StorageTier {
  core::BytesPerSecond write_bandwidth;
  core::BytesPerSecond read_bandwidth;
};

struct ParallelFs {
  core::BytesPerSecond write_bandwidth;              // aggregate
  core::BytesPerSecond read_bandwidth;               // aggregate
  std::optional<core::BytesPerSecond> node_bandwidth;  // absent: the node's compute NICs
  bool dedicated_network = false;                    // false: through the compute NICs
  // Nodes that write a checkpoint at once, sharing write_bandwidth: set from the strategy by the
  // prediction (the checkpoint writers' nodes, models/checkpoint.hpp); 0: every node. Not a key.
  int writing_nodes = 0;
};

struct StorageSpec {
  std::optional<StorageTier> node_local;
  std::optional<ParallelFs> parallel_fs;
};

// Default node MTBF: the Llama 3 405B run (Llama Team, "The Llama 3 Herd of Models", 2024, Sec.
// 3.3.4) saw 419 unexpected interruptions in 54 days on 16,384 H100 GPUs (2,048 nodes of 8):
// 54 x 24 h x 2,048 nodes / 419 = 6,334.6 node-hours between failures (1.97e-5 per GPU-hour).
inline constexpr double LLAMA3_NODE_MTBF_S = 54.0 * 24.0 * 3600.0 * 2048.0 / 419.0;
// Default relaunch time after a failure: a modelling estimate (scheduler requeue, container start,
// NCCL and framework initialization at thousands of GPUs take minutes); not a published figure.
inline constexpr double DEFAULT_RESTART_S = 600.0;

struct ReliabilitySpec {
  core::Seconds node_mtbf = core::Seconds(LLAMA3_NODE_MTBF_S);
  core::Seconds restart = core::Seconds(DEFAULT_RESTART_S);
  core::Seconds warmup = core::Seconds(0);
};

// Readers (problems go to r's Diagnostics; each calls r.finish()). `gpus_per_node` converts
// failures_per_gpu_hour into a node MTBF.
StorageSpec read_storage(core::ObjectReader& r);
ReliabilitySpec read_reliability(core::ObjectReader& r, int gpus_per_node);
core::Json to_json(const StorageSpec& s);
core::Json to_json(const ReliabilitySpec& r);

// "6334.625298 h", "10 min", "12 s": a duration of any length that parse_duration reads back.
std::string format_long_duration(core::Seconds s);

}  // namespace trainsim::network
