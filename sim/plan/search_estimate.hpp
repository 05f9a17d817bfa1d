#pragma once
// The first pass of `trainsim search`: a closed-form estimate of one layout's iteration time and
// peak memory per GPU, built from the same pieces as the workload builder and the analytic backend
// (models/accounting.hpp op costs, engine::compute_time, network::collective_cost, the pipeline
// schedule's ideal timing) without emitting or executing a task program. It is about a thousand
// times cheaper than a full analytic evaluation, and is used only to order the candidates: the best
// of them are re-evaluated with the real analytic backend (tests/cli/search_test.cpp holds the
// estimate to that backend).
//
// Model, per micro-batch and pipeline position (model chunk):
//   forward   sum of its layers' op times (engine::compute_time) + their blocking tensor-parallel
//             collectives (2 all-reduces, or 2 all-gathers + 2 reduce-scatters with sequence
//             parallelism), the context all-gather, the MoE all-to-alls, the embedding (first
//             position) or the head (last), and the pipeline receive
//   backward  the same pattern in backward (+ the forward again under full recompute, the attention
//             core under selective recompute)
//   ZeRO-3    each position's parameter gathers (twice) and gradient reduce-scatter per micro-batch,
//             counted where they exceed the compute they overlap
// The schedule's ideal timing (models::time_pipeline) of those costs gives the pipeline makespan;
// then the slowest stage adds what of its data-parallel gradient reduction outlasts its last
// backward, the ZeRO-1/2 parameter all-gather not hidden by its first forward, and the optimizer
// step. Peak memory: the stage's model states (models::model_state_memory) and ZeRO-3 gather
// buffers, plus the peak of the stored activations while the schedule runs, plus one layer's
// recompute working set. Not modelled: tensor-parallel overlap (tp_comm_overlap) and bucket
// latencies; the estimate is conservative there. Pruning (the scenario's, fixed for every layout):
// the pruned GEMMs' sparse kernels, the sparse storage of the model states and what the gradient
// reductions and parameter gathers send, as the workload builder has them.
// Offloading (models/offload.hpp), roughly: the GPU keeps split_model_states()'s share; offloaded
// activations leave each chunk's last layer per micro-batch in flight plus two layers being moved;
// a layer's activation copy or parameter fetch that outlasts its compute adds the difference; the
// optimizer tail is the slowest of the CPU step, the parameter upload and the NVMe traffic
// (overlapped) or their sum (not), and the gradient copies that outlast the last backward.
// Gradient compression (the scenario's): each stage's reduction as the compressed steps of
// models::compressed_reduction (collectives and their compute, one after another; 1-bit Adam's not
// overlapped with the backward), its error-feedback memory, and ZeRO-3's quantized reduce-scatters.

#include "models/compression.hpp"
#include "models/model_spec.hpp"
#include "models/offload.hpp"
#include "models/pruning.hpp"
#include "models/strategy.hpp"
#include "network/cluster.hpp"
#include "sim/core/device.hpp"

namespace trainsim::plan {

struct Estimate {
  double iteration_time_s = 0;
  double peak_memory_bytes = 0;  // the worst stage
};

// REQUIRES: models::check_strategy found no problem for these arguments and `cluster`'s world size.
Estimate estimate_layout(const models::ModelSpec& model, const models::TrainingConfig& training,
                         const models::ParallelismConfig& parallelism, const network::ClusterConfig& cluster,
                         const core::Profile& profile, const models::PruningConfig& pruning = models::PruningConfig{},
                         const models::OffloadConfig& offload = {},
                         const models::CompressionConfig& compression = {});

}  // namespace trainsim::plan
