#pragma once
// The training run and its parallelization strategy: the "training" and "parallelism" sections of a
// scenario, and the check of a whole strategy against a model and a cluster size.
//
// Two readings of the parallel sizes, chosen by whether `expert_tensor` is given.
//
// Default (no expert_tensor; the layout of the first trainsim versions): world = tensor x context x
// expert x data x pipeline, Megatron-LM's "tp-cp-ep-dp-pp" order. The expert axis is separate from
// the data axis; for dense layers its ranks act as additional data-parallel replicas (they see
// different samples), as when Megatron-LM or DeepSpeed-MoE carve expert parallelism out of data
// parallelism. A step consumes micro_batch x data x expert sequences per micro-batch, dense gradients
// are reduced over data x expert x context ranks, expert gradients over data x context ranks, and
// the expert MLPs are split over `tensor` like a dense MLP.
//
// Megatron-core MoE parallel folding (expert_tensor given; Liu et al. 2025, "MoE Parallel Folding",
// Megatron-core's --expert-tensor-parallel-size): world = tensor x context x data x pipeline, `data`
// being the dense data-parallel degree. Inside a pipeline stage the expert layers regroup the same
// tensor x context x data ranks as expert_tensor x expert x expert-data, expert tensor fastest
// (Megatron-core's "tp-ep-dp" order for experts), expert-data = tensor x context x data /
// (expert x expert_tensor). Supported:
//   expert_tensor 1: the expert MLPs are not split; expert = tensor x context x k with k dividing
//     data: the expert-parallel group spans the stage's tensor and context ranks and k data replicas,
//     expert-data = data / k.
//   expert_tensor = tensor: the expert MLPs are split over the tensor group as in the default
//     reading; expert = k dividing data, expert-data = context x data / k.
// Both map onto the layout axes {tensor, context, expert = k, data = data / k, pipeline}
// (layout_sizes()), so a step consumes micro_batch x data sequences per micro-batch and dense
// gradients are reduced over data x context ranks.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/checkpoint_config.hpp"
#include "models/deepspeed_config.hpp"
#include "models/model_spec.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/stack.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::models {

// The "training" section. Keys (all optional except global_batch):
//   sequence_length  tokens per sequence; default 2048
//   global_batch     sequences per iteration (required)
//   micro_batch      sequences per micro-batch per replica; default 1
//   precision        "fp32" | "tf32" | "bf16" | "fp16" | "fp8"; default "bf16". bf16/fp16/fp8 mean
//                    Megatron mixed precision (16-bit weights, fp32 main gradients and optimizer).
//   attention        "unfused" | "flash"; default "unfused": Megatron's core attention, whose
//                    softmax and dropout stream the a·s² score matrix through HBM and store it for
//                    the backward (the setting of the Megatron-LM 2021-2022 measurements). "flash":
//                    FlashAttention (Dao et al. 2022, FA2 2023): scores stay on chip, nothing of size
//                    s² is stored, and the backward recomputes QKᵀ (counted as hardware FLOPs only).
//   fp8_params       with precision "fp8": keep the model weights in FP8 (Transformer Engine's
//                    fp8_model_init, Megatron's --fp8-param-gather): 1 byte per parameter in memory
//                    and in parameter all-gathers (distributed optimizer, FSDP), the fp32 master
//                    copy staying in the optimizer states. Applied to every parameter (embeddings
//                    and norms, which TE keeps in 16 bits, are under 1% of the usual models').
//                    Default false; true with another precision is an error.
//   tokens           total tokens the training run consumes (a positive number, 15e12 for 15T, at
//                    most 1e18). Optional, no default: given, every report gains time_to_train
//                    (sim/plan/time_to_train.hpp); absent, the report has no such field.
//   checkpoint       how the run checkpoints (models/checkpoint_config.hpp). Optional: absent, no
//                    checkpoint, failure or goodput figures are modelled (the report has none).
//   stack            the framework that runs the job (core/stack.hpp): "megatron" | "torchtitan" |
//                    "composer" | "deepspeed" | "fsdp" | "ddp". Given, it sets the defaults of
//                    parallelism.zero_impl and backward_prefetch, the kernel costs of the profile and
//                    the layouts check_strategy accepts (stack_supports). Absent, the stack implied
//                    by the layout (implied_stack: ZeRO-3 "fsdp" -> fsdp, "fsdp2" -> torchtitan,
//                    "deepspeed" -> deepspeed, anything else -> megatron) prices it, and every layout
//                    is accepted, as before the key existed.
//   compile          torch.compile (torchtitan's --compile, or a user's model): fused elementwise
//                    kernels, fewer host launches. Default false; an error with stack "megatron".
//   deepspeed        DeepSpeed ZeRO-3's parameter fetch (models/deepspeed_config.hpp):
//                    prefetch_bucket_elements, max_live_parameters, persistence_threshold. Optional
//                    (absent: DeepSpeed's defaults); given, it needs the deepspeed stack
//                    (check_strategy) and matters at zero_stage 3 only.
enum class Attention { UNFUSED, FLASH };
std::string to_string(Attention a);  // "unfused", "flash"

