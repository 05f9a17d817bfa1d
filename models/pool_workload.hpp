#pragma once
// A job on a cluster of several GPU types (cluster.pools; docs/scenario.md, "Mixed GPU types"), in
// the Workload IR: every program carries the node pool whose GPUs run it (core::Program::node_pool),
// and backends price its compute with that pool's GPU and device profile.
//
// Two placements, as HetPipe (Park et al., ATC 2020) and Metis (Um et al., ATC 2024) combine them:
//  - data-parallel replicas on several pools with an uneven batch split (pipeline 1): the replicas of
//    pool i (consecutive data-parallel coordinates, pools in rank order) each run
//    shares[i].micro_batches micro-batches per iteration, so the slower type gets fewer samples; the
//    gradient reductions still span every replica (the same buckets on every pool, each reduced once
//    per iteration, whatever the micro-batch count).
//  - pipeline stages on pools with an uneven layer split: stage s runs on stage_pool[s], with the
//    layers parallelism.stage_layers gives it.

#include <cstdint>
#include <vector>

#include "models/workload_builder.hpp"

namespace trainsim::models {

// One pool's part of a data-parallel split: its replicas and the micro-batches each one runs.
struct ReplicaShare {
  int replicas = 0;
  int64_t micro_batches = 0;
};

// The workload of `p` with the replicas split as `shares` says, in pool order: one program per pool
// ("stage 0 on pool i"), the ranks of replica d running the program of the pool that holds d. The
// job's figures (FLOPs, samples, tokens) are those of the whole split; micro_batches is the most any
// replica runs. DATA is no longer a symmetric axis (replicas of two pools differ).
// REQUIRES: p.pipeline == 1, no parallel folding (expert_tensor 0), zero_stage < 3 (ZeRO-3 gathers
// per micro-batch: replicas running different counts would call different collectives); the
// replicas of `shares` sum to p.data, each micro_batches >= 1; check_strategy() found no problem
// with t's micro_batch.
BuiltWorkload build_pool_split_workload(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p,
                                        const std::vector<ReplicaShare>& shares, const PruningConfig& pruning = {},
                                        const OffloadConfig& offload = {}, const CompressionConfig& compression = {});

// Puts pipeline stage s's program on pool stage_pool[s] (interleaved chunks live in their stage's
// program). REQUIRES: one entry per program of `built` (one per stage), each < 256.
void place_stages_on_pools(BuiltWorkload& built, const std::vector<int>& stage_pool);

}  // namespace trainsim::models
