#pragma once
// Strategy -> Workload IR: one program per pipeline stage (ranks of one stage share it), with
// layer-level compute tasks, tensor/sequence-parallel collectives, pipeline send/recv under GPipe,
// 1F1B or interleaved 1F1B, data-parallel gradient buckets overlapped with backward, ZeRO 1-3
// collectives, and the optimizer step.
//
// Layout and groups. Layout sizes ParallelismConfig::layout_sizes() ({tensor, context, expert,
// data, pipeline}, or under parallel folding {tensor, context, k, data / k, pipeline}); rank r runs
// program "stage <pipeline coordinate of r>". Group kinds, in Workload::groups order:
//   "tensor"       TENSOR                        TP / SP collectives
//   "context"      CONTEXT                       K/V all-gather and its gradient reduce-scatter
//   "expert"       EXPERT (+ TENSOR, CONTEXT when > 1 under folding with expert_tensor 1)
//                                                MoE dispatch / combine all-to-all
//   "data"         DATA (+ EXPERT, CONTEXT when > 1)  dense gradients and ZeRO shards
//   "expert-data"  DATA (+ CONTEXT when > 1, unless the expert group spans it)
//                                                expert gradients and ZeRO shards (context ranks see
//                                                other tokens, so expert gradients are reduced there too)
//   "embedding"    PIPELINE, members {0, p-1}    tied word-embedding gradients; only when p > 1 and
//                                                embeddings are tied
// Every rank along tensor, context, expert and data runs the same program (symmetric_axes).
//
// Tasks of one pass. One COMPUTE task per op (accounting.hpp's layer_ops / embedding_ops / head_ops)
// per layer per micro-batch per direction, named after the op. Tensor-parallel collectives are
// blocking (they depend on the compute that produced their input; the next compute depends on
// them): without sequence parallelism an all-reduce after the attention projection and the MLP down
// projection (forward) and after the QKV and MLP-up input gradients (backward); with it all-gathers
// and reduce-scatters in the same places (Korthikanti et al. 2022, Figure 5). The embedding and the
// logits follow the same rules (vocabulary-parallel); the loss adds one small all-reduce. Context
// parallelism all-gathers K and V before attention and reduce-scatters their gradients after it;
// every op sees s/c tokens. MoE layers all-to-all on "expert" before and after the routed expert MLP
// in both directions; which layers are MoE is ModelSpec::layer_kind's (moe_layer_freq,
// first_dense_layers), and each layer's ops, stored activations and parameters are its kind's. Full recompute re-runs a layer's forward (with its collectives, phase RECOMPUTE)
// right before its backward; selective recompute re-runs the attention core.
//
// Pipeline. Activations b·(s/c)·h/t bytes (Megatron's scatter-gather optimization, Narayanan et al.
// 2021, §4.1; the all-gather on the receiver over NVLink is not modelled) go with a SEND (PIPELINE,
// +1, stream PIPELINE_FORWARD) after the last forward compute of a chunk and a RECV (-1) on which
// the next chunk's first compute depends; gradients the other way on PIPELINE_BACKWARD. Interleaved
// chunks wrap around (the last stage's chunk c feeds stage 0's chunk c + 1). A SEND and its RECV
// carry the sender's boundary layer in `layer` (the last layer of the sending chunk for activations,
// its first layer for gradients) and the micro-batch in `micro_batch`.
// Deadlock freedom: pipeline tasks are issued, on every rank, in the order of one ideal execution
// of the schedule (schedule.hpp's time_pipeline with per-layer unit costs) keyed by (time, sender).
// That is one global order of all transfers, so the sends and receives of every link are issued in
// the same order on both ends and no rank's FIFO stream can wait on a transfer that itself waits on
// a later one, including around the interleaved wrap-around.
// pipeline_execution "async": each stage's passes form a ready pool (sim/core/workload.hpp, READY
// POOL) whose order the engine picks as inputs arrive: a block per pass (its tasks on every stream
// and its send), queues B 0, W 1, F 2, forwards opening a micro-batch of the schedule's in-flight
// limit and the pass that frees its activations (B, or W) closing it; the receives are loose tasks
// that trigger their blocks, the last stage's backward is triggered by its own forward and a W by
// its B. Blocks start from their input alone (no dependency on the previous pass); a block whose
// last tasks the next pass would wait for in a fixed order (a trailing collective or blocking copy)
// ends with a zero-byte MEMORY task "pass end" after them. Program order is the order above.
//
// Memory. MEMORY tasks (stream COMPUTE) allocate each layer's stored activations
// (activation_bytes_per_layer) after its forward and free them after its backward; under full
// recompute the whole working set is allocated before the recompute (selective: the score matrix)
// and freed after the backward; the last stage keeps head_activation_bytes from the loss's forward
// to its backward. Program::static_memory = weights + gradients + optimizer states + buffers.
//
// Tensor-parallel overlap. With tp_comm_overlap and sequence parallelism the QKV, projection and
// (dense) MLP GEMMs run Transformer Engine's userbuffers overlap: forward, `tensor` chunks with one
// collective chunk each (all-gather chunk k -> GEMM chunk k; GEMM chunk k -> reduce-scatter chunk
// k) on TENSOR_COMM; backward, the row-parallel GEMMs' output-gradient all-gather pipelined with
// their dgrad in chunks, and for the column-parallel ones the input all-gather (for wgrad) under
// dgrad and the dgrad reduce-scatter under wgrad, each backward split into dgrad and wgrad halves.
//
// Data parallelism. Gradients (bytes per element: BuildPlan::gradient_reduce_bytes, 4
// for fp32 main gradients unless a framework ZeRO reduces in 16 bits) fill buckets of ~bucket_size
// fp32 bytes in backward order, per chunk. With overlap_grad_reduce each bucket is reduced
// (all-reduce; with ZeRO >= 1 reduce-scatter, as Megatron-LM's distributed optimizer does) on
// DATA_COMM once the backward of its last unit has run for the chunk's last micro-batch; without
// it, all buckets after the last backward. Tied embeddings are all-reduced on "embedding" once the
// embedding / head backward of the last micro-batch has run, issued after every other backward task
// (Megatron-LM's finalize_model_grads) so that this cross-stage collective never holds back a
// stage's DATA_COMM stream. The optimizer step (OpClass OPTIMIZER, optimizer_step_bytes_per_parameter()
// per locally updated parameter) depends on every gradient collective. ZeRO-1/2 all-gather the
// updated parameters per bucket (BuildPlan::weight_bytes per parameter): with overlap_param_gather
// at the start of the iteration, each unit's first forward waiting for its buckets; without, after
// the step. ZeRO-3 (zero_impl fsdp, fsdp2, deepspeed) instead all-gathers every unit's (layer,
// embedding, head) parameters before its forward and again before its backward in every
// micro-batch, `prefetch` units ahead (BACKWARD_PRE order in backward: the next unit's gather is
// issued before the current unit's reduce-scatter), and reduce-scatters its gradients after its
// backward in every micro-batch: per unit (FSDP) or per reduce bucket (DeepSpeed, whose gathers are
// also cut into stage3_prefetch_bucket_size messages).