// Ranges of the training sizes (checked when read, so that products of sizes cannot overflow):
// sequences of up to 16M tokens (published long-context training reaches 1-10M), micro-batches of
// up to 2^20 sequences, global batches of up to 2^30.
constexpr int64_t MAX_SEQUENCE_LENGTH = int64_t{1} << 24;
constexpr int64_t MAX_MICRO_BATCH = int64_t{1} << 20;
constexpr int64_t MAX_GLOBAL_BATCH = int64_t{1} << 30;

struct TrainingConfig {
  int64_t sequence_length = 2048;
  int64_t global_batch = 0;     // sequences per iteration (required)
  int64_t micro_batch = 1;      // sequences per micro-batch per data-parallel replica
  core::Precision precision = core::Precision::BF16;
  Attention attention = Attention::UNFUSED;
  bool fp8_params = false;      // FP8 weights (see above)
  std::optional<double> tokens;  // total tokens to train; absent: no time-to-train
  std::optional<CheckpointConfig> checkpoint;  // absent: no checkpoints modelled
  std::optional<core::Stack> stack;  // absent: implied by the layout (implied_stack)
  bool compile = false;              // torch.compile
  std::optional<DeepSpeedZeroConfig> deepspeed;  // absent: DeepSpeed's defaults
  // Samples per iteration of each node pool's data-parallel replicas together (cluster.pools, pool
  // name -> samples, in the cluster's pool order once resolved); empty: one GPU type, or the
  // balanced split the scenario reader fills in (docs/scenario.md, "Mixed GPU types").
  std::vector<std::pair<std::string, int64_t>> batch_split;

  // Reads the section and rejects unknown keys (calls r.finish()).
  static TrainingConfig from_json(core::ObjectReader& r);
  core::Json to_json() const;
};

// Pipeline schedules (models/schedule.hpp has the order each one runs and docs/schedules.md the
// published bubble and memory of each). PIPEDREAM and PIPEDREAM_2BW run without a flush and
// ZERO_BUBBLE_H2 without the optimizer's synchronization: steady_state_schedule().
enum class PipelineSchedule {
  GPIPE, ONE_F_ONE_B, INTERLEAVED_1F1B, PIPEDREAM, PIPEDREAM_2BW, ZERO_BUBBLE_H1, ZERO_BUBBLE_H2
};
enum class Recompute { NONE, SELECTIVE, FULL, SELECTIVE_OP };
// "gpipe", "1f1b", "interleaved-1f1b", "pipedream", "pipedream-2bw", "zero-bubble-h1", "zero-bubble-h2"
std::string to_string(PipelineSchedule s);
const std::vector<std::string>& pipeline_schedule_names();  // the values above, in enum order
// Whether the schedule splits each backward pass into an input-gradient pass B and a weight-gradient
// pass W (zero-bubble-h1, zero-bubble-h2).
bool splits_backward(PipelineSchedule s);
// Whether one iteration is a period of a steady state in which the pipeline never drains: PipeDream
// and PipeDream-2BW (no flush: the next mini-batch's forwards fill the cool-down), ZB-H2 (Qi et al.
// 2024, §3: the optimizer step's synchronization is bypassed, so the next iteration's warm-up fills
// the tail). The iteration time is then the period: each rank's span from its first task's start.
bool steady_state_schedule(PipelineSchedule s);

