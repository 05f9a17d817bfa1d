#pragma once
// Internal to the workload builder: the resolved plan of a build (sizes, op costs, groups, pipeline
// timing) and the emission of one pipeline stage's program from it. See workload_builder.hpp for
// the structure of the programs.

#include <cstdint>
#include <vector>

#include "models/accounting.hpp"
#include "models/compression.hpp"
#include "models/offload.hpp"
#include "models/pruning.hpp"
#include "models/schedule.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::models {

// SEND/RECV tags of pipeline traffic: activations and gradients between two stages are two channels,
// each in its own order (with two stages, "next" and "previous" are the same rank).
inline constexpr uint8_t PIPELINE_ACTIVATIONS_TAG = 0;
inline constexpr uint8_t PIPELINE_GRADIENTS_TAG = 1;

// Indices into Workload::groups.
struct GroupIds {
  uint16_t tensor = 0;
  uint16_t context = 0;
  uint16_t expert = 0;       // MoE dispatch / combine
  uint16_t data = 0;         // dense gradients (ParallelismConfig::dense_replicas)
  uint16_t expert_data = 0;  // expert gradients (ParallelismConfig::expert_replicas)
  // Hybrid sharding (ParallelismConfig::hybrid_shard): "data" is then the shard group (parameter
  // gathers, gradient reduce-scatters) and this the replica group, which all-reduces each rank's
  // gradient shard; -1: no hybrid sharding.
  int replicate = -1;
  int embedding = -1;        // first and last stage (tied embeddings, pipeline > 1); -1: none
};

// What one kind of layer (dense or MoE) costs and holds, per micro-batch on one rank.
struct LayerPlan {
  std::vector<OpCost> ops;
  double stored_bytes = 0;       // kept from forward to backward under the configured recompute
  double recompute_bytes = 0;    // re-created right before the backward (score matrix under selective
                                 // recompute, the whole layer under full recompute)
  size_t recompute_ops = 0;      // full recompute: the leading ops re-run (full_recompute_ops)
  ParameterCount params;
  PrunedParameters pruned;       // the pruned part of params (optimizations.pruning)
  std::vector<WeightMatrix> matrices;  // its weight matrices (gradient compression: PowerSGD)
  // Zero-bubble schedules: what the W pass needs kept after B, per micro-batch: each GEMM's input
  // and output gradient (count·m·(k + n) elements); B frees the rest (Qi et al. 2024, Table 1: B
  // changes memory by M_W - M_B, W by -M_W).
  double weight_gradient_bytes = 0;
};

struct BuildPlan {
  const ModelSpec* model = nullptr;
  const ParallelismConfig* parallelism = nullptr;
  int stages = 1;
  int chunks = 1;           // model chunks per stage
  int positions = 1;        // stages x chunks
  int micro_batches = 1;
  std::vector<int> chunk_layers;  // by model position
  std::vector<int> first_layer;   // by model position

  LayerPlan dense_layer;
  LayerPlan moe_layer;           // MoE models only
  std::vector<OpCost> embedding;
  std::vector<OpCost> head;

  // Payloads (bytes per rank).
  double tensor_bytes = 0;       // one micro-batch's b·(s/c)·h activations (TP collectives)
  double context_bytes = 0;      // K and V of the whole sequence (CP all-gather / reduce-scatter)
  double all_to_all_bytes = 0;   // top_k routed copies of the tokens the rank routes (MoE dispatch /
                                 // combine): b·(s/c)·h, /t when the expert group spans the tensor group
  double pipeline_bytes = 0;     // b·(s/c)·h/t: Megatron's scatter-gather optimization
  double loss_reduce_bytes = 0;  // vocabulary-parallel cross-entropy's three b·(s/c) fp32 reductions

  double head_bytes = 0;         // the head's stored activations per micro-batch
  double head_transient_bytes = 0;  // allocated during the loss's backward (head_backward_transient_bytes)
  double head_weight_gradient_bytes = 0;  // LayerPlan::weight_gradient_bytes of the head
  bool split_backward = false;   // zero-bubble: backward passes are B, with separate W passes
  bool update_every_micro_batch = false;  // PipeDream: gradients reduced and weights updated per micro-batch
  bool steady_state = false;     // Workload::steady_state (models/strategy.hpp steady_state_schedule)
  bool async = false;            // pipeline_execution "async": each stage's passes form a ready pool