#include <string>
#include <vector>

#include "models/accounting.hpp"
#include "models/compression.hpp"
#include "models/model_spec.hpp"
#include "models/offload.hpp"
#include "models/pruning.hpp"
#include "models/schedule.hpp"
#include "models/strategy.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::models {

// What pruning changed on one pipeline stage (one rank of it), for the report.
struct StagePruning {
  double pruned_parameters = 0;   // elements of the pruned matrices the rank holds (dense count)
  MemoryBreakdown dense_memory;   // weights, gradients, optimizer states without pruning
  // Buffer bytes (nccl-tests' size) of the rank's DATA_COMM collectives per iteration: gradient
  // reductions, parameter gathers, the tied embedding's all-reduce; as emitted, and without pruning.
  double data_bytes = 0;
  double dense_data_bytes = 0;
};

struct BuiltWorkload {
  core::Workload workload;
  IterationFlops flops;                   // whole job, per iteration
  int64_t samples_per_iteration = 0;
  int64_t tokens_per_iteration = 0;
  int micro_batches = 0;                  // per pipeline, per iteration
  std::vector<int> stage_layers;          // resolved layers per chunk, pipeline order
  bool balanced_split = true;             // false when stage_layers came from the scenario
  std::vector<MemoryBreakdown> memory;    // per program (pipeline stage), analytic; activations = the
                                          // peak of the running sum of the program's MEMORY tasks;
                                          // buffers = ZeRO-3's gathered units (1 + prefetch), and a
                                          // streamed optimizer step's chunk buffers (offload)
  // parallelism.gradient_buffers "per-step" with the gradients on the GPU: they are MEMORY tasks
  // (allocated by each unit's first backward, freed after the step), in the dynamic peak and not in
  // the programs' static memory; `memory[i].gradients` is then the part of the builder's peak.
  bool gradients_per_step = false;
  std::vector<StagePruning> pruning;      // per program; empty without pruning
  std::vector<StageCompression> compression;  // per program; empty without gradient compression
  // Offloading (optimizations.offload), per program: the model states one rank keeps in host memory
  // and on NVMe, and the GPU memory the stage would need without offloading (model states, ZeRO-3
  // buffers and the activations' peak, from the builder's accounting in issue order).
  std::vector<OffloadedStates> host_states;
  std::vector<OffloadedStates> nvme_states;
  std::vector<core::Bytes> peak_without_offload;
  // The schedule's own timing (schedule.hpp's time_pipeline with layer-proportional pass costs, no
  // communication): its bubble fraction and, by stage, the most micro-batches in flight.
  ScheduleStats schedule;
};

