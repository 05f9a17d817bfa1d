#pragma once
// FLOP, byte and memory accounting of a transformer under a strategy. Formulas follow Narayanan et
// al. 2021 (SC21) and Korthikanti et al. 2022 ("Reducing Activation Recomputation"); each function
// says which.
//
// Notation: b micro-batch, s sequence length, s/c the tokens per context-parallel rank, h hidden,
// a heads and k key/value heads of size d (head_dim; h/a unless given), f ffn_hidden, V vocab,
// t tensor parallelism, E experts. Where a·d != h (Qwen3, Gemma) the formulas below that say h for
// the attention width mean a·d.
//
// FLOPs are those of matrix multiplications only (GEMMs and the two attention products), as in both
// papers and in the usual MFU definition. Norms, activations, dropouts, the softmax, the loss and the
// optimizer are memory-bound: their OpCost carries HBM bytes and zero FLOPs, so the FLOPs of a
// workload's compute tasks sum exactly to iteration_flops().hardware.
//
// Bytes are HBM traffic: inputs and weights read, outputs written, at the precision's element size
// (element_bytes); dropout masks are 1 byte per element; weight gradients accumulate into fp32 main
// gradients (read + write, 8 bytes per element, Megatron-LM's gradient-accumulation fusion). Core
// attention is Megatron's unfused kernel sequence (QKᵀ, scaled-masked softmax, dropout, ·V): the
// b·(a/t)·(s/c)·s score matrix is written and read several times, which is what makes non-flash
// attention memory-heavy.

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "models/strategy.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::models {

// What an op is, for the workload builder: it decides which tensor/context/expert-parallel
// collectives surround the op (see workload_builder.hpp).
enum class OpKind : uint8_t {
  LAYER_NORM,        // input / post-attention / final / embedding norm
  QKV,               // column-parallel QKV projection
  ATTENTION,         // core attention: QKᵀ, softmax, dropout, ·V
  PROJECTION,        // row-parallel attention output projection
  BIAS_DROPOUT_ADD,  // residual add with dropout (bias included for GELU models)
  ROTARY,            // eager PyTorch stacks only (eager_elementwise): rotary embedding of Q and K in fp32,
                     // GQA's repeat of K and V to every head, the attention output's contiguous copy
  ROUTER,            // MoE gate: h x E GEMM on the local tokens
  MLP_UP,            // column-parallel first MLP GEMM (gate and up together for SwiGLU), dense
                     // layers and shared experts
  MLP_ACTIVATION,    // GeLU or SwiGLU
  MLP_DOWN,          // row-parallel second MLP GEMM, dense layers and shared experts
  EXPERT_UP,         // the routed experts' first GEMM, after the dispatch all-to-all
  EXPERT_DOWN,       // the routed experts' second GEMM, before the combine all-to-all
  EMBEDDING,         // vocabulary-parallel word (+ position) embedding lookup
  LOGITS,            // column-parallel output layer
  LOSS,              // vocabulary-parallel cross-entropy
};

// One op of a layer (or of the embedding / output head), per micro-batch, on one GPU under the
// given tensor/sequence/context parallelism.
struct OpCost {
  std::string name;             // "qkv", "attention", "proj", "mlp_up", "mlp_act", "mlp_down", "ln1", ...
  core::OpClass op_class = core::OpClass::GEMM;
  core::Flops forward_flops;
  core::Bytes forward_bytes;    // HBM traffic
  core::Flops backward_flops;   // data + weight gradients
  core::Flops backward_recompute_flops;  // recomputed inside the backward kernel (FlashAttention's QKᵀ):
                                         // hardware FLOPs, not model FLOPs
  core::Bytes backward_bytes;
  bool recomputed_selective = false;  // recomputed under selective recompute (attention core)
  double op_sac_recompute = 0;        // share of its forward re-run under recompute "selective-op"
                                      // (mark_op_sac: the mm calls not saved, every non-matmul op)
  OpKind kind = OpKind::LAYER_NORM;
  core::GemmShape gemm;               // GEMM ops: the products' shape (core::GemmShape); count 0 otherwise
  core::Precision precision = core::Precision::BF16;  // operand precision of GEMMs and attention
                                                      // (gemm_precision(): FP8 training keeps some in BF16)
  core::GemmSparsity sparsity = core::GemmSparsity::NONE;  // GEMMs on pruned weights with a sparse kernel
  double density = 1;                                      // (workload_builder: optimizations.pruning)
};