  ParameterCount embedding_params;
  ParameterCount head_params;
  PrunedParameters embedding_pruned;
  PrunedParameters head_pruned;
  const PruningConfig* pruning = nullptr;  // never null in a plan from make_plan
  const CompressionConfig* compression = nullptr;  // never null in a plan from make_plan
  // Bytes of the tied word embedding's gradient all-reduce (first and last stage): V·h/t elements at
  // gradient_reduce_bytes, or what `communication` sends of it when the embeddings are pruned.
  double embedding_gradient_bytes = 0;
  // Bytes per parameter of every parameter all-gather (ZeRO-3 / FSDP gathers before use, ZeRO-1/2
  // gathers of the updated parameters): the one place that sets it, weight_bytes_per_parameter() of
  // the training run (1 with FP8 parameters).
  double weight_bytes = 2;
  // Bytes per gradient element of data-parallel gradient reductions: fp32 main gradients (4) for
  // Megatron-LM and for no ZeRO; the 16-bit compute dtype for FSDP / FSDP2 (MixedPrecision
  // reduce_dtype defaults to param_dtype) and DeepSpeed (communication_data_type defaults to the
  // model's 16-bit dtype); 4 in fp32 training.
  double gradient_reduce_bytes = 4;
  // HBM bytes per gradient element of the cast before each uncompressed data-parallel reduction: 6
  // (read 2, write 4) where a 16-bit gradient is reduced in fp32 (ParallelismConfig::reduce_fp32()),
  // else 0.
  double gradient_cast_bytes = 0;
  double optimizer_step_bytes = 0;
  ZeroImpl zero_impl = ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER;  // resolved (zero_stage 3: never megatron)
  bool overlap_param_gather = false;  // ZeRO-1/2 parameter all-gathers during the next forward
  int prefetch = 1;                   // ZeRO-3: units whose gathers are issued ahead of the unit in use
  bool backward_prefetch_post = false;  // FSDP1 BACKWARD_POST: backward gathers issued after the previous
                                        // unit's gradient computation, ahead of its reduce-scatter
  double gather_message_elements = 0; // ZeRO-3 DeepSpeed with offloaded parameters: most elements per all-gather
                                      // message (0: one per unit)
  // DeepSpeed ZeRO-3 (sharded_params, zero_impl deepspeed, parameters on the GPU): parameters fetched
  // weight matrix by weight matrix by the hooks of the ops that use them, prefetched by elements
  // (stage_deepspeed.cpp; models/deepspeed_config.hpp). False: whole units, `prefetch` units ahead.
  bool deepspeed_fetch = false;
  DeepSpeedZeroConfig deepspeed;

  const TrainingConfig* training = nullptr;  // the training run (never null in a built plan)
  // parallelism.gradient_buffers "per-step" with the gradients on the GPU: each unit's gradients are
  // allocated by its first backward and freed after the optimizer step (MEMORY tasks), not held
  // through the step.
  bool gradients_per_step = false;
  const OffloadConfig* offload = nullptr;  // optimizations.offload (never null in a built plan)
  bool offload_params = false;   // parameters fetched from the host / NVMe before each use
  double activation_bytes = 2;   // bytes per element of activations and 16-bit gradients
  double master_bytes = 4;       // fp32 master weights per parameter (0 in fp32 training)

  GroupIds groups;
  bool sharded_params = false;   // parameters sharded at rest and gathered unit by unit (ZeRO-3, or
                                 // FSDP's SHARD_GRAD_OP at zero_stage 2), with more than one replica
  bool reshard_after_forward = true;  // sharded_params: gathered again for the backward (ZeRO-3); false
                                      // for SHARD_GRAD_OP, which keeps them from forward to backward
  bool reduce_once_per_step = false;  // sharded_params: reduce-scattered after the last micro-batch only
                                      // (ParallelismConfig::fsdp2_pipelined)
  bool gather_once_per_step = false;  // and gathered before the first micro-batch's forward only
  bool reduce_dense = false;     // dense gradients need a data-parallel reduction
  bool reduce_expert = false;    // expert gradients need one

  std::vector<std::vector<TimedSlot>> timed;  // by stage

  // The plan of layer `layer` (0-based, model order): ModelSpec::layer_kind decides.
  const LayerPlan& layer(int layer) const {
    return model->layer_kind(layer) == LayerKind::MOE ? moe_layer : dense_layer;
  }
  // End times in `timed`, by cell(): -1 where no rank runs the pass (a carried backward of PipeDream's
  // window that the next position ran in the previous window).
  std::vector<double> forward_end;
  std::vector<double> backward_end;
  size_t cell(int micro_batch, bool carried, int position) const {
    return (static_cast<size_t>(micro_batch) + (carried ? static_cast<size_t>(micro_batches) : 0)) *
               static_cast<size_t>(positions) +
           static_cast<size_t>(position);
  }
};

struct StageResult {
  core::Program program;
  double peak_activation_bytes = 0;  // peak of the running sum of its device MEMORY tasks (issue order)
  double peak_without_offload = 0;   // the same with the activations kept on the GPU
  double gradients_at_peak = 0;      // BuildPlan::gradients_per_step: the gradients in peak_activation_bytes
  double optimizer_buffer_bytes = 0; // GPU buffers of a streamed optimizer step (states off the GPU,
                                     // step on the GPU): one or two chunks' states
  ParameterCount parameters;         // held by one rank of the stage
  PrunedParameters pruned;           // the pruned part of `parameters`
  // Bytes one rank sends per iteration in the collectives of its DATA_COMM stream (gradient
  // reductions, parameter gathers, the tied embedding's all-reduce), as emitted and as they would be
  // without pruning (`communication` "dense").
  double data_bytes = 0;
  double dense_data_bytes = 0;
  StageCompression compression;      // gradient compression's figures (zero without it)
};

// Elements of the weight matrix a layer op holds (a GEMM of QKV, projection, MLP, router or experts:
// count x k x n), 0 for ops without one: the parameters DeepSpeed ZeRO-3's hooks fetch one by one
// (stage_deepspeed.cpp).
double zero3_weight_elements(const OpCost& op);

// Emits the program of pipeline stage `stage`, interning task names in `workload`.
StageResult build_stage_program(const BuildPlan& plan, core::Workload& workload, int stage);

}  // namespace trainsim::models