// REQUIRES: check_strategy() and check_offload() found no problem for these arguments.
//
// Example:
//   const ModelSpec& m = *find_model("gpt3-175b");
//   TrainingConfig t;  t.global_batch = 1536;
//   ParallelismConfig p;  p.tensor = 8;  p.pipeline = 8;  p.data = 16;
//   BuiltWorkload w = build_workload(m, t, p);   // 8 programs, 1024 ranks, 12 layers per stage
// `pruning` (optimizations.pruning, pruning.hpp): the pruned GEMMs carry their sparse kernel, the
// gradient reductions and parameter gathers what `communication` sends, the optimizer step the kept
// values, and the memory breakdown the sparse storage. `offload` (optimizations.offload,
// offload.hpp): the copies, CPU optimizer tasks and host memory of what leaves the GPU.
// `compression` (optimizations.gradient_compression, compression.hpp): the data-parallel gradient
// reductions become its steps (collectives and compute tasks on DATA_COMM), 1-bit Adam's after the
// whole backward; its error-feedback state is static memory (MemoryBreakdown::error_feedback).
// REQUIRES: check_compression() found no problem.
BuiltWorkload build_workload(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p,
                             const PruningConfig& pruning = {}, const OffloadConfig& offload = {},
                             const CompressionConfig& compression = {});

// An estimate of the tasks build_workload() would emit over all programs (Workload::task_count()),
// from the sizes alone and in time independent of them, so that a workload too large to simulate
// can be refused before it is built (sim/cli's simulation.max_tasks). It is micro-batches x (layers
// x tasks per layer and micro-batch, forward + backward + recompute: one compute task per op and
// direction, a memory task each way, the tensor / context / expert collectives of the layer and
// ZeRO-3's gathers and reduce-scatter) + the embedding and head ops, pipeline transfers per chunk,
// and a per-layer term for gradient buckets and the optimizer (offloading adds its copies and memory
// tasks per layer and micro-batch). Measured 0.97-1.13 x the real count
// on every bundled scenario and validation case (tests/cli/resource_limit_test.cpp checks 1.25x).
// A double: micro-batches x layers can exceed 2^31. REQUIRES: check_strategy() found no problem.
double estimate_task_count(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p,
                           const OffloadConfig& offload = {}, const CompressionConfig& compression = {});

// A layer-graph model's workload (models/layer_graph_workload.cpp; build_workload() calls it for
// them): data x spatial parallelism, halo SEND/RECVs on CONTEXT, gradient buckets on "data".
// REQUIRES: m.is_layer_graph() and check_strategy() found no problem.
BuiltWorkload build_layer_graph_workload(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);
double estimate_layer_graph_task_count(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);

// The balanced split of `layers` into `chunks` (earlier chunks get the remainder).
std::vector<int> balanced_split(int layers, int chunks);

}  // namespace trainsim::models