// How the pipeline passes of a stage are issued (parallelism.pipeline_execution):
//   ORDERED  in the schedule's fixed order (Megatron-LM, DeepSpeed, the published schedules)
//   ASYNC    AxoNN's message-driven order (Singh & Bhatele 2022): whichever pass has its input first,
//            backward passes first on ties, with at most the schedule's in-flight micro-batches;
//            decided by the engine as the inputs arrive in the simulation (workload_builder.hpp,
//            docs/schedules.md), schedule.hpp's async_pipeline_order giving the default order
enum class PipelineExecution { ORDERED, ASYNC };
std::string to_string(PipelineExecution e);  // "ordered", "async"
std::string to_string(Recompute r);         // "none", "selective", "full"

// Which implementation of ZeRO sharding the job runs; each has its own communication pattern
// (stage_data_parallel.cpp cites the sources):
//   MEGATRON_DISTRIBUTED_OPTIMIZER  Megatron-LM / NeMo --use-distributed-optimizer (zero_stage 1-2):
//       gradients reduce-scattered per bucket once per iteration, overlapped with the backward;
//       updated parameters all-gathered per bucket, overlapped with the next forward
//       (overlap_param_gather) or blocking after the step.
//   FSDP      PyTorch FullyShardedDataParallel (FSDP1), FULL_SHARD, one unit per transformer layer
//             (zero_stage 3): all-gather per unit in forward and again in backward, BACKWARD_PRE
//             prefetch, reduce-scatter per unit, every micro-batch. At zero_stage 2 SHARD_GRAD_OP:
//             the forward's gather only (parameters stay unsharded until the unit's backward).
//   FSDP2     PyTorch fully_shard (zero_stage 3): per-parameter sharding with the same message
//             pattern and one unit of implicit prefetch in both directions. At zero_stage 2
//             fully_shard(reshard_after_forward=False): the forward's gather only.
//   DEEPSPEED DeepSpeed ZeRO (zero_stage 1-3): 16-bit gradient reduction in reduce_bucket_size
//             buckets; stage 3 gathers parameters in stage3_prefetch_bucket_size messages.
enum class ZeroImpl { MEGATRON_DISTRIBUTED_OPTIMIZER, FSDP, FSDP2, DEEPSPEED };
// "megatron-distributed-optimizer", "fsdp", "fsdp2", "deepspeed"
std::string to_string(ZeroImpl z);