// Bytes of one element of GEMM operands: 4 (fp32, tf32), 2 (bf16, fp16), 1 (fp8).
double element_bytes(core::Precision p);
// The precision an op's tensor-core work runs in under training precision p. FP8 training as
// Transformer Engine runs it (TE docs, "Using FP8 with Transformer Engine"; Megatron-core with
// --fp8-format hybrid): the linear layers of every transformer layer (QKV, projection, MLP / expert
// GEMMs) run in FP8, forward and backward (E4M3 activations and weights, E5M2 gradients); core
// attention (cuDNN / FlashAttention), the MoE router and the output layer (a plain
// ColumnParallelLinear, not a TE module) stay in BF16. Other training precisions run everything in p.
core::Precision gemm_precision(OpKind kind, core::Precision p);
// Bytes of one element of activations, stored tensors and communicated tensors: 4 (fp32, tf32),
// 2 (bf16, fp16, and fp8, whose GEMMs take fp8 inputs but whose activations stay 16-bit).
double activation_element_bytes(core::Precision p);

// FP8 casts. Each FP8 GEMM needs its inputs in FP8 plus a transposed copy for the other GEMM of its
// backward (TE's cast_transpose: read 2 bytes, write 1 + 1 per element). Where TE fuses the cast into
// the kernel that produces the input (LayerNormLinear for QKV and MLP-up, the GeLU/SwiGLU for MLP-down,
// dgelu for MLP-up's output gradient) it costs no extra traffic; the remaining stand-alone casts are
// the projection's input (the attention output) in forward and the output gradients of the
// projection, MLP-down and QKV in backward: FP8_CAST_BYTES per element, counted in the bytes of the
// neighbouring memory-bound op of the same layer (attn_bda forward, attn_bda / mlp_bda / ln1
// backward). Weight casts happen once per iteration (none with FP8 parameters) and are neglected.
inline constexpr double FP8_CAST_BYTES = 4.0;

// Whether the job's memory-bound ops run as eager PyTorch's op-by-op kernels rather than as fused
// ones: a PyTorch stack (training.stack, or the one the layout implies) without torch.compile, for a
// Llama-style model (SwiGLU, RMSNorm, rotary positions). Megatron's fused kernels, Inductor's
// generated ones and a GELU/LayerNorm block (one native kernel per op in eager PyTorch too, as
// Composer's MPT runs it) keep the fused byte counts. What changes (counted from the op sequence of
// torchtitan's models/llama/model.py and Hugging Face's LlamaRMSNorm, which are the same chain):
//   RMSNorm  x.float(), pow, mean, x * rsqrt, .type_as(x), * weight: (28 + 4e) bytes per element
//            forward (fused: 2e), (56 + 6e) backward (fused: 3e)
//   SwiGLU   silu(gate) then * up as two kernels: 5e forward, 9e backward per element (fused 3e, 5e)
//   rotary   a ROTARY op: Q and K through view_as_complex in fp32 ((16 + 2e) per element each way),
//            repeat_kv's copy of K and V to every query head under GQA ((q + kv)·e each, each way),
//            and the attention output's transpose().contiguous() (2·q·e each way), per token
bool eager_elementwise(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);

