#pragma once
// A job on a cluster of several GPU types (cluster.pools; docs/scenario.md, "Mixed GPU types"): how
// its ranks map to the pools, the checks that mapping needs, the balanced splits it defaults to, and
// the per-pool figures of the report.
//
// Ranks go to the pools in list order (pool 0 the first nodes). With pipeline > 1 every pool holds
// whole pipeline stages and the layers are split over the stages (parallelism.stage_layers; default:
// balanced_layers by each stage GPU's speed). With pipeline 1 every pool holds whole data-parallel
// replicas and the batch is split over the pools (training.batch_split; default:
// balanced_micro_batches by each GPU's speed). A GPU's speed is micro_batch_seconds: its compute time
// for one micro-batch's forward and backward of the whole model.

#include <cstdint>
#include <string>
#include <vector>

#include "models/pool_workload.hpp"
#include "sim/core/error.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {

// Layers per chunk, each >= 1, summing to `layers`, that minimize the slowest chunk's layers x its
// seconds per layer (adding layers one at a time to the chunk that stays fastest, which is optimal
// for this min-max). REQUIRES: layers >= seconds_per_layer.size() >= 1, every entry > 0.
std::vector<int> balanced_layers(int layers, const std::vector<double>& seconds_per_layer);

// Micro-batches per replica of each pool, each >= 1, with sum over pools of replicas[i] x m[i] ==
// total, that minimize max_i m[i] x seconds[i] (an exact search; the earliest pool in list order gets
// more on ties). Empty when no such split exists (total not a sum of those multiples).
// REQUIRES: equal sizes >= 1, replicas and seconds > 0.
std::vector<int64_t> balanced_micro_batches(int64_t total, const std::vector<int>& replicas,
                                            const std::vector<double>& seconds);

// Per pool of s.cluster: seconds of compute (forward, backward, recompute) of one micro-batch of the
// whole model on one of its GPUs, with the job's tensor and context parallelism.
// REQUIRES: the scenario's strategy passed check_strategy.
std::vector<double> micro_batch_seconds(const Scenario& s);

// Checks a mixed-GPU scenario's placement and fills what it leaves to the defaults: each pool's
// device profile, and (with more than one pool) stage_layers or batch_split. Problems of the input
// go to `problems` (ImpossibleScenario). Run after check_strategy(strategy_training(s), ...) passed and
// models::resolve_defaults.
// Nothing to do without pools. `place` false: the device profiles alone (a search that replaces the
// layout).
void resolve_pools(Scenario& s, core::Diagnostics& problems, bool place = true);
// The first checks, before check_strategy: what is not modelled with pools, and the batch split's
// names. Returns false when a problem was added.
bool check_pools(const Scenario& s, core::Diagnostics& problems);

// The checks of check_pools and resolve_pools that depend on the layout alone, for `search`'s
// validation of a layout on the pools of `cluster` (before any split is chosen): what a batch split
// does not model (expert parallelism, ZeRO-3), a pool that cuts a stage or replica, and (pipeline 1)
// a global batch that no split into whole micro-batches per replica gives. Problems name `file`, as
// run's do. Returns false when one was added.
bool check_pool_layout(const network::ClusterConfig& cluster, const models::ParallelismConfig& parallelism,
                       const models::TrainingConfig& training, const std::string& file, core::Diagnostics& problems);

// Whether the job splits data-parallel replicas over the pools (pools and pipeline 1).
bool splits_batch(const Scenario& s);
// The training section check_strategy and the task budget see: with a batch split, the uniform job
// whose replicas each run the most micro-batches any replica runs (one each before batch_split is
// resolved); else s.training.
models::TrainingConfig strategy_training(const Scenario& s);
// The builder's shares: per pool, its replicas and their micro-batches. REQUIRES: splits_batch(s),
// resolve_pools ran.
std::vector<models::ReplicaShare> replica_shares(const Scenario& s);
// The pool of each pipeline stage. REQUIRES: pools, pipeline > 1.
std::vector<int> stage_pools(const Scenario& s);

// The report's per-pool figures.
struct PoolFigures {
  std::string name;
  std::string gpu;
  int gpus = 0;
  int first_rank = 0;
  std::vector<int> stages;     // pipeline > 1: the stages it runs
  int layers = 0;              // pipeline > 1: their layers
  int64_t samples = 0;         // pipeline 1: samples per iteration of its replicas together
  int64_t micro_batches = 0;   // pipeline 1: per replica
  double compute_s = 0;        // busiest rank of the pool: its GPU's compute per iteration
  double idle_fraction = 0;    // 1 - compute_s / iteration time
};
// REQUIRES: `workload` was built for s (its programs carry their pools).
std::vector<PoolFigures> pool_figures(const Scenario& s, const core::Workload& workload, double iteration_s);
// "the A100-SXM4-80GB stages (pool a100) finish last: 38% idle on H100-SXM5-80GB (pool h100)": the
// critical rank's pool binds, the others' idle share is printed.
std::string binding_sentence(const Scenario& s, const std::vector<PoolFigures>& pools, int critical_rank);

}  // namespace trainsim::plan