// The "parallelism" section. Keys (all optional):
//   tensor, pipeline, data, context, expert   parallel sizes; default 1 each
//   spatial              layer-graph models only: GPUs each sample is split over along its first
//                        spatial dimension (halo exchanges per convolution, on the CONTEXT axis);
//                        default 1 (docs/cnn.md)
//   expert_tensor        tensor parallelism of the expert MLPs; given, it selects Megatron-core's
//                        parallel folding (see the top of this file: `data` is then the dense
//                        data-parallel degree and the expert ranks fold over tensor x context x
//                        data); 1 or tensor. Default: not given (the expert axis is separate and the
//                        experts are split over `tensor`)
//   sequence_parallel    Megatron sequence parallelism (norms and dropouts split over the tensor
//                        group; all-gather / reduce-scatter instead of all-reduce); default false
//   pipeline_schedule    "gpipe" | "1f1b" | "interleaved-1f1b" | "pipedream" | "pipedream-2bw" |
//                        "zero-bubble-h1" | "zero-bubble-h2"; default "1f1b" (docs/schedules.md)
//   pipeline_execution   "ordered" | "async" (PipelineExecution); default "ordered"
//   virtual_stages       model chunks per pipeline rank, > 1 only with "interleaved-1f1b"; default 1
//   stage_layers         layers per model chunk in model order (pipeline x virtual_stages entries,
//                        each >= 1, summing to the model's layers); default: balanced_split()
//   recompute            "none" | "selective" (attention core, Korthikanti et al. 2022) | "full"
//                        (every layer from its input) | "selective-op" (PyTorch per-op selective
//                        checkpointing as torchtitan's selective_ac_option "op" runs it: every second
//                        mm and all non-matmul ops re-run; models/accounting.hpp, op_sac_recompute;
//                        dense layers without tensor or context parallelism); default "none"
//   recompute_early_stop with recompute "full": PyTorch's non-reentrant checkpoint (use_reentrant=False;
//                        by default since PyTorch 2.1, pytorch/pytorch#96866) stops a layer's re-run
//                        as soon as the last tensor its backward needs is saved again, so the ops
//                        after it are not re-run
//                        (full_recompute_ops(): a dense layer's MLP down-projection, with its
//                        tensor-parallel collective, and residual add; an MoE layer's residual add).
//                        Measured on an H200 (docs/gpu-runs.md): it takes 24-30% off the re-run of a
//                        GPT block. Default true with training.stack "torchtitan" (its
//                        ptd_checkpoint_wrapper is non-reentrant), "fsdp" (FSDP's checkpoint_wrapper
//                        defaults to CheckpointImpl.NO_REENTRANT) and "ddp" (the variant
//                        torch.utils.checkpoint's documentation recommends); false with "composer"
//                        (activation_checkpointing_reentrant defaults to true), "deepspeed"
//                        (deepspeed.checkpointing is reentrant) and without a stack. An error with
//                        another recompute and with stack "megatron" (its CheckpointFunction
//                        re-runs the whole layer). Assumes no dropout on the residual (a dropout
//                        saves its mask, so the re-run would go through it).
//   zero_stage           0..3: shard optimizer states (1), + gradients (2), + weights (3, FSDP) over
//                        the data-parallel group; default 0
//   zero_impl            "megatron-distributed-optimizer" | "fsdp" | "fsdp2" | "deepspeed": who
//                        implements the sharding (see ZeroImpl); default "megatron-distributed-optimizer"
//                        for zero_stage 1-2 and "fsdp" for zero_stage 3 (training.stack composer /
//                        fsdp: "fsdp" at stage 2 too; torchtitan: "fsdp2" at stages 2-3). "fsdp" /
//                        "fsdp2" at stage 2 is FSDP's SHARD_GRAD_OP (shard_grad_op()). An error with
//                        zero_stage 0 (nothing is sharded, so it would mean nothing), with fsdp /
//                        fsdp2 at stage 1 and with megatron-distributed-optimizer at stage 3.
//   bucket_size          fp32 gradient bytes per data-parallel bucket; default "40 MB"; with
//                        zero_impl "deepspeed" the default is DeepSpeed's reduce_bucket_size, 5e8
//                        elements (given: bucket_size / 4 elements)
//   overlap_grad_reduce  reduce each bucket as soon as its gradients are final; default true, except
//                        DeepSpeed ZeRO-1/2, whose overlap_comm defaults to false. At zero_stage 3
//                        false means each micro-batch's reduce-scatters wait for its whole backward.
//   overlap_param_gather zero_stage 1-2 (not SHARD_GRAD_OP, which gathers in every forward): all-gather
//                        the updated parameters bucket by bucket during
//                        the next forward (true) or right after the optimizer step (false); default
//                        true for megatron-distributed-optimizer (NeMo / Megatron-Bridge recipes set
//                        it), false for deepspeed (it gathers after the step). An error at stage 0 or 3.
//   prefetch             zero_stage 3 or SHARD_GRAD_OP: parameter gathers issued ahead of the unit in
//                        use (0: each gather waits for the previous unit's compute); default 1 for
//                        fsdp / fsdp2. An error below 0, wherever nothing is gathered (stages 0-1,
//                        ZeRO-2 other than SHARD_GRAD_OP) and with zero_impl "deepspeed", whose
//                        ZeRO-3 prefetches by elements, per parameter (training.deepspeed).
//   shard_group          hybrid sharding (HSDP): the data-parallel ranks (of `data`) over which
//                        parameters, gradients and optimizer states are sharded; the data / shard_group
//                        groups of them replicate each other. FSDP1 ShardingStrategy.HYBRID_SHARD (at
//                        zero_stage 2 _HYBRID_SHARD_ZERO2), FSDP2 fully_shard over a 2-D (replicate,
//                        shard) mesh, torchtitan's data_parallel_shard_degree (x
//                        data_parallel_replicate_degree). Each unit is gathered and its gradients
//                        reduce-scattered over the shard group (shard_group x context ranks, adjacent
//                        in the layout: one node when tensor x context x shard_group = GPUs per node),
//                        and each rank's gradient shard is then all-reduced across the replicas (its
//                        rank in each other shard group). Default: not given, data (one shard group:
//                        FULL_SHARD). Given, it needs zero_impl "fsdp" or "fsdp2" with parameters
//                        gathered (zero_stage 3, or 2 as SHARD_GRAD_OP), dividing data, and a dense
//                        model without expert parallelism. 1 shards over the context ranks alone
//                        (torchtitan's data_parallel_shard_degree 1 with context parallelism).
//   backward_prefetch    zero_impl "fsdp" (FSDP1's backward_prefetch): "pre" (BACKWARD_PRE, PyTorch's
//                        default: the next unit's all-gather is issued before the current unit's
//                        gradient computation) | "post" (BACKWARD_POST, Composer's default: issued
//                        after it, ahead of the current unit's reduce-scatter, so the gather is
//                        exposed). Default "post" with training.stack "composer", else "pre". An error
//                        with another zero_impl.
//   reduce_dtype         the dtype the sharded implementations reduce gradients in (fsdp, fsdp2,
//                        deepspeed; framework_reduce()): "fp32" | "bf16" | "fp16". The 16-bit
//                        names mean the 16-bit parameter dtype (2 bytes per element); "fp32" sends
//                        4 and first casts each unit's (bucket's) 16-bit gradient to fp32 on the
//                        reduction's stream. FSDP1 MixedPrecision.reduce_dtype, FSDP2
//                        MixedPrecisionPolicy.reduce_dtype, DeepSpeed communication_data_type.
//                        Default: "fp32" with training.stack "composer" (Composer's default
//                        mixed_precision DEFAULT reduces in fp32; PURE reduces in bf16) or
//                        "torchtitan" (its mixed_precision_reduce default "float32"), else the
//                        16-bit dtype (PyTorch's reduce_dtype defaults to param_dtype; DeepSpeed's
//                        communication_data_type to the model's). An error where no such
//                        implementation reduces (Megatron's fp32 main gradients, stage 0).
//   gradient_buffers     where the gradients live: "persistent" (buffers allocated once and held
//                        through every phase: Megatron's grad buffers, DDP's reducer buckets,
//                        DeepSpeed's partitions) | "per-step" (freed by optimizer.zero_grad(
//                        set_to_none=True), PyTorch's default since 2.0, and allocated again by the
//                        next backward, unit by unit: FSDP's and FSDP2's sharded gradients, a loop
//                        without a DDP wrapper). Default "per-step" with training.stack "torchtitan",
//                        "fsdp" or "composer", else "persistent"; "per-step" is an error under
//                        "megatron" and "deepspeed" and with Megatron's distributed optimizer or
//                        DeepSpeed's ZeRO. Only the gradients kept on the GPU move.
//   tp_comm_overlap      Megatron / Transformer Engine --tp-comm-overlap (userbuffers): with
//                        sequence parallelism the QKV / MLP-up all-gathers and the projection /
//                        MLP-down reduce-scatters run pipelined with their GEMMs in `tensor` chunks,
//                        and in backward the input all-gather for wgrad and the dgrad reduce-scatter
//                        overlap the other GEMM; default false. Without sequence parallelism (all-
//                        reduce) it does not apply and is ignored, as Megatron requires SP for it.
//   moe_a2a_overlap      Megatron-core --overlap-moe-expert-parallel-comm (Megatron-Bridge
//                        moe_a2a_overlap): in the 1F1B steady state a forward and the backward after
//                        it run merged layer against layer, each one's expert-parallel all-to-alls
//                        under the other's computation. Needs an MoE model with expert > 1, an
//                        interleaved schedule when pipeline > 1 and no full recompute (Megatron-core's
//                        checks; an error otherwise). Default: true wherever those hold, as the
//                        Megatron-Bridge performance recipes with cross-node expert parallelism and
//                        Megatron-MoE-ModelZoo's best practice run (Megatron's own default is false).
struct ParallelismConfig {
  int tensor = 1;
  int pipeline = 1;
  int data = 1;
  int context = 1;
  int expert = 1;
  // Spatial (domain) parallelism of layer-graph models (models/layer_graph.hpp): each sample split
  // over `spatial` GPUs along its first spatial dimension. It maps onto the CONTEXT layout axis
  // (the analogue of splitting a sequence); 1 for transformers (check_strategy).
  int spatial = 1;
  int expert_tensor = 0;            // 0: not given (default reading); >= 1: parallel folding
  bool sequence_parallel = false;   // Megatron sequence parallelism (needs tensor > 1 to matter)
  PipelineSchedule schedule = PipelineSchedule::ONE_F_ONE_B;
  PipelineExecution execution = PipelineExecution::ORDERED;
  int virtual_stages = 1;           // model chunks per pipeline rank (interleaved-1f1b)
  std::vector<int> stage_layers;    // optional: layers per pipeline chunk in pipeline order
                                    // (pipeline * virtual_stages entries); empty = balanced split
  Recompute recompute = Recompute::NONE;
  bool recompute_early_stop = false;  // full recompute's re-run stops after the last saved tensor
  int zero_stage = 0;               // 0: none; 1: optimizer states; 2: + gradients; 3: + weights (FSDP)
  core::Bytes bucket_size = core::Bytes(40e6);  // fp32 gradient bytes per data-parallel bucket. Megatron-LM's
                                                // DDP default is max(40M, 1M x DP) elements; 40 MB keeps
                                                // buckets about one large layer each
  bool overlap_grad_reduce = true;  // reduce gradient buckets during backward
  ZeroImpl zero_impl = ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER;  // meaningful for zero_stage >= 1
  bool overlap_param_gather = true; // zero_stage 1-2: parameter all-gathers overlap the next forward
  int prefetch = -1;                // zero_stage 3: gathers ahead; -1: the implementation's default (deepspeed:
                                    // always -1, its prefetch is training.deepspeed's)
  bool backward_prefetch_post = false;  // FSDP1 BACKWARD_POST (zero_impl fsdp)
  std::string reduce_dtype = "bf16";  // "fp32" | "bf16" | "fp16" (as given; meaningful under framework_reduce())
  bool gradients_per_step = false;  // gradient_buffers "per-step": allocated in backward, freed after the step
  bool gradient_buffers_given = false;  // written back by to_json (its default depends on the stack)
  int shard_group = 0;              // HSDP: data ranks per shard group; 0: not given (all of data)
  bool tp_comm_overlap = false;     // TE userbuffers TP overlap; applies only with sequence parallelism
  bool moe_a2a_overlap = false;     // Megatron-core overlap_moe_expert_parallel_comm (combined 1F1B)
  bool moe_a2a_overlap_given = false;  // false: resolve_defaults() chooses it from the model