// Ops of one transformer layer of the given kind, in forward order:
//   dense: ln1 qkv [rotary] attention proj attn_bda ln2 mlp_up mlp_act mlp_down mlp_bda
//   (rotary: eager_elementwise() only)
//   MoE:   ln1 qkv attention proj attn_bda ln2 [shared_up shared_act shared_down] router expert_up
//          expert_act expert_down mlp_bda
// GEMM FLOPs are 2·m·n·k forward and twice that backward (data + weight gradient). Per GPU:
//   qkv 2·b·(s/c)·h·(a·d + 2·k·d)/t;  attention 4·b·(s/c)·s·a·d/t;  proj 2·b·(s/c)·a·d·h/t;
//   mlp_up 2·b·(s/c)·h·f/t (x2 for SwiGLU);  mlp_down 2·b·(s/c)·f·h/t, with f = dense_ffn_hidden in
//   the dense layers of an MoE model; shared experts the same with f = shared_experts x
//   shared_expert_ffn_hidden.
//   Routed experts: the expert GEMMs with rows = top_k x the tokens the rank routes (each token
//   visits top_k experts; tokens are assumed balanced over the expert-parallel ranks) and f split
//   over expert_mlp_tensor() ranks. The rank routes b·(s/c) tokens (the tensor group's tokens,
//   gathered under sequence parallelism), or b·(s/c)/t under parallel folding with expert_tensor 1
//   (its own sequence-parallel share; the experts are whole): the FLOPs per token are the same.
//   router 2·(b·s/c/t)·h·E with sequence parallelism (tokens are split over the tensor group there;
//   Megatron-LM requires sequence parallelism for MoE with TP > 1).
// Norms and bias-dropout-adds work on b·(s/c)·h elements, divided by t with sequence parallelism.
std::vector<OpCost> layer_ops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p, LayerKind kind);
// The ops of an MoE layer for an MoE model, of a dense layer otherwise.
std::vector<OpCost> layer_ops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);
// PyTorch per-op selective activation checkpointing as torchtitan applies it (recompute
// "selective-op"; torchtitan/distributed/activation_checkpoint.py, activation_checkpoint.mode
// "selective" with selective_ac_option "op"): inside each layer's checkpointed region the policy saves
// the outputs of aten.mm except every second one in forward order (the 2nd, 4th, ...) and those of
// scaled_dot_product_attention; every other op is recomputed when the layer's backward begins.
// torchtitan's layers call mm for wq, wk, wv, wo, then w1, w3, w2 (SwiGLU; a GeLU MLP: up, down), so
// wk, wo and w3 re-run (GeLU: wk, wo, down), with every norm, activation and residual add, and an
// unfused attention core (its bmm and softmax are not in the save list). Sets op_sac_recompute on the
// dense layer `ops` (QKV re-runs its K share kv / (q + 2·kv), a SwiGLU MLP_UP half of it).
void mark_op_sac(std::vector<OpCost>& ops, const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);
// The ops a full recomputation re-runs: the number of leading `ops` of a layer. All of them, or with
// early_stop (parallelism.recompute_early_stop: PyTorch's non-reentrant checkpoint stops the re-run
// once the last tensor the backward needs is saved again; torch/utils/checkpoint.py,
// set_checkpoint_early_stop) those before the layer's trailing ops that save nothing the backward
// needs. Walking back from the layer's end: a residual add (bias_dropout_add, assumed without
// dropout) saves nothing and is not re-run; a GEMM or an activation saves only its input, before its
// kernel runs, so the re-run stops there without running it; any other op (a norm's statistics,
// attention's output and softmax statistics, the routed experts' down-projection, whose output the
// MoE combine saves) must run, and the re-run ends after it. A dense GPT layer so skips its MLP
// down-projection (with its tensor-parallel collective) and its last residual add.
size_t full_recompute_ops(const std::vector<OpCost>& ops, bool early_stop);
// Embedding lookup (first stage): "embedding" (+ "embedding_ln" for models with an embedding norm).
std::vector<OpCost> embedding_ops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);
// Output head (last stage): "final_ln", "logits" (2·b·(s/c)·h·V/t), "loss" (vocabulary-parallel
// cross-entropy on fp32 logits).
std::vector<OpCost> head_ops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);

struct IterationFlops {
  core::Flops model;     // without recompute (what MFU counts)
  core::Flops hardware;  // executed, recompute included (what HFU counts)
};
// Whole-model FLOPs per iteration summed over all GPUs. Without recompute this equals
// 72·B·s·l·h²·(1 + s/6h + V/12lh) (Korthikanti Eq. 7) for a GPT with ffn = 4h; with full recompute the
// hardware FLOPs equal 96·B·s·l·h²·(1 + s/6h + V/16lh) (Narayanan Eq. 3), less the ops an early stop
// leaves out (full_recompute_ops). Selective recompute adds the
// forward attention products (4·B·s²·h per layer). Independent of the parallel layout.
IterationFlops iteration_flops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);

// Activation memory of one layer for one micro-batch on one GPU (Korthikanti Table 2):
//   no parallelism, no recompute: s·b·h·(34 + 5·a·s/h)
//   tensor parallel:              s·b·h·(10 + 24/t + 5·a·s/(h·t))
//   tensor + sequence parallel:   s·b·h/t·(34 + 5·a·s/h)
//   + selective recompute:        drops the 5·a·s/h term
//   training.attention "flash" drops it too (no score matrix is stored) and keeps the fp32 softmax
//   statistics instead: 4·a·s·b/t bytes
//   full recompute:               2·s·b·h (only the layer input; /t with sequence parallelism)
//   selective-op recompute:       the layer input, the outputs of the mm calls it saves (mark_op_sac:
//                                 wq, wv, w1, w2 for SwiGLU; wq, wv, up for GeLU) and, with flash
//                                 attention, its output and softmax statistics
// Those constants assume 2-byte activations and the GPT block. In general, with element size e and
// per-rank sequence s/c: kept whole per rank (/t only with sequence parallelism): both norm inputs,
// QKV and MLP inputs (4·e) and two dropout masks (2 bytes) per b·s·h; split over t: Q and the
// projection input (2·e·a·d), K and V (2·e·k·d), the MLP's activation input (e·f, 2·e·f for SwiGLU)
// and down-projection input (e·f), all per token (MoE: the routed experts' tensors, split over
// expert_mlp_tensor(), plus the dispatched tokens e·h, per routed token, and the shared experts'
// tensors per token); scores, softmax output and dropout mask (2·e + 1 bytes per element
// of the (a/t)·b·(s/c)·s score matrix).
core::Bytes activation_bytes_per_layer(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p,
                                       LayerKind kind);
// For an MoE layer of an MoE model, a dense layer otherwise.
core::Bytes activation_bytes_per_layer(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);
// Activations kept from the head's forward to its backward for one micro-batch: the fp32 softmax of
// the vocabulary-parallel cross-entropy, 4·b·(s/c)·V/t bytes; with eager_loss() also the 16-bit
// logits the training loop holds until its backward (2·b·(s/c)·V/t more).
core::Bytes head_activation_bytes(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);
// Whether the loss is PyTorch's F.cross_entropy on logits cast to fp32 (torchtitan's
// cross_entropy_loss: pred.flatten(0, 1).float(); Hugging Face's causal-LM loss likewise), rather than
// a fused cross-entropy kernel (Megatron's vocabulary-parallel one; llm-foundry's default
// fused_crossentropy from flash-attn, as Composer runs it): stacks torchtitan, fsdp and ddp.
// DeepSpeed runs whatever loss the model has: its published runs are Megatron-DeepSpeed's GPT, whose
// loss is Megatron's, so deepspeed keeps the fused one.
bool eager_loss(const TrainingConfig& t, const ParallelismConfig& p);
// Memory the loss's backward allocates on top of head_activation_bytes, for one micro-batch: under
// eager_loss() the fp32 gradient nll_loss writes and the fp32 gradient log_softmax's backward writes
// from it, alive together (8·b·(s/c)·V/t); 0 for a fused loss, which writes the logits' gradient in place.
core::Bytes head_backward_transient_bytes(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);