  // Whether tensor-parallel communication is pipelined with the GEMMs (tp_comm_overlap with
  // sequence parallelism and tensor > 1).
  bool tp_overlap_active() const { return tp_comm_overlap && sequence_parallel && tensor > 1; }
  // Gradient elements per data-parallel bucket: bucket_size / 4 (from_json sets bucket_size to
  // DeepSpeed's reduce_bucket_size, 5e8 elements = "2 GB", when zero_impl is "deepspeed" and
  // bucket_size is not given).
  double bucket_elements() const;

  // FSDP's ZeRO-2: zero_stage 2 with zero_impl "fsdp" (FSDP1 ShardingStrategy.SHARD_GRAD_OP) or
  // "fsdp2" (fully_shard with reshard_after_forward=False). Parameters are sharded at rest, gathered
  // unit by unit in each forward and kept unsharded until that unit's backward (no second gather).
  bool shard_grad_op() const {
    return zero_stage == 2 && (zero_impl == ZeroImpl::FSDP || zero_impl == ZeroImpl::FSDP2);
  }
  // Parameters gathered unit by unit during the passes: ZeRO-3 (any implementation) or shard_grad_op().
  bool gathers_parameters() const { return zero_stage == 3 || shard_grad_op(); }
  // FSDP2 under pipeline parallelism, as PyTorch's pipelining runs it (torch/distributed/pipelining/
  // stage.py, backward_maybe_with_nosync): every micro-batch's backward but the last runs with
  // set_requires_gradient_sync(False) and set_reshard_after_backward(False), so each unit's
  // gradients accumulate unsharded, in reduce_dtype (FSDPParam.to_accumulated_grad_if_needed), and
  // are reduce-scattered once per step, after the last micro-batch's backward; under SHARD_GRAD_OP
  // (fully_shard(reshard_after_forward=False): torchtitan's default with a pipeline, "to avoid
  // per-microbatch all-gathers") each unit is then also gathered once per step, before the first
  // micro-batch's forward. Not for PipeDream, which updates after every micro-batch.
  bool fsdp2_pipelined() const {
    return zero_impl == ZeroImpl::FSDP2 && gathers_parameters() && pipeline > 1 &&
           schedule != PipelineSchedule::PIPEDREAM && schedule != PipelineSchedule::PIPEDREAM_2BW;
  }
  // Gradients reduced in fp32 by the framework (reduce_dtype "fp32" under framework_reduce()).
  bool reduce_fp32() const { return framework_reduce() && reduce_dtype == "fp32"; }
  // Gradients reduced by the framework's sharded implementation (FSDP, FSDP2, DeepSpeed; ZeRO-3 is
  // never Megatron's distributed optimizer after from_json), in reduce_dtype; otherwise Megatron's fp32
  // main gradients or DDP's gradients in the parameter dtype.
  bool framework_reduce() const { return framework_reduces(zero_stage, zero_impl); }
  static bool framework_reduces(int stage, ZeroImpl impl) {
    return stage == 3 || (stage >= 1 && impl != ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER);
  }