// Parameters held by one GPU, split by the group their gradients are reduced over.
struct ParameterCount {
  double dense = 0;   // replicated over the dense_replicas() ranks
  double expert = 0;  // expert MLPs: replicated over the expert_replicas() ranks
  double total() const { return dense + expert; }
  ParameterCount& operator+=(const ParameterCount& o) {
    dense += o.dense;
    expert += o.expert;
    return *this;
  }
};
// One transformer layer of the given kind on one GPU. Column-parallel weights and biases and
// row-parallel weights are split over t; norms, row-parallel biases and the router are replicated;
// shared experts are split over t like a dense MLP (dense parameters); routed experts are split
// over the expert-parallel ranks (E/expert local experts) and each over expert_mlp_tensor() ranks.
ParameterCount layer_parameters(const ModelSpec& m, const ParallelismConfig& p, LayerKind kind);
// For an MoE layer of an MoE model, a dense layer otherwise.
ParameterCount layer_parameters(const ModelSpec& m, const ParallelismConfig& p);
// The first stage's word embedding (split over t), learned positions (replicated) and embedding norm.
ParameterCount embedding_parameters(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);
// The last stage's final norm and output layer. The output layer is the embedding itself when
// embeddings are tied and both ends of the model are on one stage (pipeline 1); with pipeline > 1
// the last stage holds a tied copy (Megatron-LM), kept equal by the embedding-group all-reduce.
ParameterCount head_parameters(const ModelSpec& m, const ParallelismConfig& p);

struct MemoryBreakdown {
  core::Bytes weights;
  core::Bytes gradients;
  core::Bytes optimizer_states;  // fp32 master weights + Adam moments, ZeRO-sharded
  core::Bytes activations;       // peak stored activations (in-flight micro-batches x per-micro-batch),
                                 // the last stage's fp32 logits softmax included
  core::Bytes buffers;           // communication buffers: ZeRO-3's gathered parameters
  core::Bytes error_feedback;    // gradient compression's state (models/compression.hpp): residuals,
                                 // PowerSGD's factors, 1-bit Adam's error buffers; 0 without compression
  core::Bytes stashed_weights;   // PipeDream's weight stashing: the weight versions beyond the current one
  core::Bytes total() const {
    return weights + gradients + optimizer_states + activations + buffers + error_feedback + stashed_weights;
  }
};

// Bytes per parameter of the model state (Megatron-LM mixed precision, Adam; Rajbhandari et al. 2020):
//   weights: 2 (bf16/fp16/fp8 training) or 4 (fp32/tf32);  gradients: 4 (fp32 main gradients, also
//   what is reduced);  optimizer: 12 with mixed precision (fp32 master + Adam m, v) or 8 in fp32.
double weight_bytes_per_parameter(core::Precision p);
// The same for a training run: 1 with FP8 parameters (TrainingConfig::fp8_params).
double weight_bytes_per_parameter(const TrainingConfig& t);
double gradient_bytes_per_parameter();
double optimizer_bytes_per_parameter(core::Precision p);
// HBM traffic of the Adam step per locally updated parameter: read the fp32 gradient once for the
// norm (clipping) and once for the update (8), read and write m, v and the fp32 master (24), and
// with mixed precision write the 16-bit model weight (2): 34 bytes, 32 in fp32.
double optimizer_step_bytes_per_parameter(core::Precision p);

// Weights, gradients and optimizer states of `local` parameters (activations and buffers zero).
// ZeRO-1 shards optimizer states over the replicas, ZeRO-2 also gradients, ZeRO-3 also weights.
MemoryBreakdown model_state_memory(const ParameterCount& local, core::Precision precision, const ParallelismConfig& p);
// FSDP2 under a pipeline (ParallelismConfig::fsdp2_pipelined): each parameter's gradient accumulates
// unsharded over the step's micro-batches, in the reduce dtype (4 bytes with reduce_dtype "fp32",
// else the 16-bit dtype); model_state_memory counts it in the gradients. 0 otherwise.
double accumulated_gradient_bytes_per_parameter(core::Precision precision, const ParallelismConfig& p);
// The same, with FP8 parameters' 1-byte weights where the run has them.
MemoryBreakdown model_state_memory(const ParameterCount& local, const TrainingConfig& t, const ParallelismConfig& p);

}  // namespace trainsim::models