  bool folded() const { return expert_tensor > 0; }  // Megatron-core parallel folding
  // Default: tensor x context x expert x data x pipeline; folded: tensor x context x data x pipeline.
  int world_size() const {
    return folded() ? tensor * context * spatial * data * pipeline : tensor * context * spatial * expert * data * pipeline;
  }
  int pipeline_chunks() const { return pipeline * virtual_stages; }
  // Sizes of the layout axes {TENSOR, CONTEXT, EXPERT, DATA, PIPELINE} (core::ParallelLayout).
  // Default: {tensor, context, expert, data, pipeline}; folded: {tensor, context, k, data / k,
  // pipeline} with k = expert / (tensor x context) (expert_tensor 1) or expert (expert_tensor =
  // tensor). REQUIRES: check_strategy() found no problem.
  std::array<int, core::AXIS_COUNT> layout_sizes() const;
  // Tensor parallelism of the expert MLPs: expert_tensor when folded, else tensor.
  int expert_mlp_tensor() const { return folded() ? expert_tensor : tensor; }
  // Folded with expert_tensor 1 and tensor > 1: the expert-parallel group spans the tensor group and
  // each rank routes its own sequence-parallel share of the tokens.
  bool experts_span_tensor() const { return folded() && expert_tensor == 1; }
  // Ranks holding the same dense (non-expert) parameters: the group that reduces dense gradients
  // and over which ZeRO shards them. Default: data x expert x context; folded: data x context.
  int dense_replicas() const { return folded() ? data * context : data * expert * context; }
  // Hybrid sharding: shard_group given and smaller than data (hybrid_shard() implies gathers_parameters()
  // after from_json's checks).
  bool hybrid_shard() const { return shard_group > 0 && shard_group < data; }
  // Ranks over which the dense states are sharded: dense_replicas(), or under hybrid sharding the
  // shard group, shard_group x context (x expert in the default reading).
  int dense_shards() const { return hybrid_shard() ? dense_replicas() / (data / shard_group) : dense_replicas(); }
  // Shard groups that replicate each other: data / shard_group under hybrid sharding, else 1.
  int shard_replicas() const { return hybrid_shard() ? data / shard_group : 1; }
  // Ranks holding the same expert parameters. Default: data x context; folded: expert-data =
  // tensor x context x data / (expert x expert_tensor).
  int expert_replicas() const {
    return folded() ? tensor * context * data / (expert * expert_tensor) : data * context;
  }
  // Sequences processed in one micro-batch step by all replicas together.
  int64_t sequences_per_step(const TrainingConfig& t) const {
    return t.micro_batch * data * (folded() ? 1 : expert);
  }

  // Reads the section and rejects unknown keys (calls r.finish()). `stack`: training.stack when the
  // scenario gives it (its defaults for zero_impl and backward_prefetch).
  static ParallelismConfig from_json(core::ObjectReader& r, std::optional<core::Stack> stack = std::nullopt);
  core::Json to_json() const;
};

// The stack a layout implies when training.stack is absent: ZeRO-3 "fsdp" -> FSDP, "fsdp2" ->
// TORCHTITAN, "deepspeed" (any stage) -> DEEPSPEED, otherwise MEGATRON.
core::Stack implied_stack(const ParallelismConfig& p);
// The ZeRO implementation parallelism.zero_impl defaults to at `zero_stage` (>= 1) under `stack`
// (training.stack when the scenario gives it): torchtitan's fully_shard at stages 2-3, Composer's
// and PyTorch FSDP's FSDP1 at 2-3, DeepSpeed's ZeRO at every stage; otherwise FSDP at stage 3 and
// Megatron's distributed optimizer at 1-2.
ZeroImpl default_zero_impl(int zero_stage, std::optional<core::Stack> stack);
// training.stack, or implied_stack() of the layout.
core::Stack resolved_stack(const TrainingConfig& t, const ParallelismConfig& p);
// Empty when `stack` can run the layout, else why not (one sentence naming the stack):
//   megatron    TP/PP/CP/EP, ZeRO 0-2 with the distributed optimizer (no ZeRO-3, no DeepSpeed); pipeline
//               schedules 1f1b and interleaved-1f1b
// (messages spell numbers that are names in words, so that search groups rejections by reason)
//   torchtitan  FSDP2 (zero_impl fsdp2 at stage 3, or 2 without resharding; or none) x TP x PP x CP; no EP;
//               no pipedream, pipedream-2bw or zero-bubble-h2 schedule
//   composer    FSDP1 (zero_impl fsdp: FULL_SHARD at stage 3, SHARD_GRAD_OP at 2) or DDP, data parallelism only
//   deepspeed   ZeRO 0-3 (zero_impl deepspeed), or ZeRO 0-1 x PP under 1f1b with one chunk per stage; TP only
//               through Megatron-DeepSpeed (allowed), no CP/EP
//   fsdp        FSDP1 (zero_impl fsdp, stage 2 or 3) x TP (2-D), data parallel otherwise
//   ddp         data parallelism only, no ZeRO
std::string stack_unsupported(core::Stack stack, const ParallelismConfig& p);
// stack_unsupported(stack, p).empty(), without formatting a message (search asks for every layout).
bool stack_runs(core::Stack stack, const ParallelismConfig& p);
// Whether any listed stack runs the layout as it is (its zero_impl included): what search asks of a
// layout priced with its implied stack when the scenario gives none. An unsharded pipeline under a
// zero-bubble schedule, which Megatron-core does not have, is torchtitan's.
bool some_stack_runs(const ParallelismConfig& p);

// Micro-batches per iteration: global_batch / (micro_batch x data x expert), folded: global_batch /
// (micro_batch x data).
// REQUIRES: check_strategy() found no problem.
int64_t micro_batch_count(const TrainingConfig& t, const ParallelismConfig& p);

// Records every impossible combination in `diag` (file `file`, pointers into the scenario), each
// message naming the values involved:
//   /parallelism/tensor           TP must divide heads, kv_heads and the inner size of every MLP split
//                                 over it (dense, shared experts, and the routed experts unless
//                                 expert_tensor is 1); with sequence
//                                 parallelism it must divide the per-rank sequence length; an MoE
//                                 model with TP > 1 needs sequence parallelism (as in Megatron-LM)
//   /parallelism/pipeline         pipeline x virtual_stages model chunks must not exceed layers
//   /parallelism/stage_layers     pipeline x virtual_stages entries, each >= 1, summing to layers
//   /parallelism/virtual_stages   > 1 only with interleaved-1f1b and pipeline > 1
//   /parallelism                  TP x PP x DP x CP x EP (folded: TP x PP x DP x CP) must equal
//                                 `world_size`
//   /parallelism/expert_tensor    folded: 1 or tensor; expert a multiple of tensor x context whose
//                                 quotient divides data (expert_tensor 1), or dividing data
//                                 (expert_tensor = tensor)
//   /training/global_batch        divisible by micro_batch x data x expert (folded: micro_batch x
//                                 data); with virtual_stages > 1
//                                 the micro-batch count must be a multiple of pipeline (Megatron-LM)
//   /parallelism/context          CP must divide sequence_length
//   /parallelism/expert           EP must divide experts; EP > 1 needs an MoE model
//   /parallelism/moe_a2a_overlap  an MoE model with expert > 1, interleaved-1f1b when pipeline > 1,
//                                 recompute not full
//   /training/deepspeed           given only under the deepspeed stack (resolved_stack)
void check_strategy(const ModelSpec& model, const TrainingConfig& training, const ParallelismConfig& par,
                    int world_size, const std::string& file, core::Diagnostics& diag);

// Resolves the defaults that depend on the model: moe_a2a_overlap, when not given, is true wherever
// check_strategy would accept it.
void resolve_defaults(const ModelSpec& model, ParallelismConfig& par);

}  // namespace trainsim::models
