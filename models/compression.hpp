#pragma once
// Gradient compression (the scenario's "optimizations.gradient_compression"): what the
// data-parallel gradient reductions send, which extra kernels the GPU runs around them, and the
// error-feedback state it keeps. The workload builder (stage_data_parallel.cpp) turns every gradient
// reduction of a bucket (or, at ZeRO-3, of a unit) into the steps compressed_reduction() returns,
// so both backends see the same collectives and compute tasks. docs/scenario.md documents the keys
// for users; docs/compression.md the model and its sources.
//
// A reduction of N gradient elements of g bytes (BuildPlan::gradient_reduce_bytes: 4 for fp32 main
// gradients, 2 where the framework reduces in 16 bits) over n data-parallel ranks becomes:
//   fp16, bf16   the same collective of N·2 bytes (Megatron-LM --grad-reduce-in-bf16, FSDP
//                MixedPrecision reduce_dtype, DeepSpeed communication_data_type, the DDP
//                fp16_compress / bf16_compress hooks); casts before and after
//   fp8, int8    the same collective of N·1 bytes + one fp32 scale per `scale_block` elements
//                (block-wise quantization: MS-AMP's FP8 gradients, ZeRO++ qgZ); casts and an
//                absmax pass before, the dequantization after
//   topk         the `ratio`·N largest-magnitude elements, values (g bytes) and indices
//                (`index_bytes`, int32 by default), ALL_GATHERed from every rank (nccl-tests size
//                n·ratio·N·(g + index_bytes)) instead of reduced: the traffic grows with n, the
//                real trade-off of sparsification (Aji & Heafield 2017; Lin et al., DGC, 2018);
//                each rank then scatter-adds the n sparse contributions
//   powersgd     per weight matrix M (m x n, the rank's shard; PyTorch's PowerSGD DDP hook):
//                P = M·Q (m x r), all-reduce of every P of the bucket in one message, Gram-Schmidt
//                orthogonalization of P, Q = Mᵀ·P (n x r), all-reduce of every Q, M ≈ P·Qᵀ; so
//                (m + n)·r·g bytes per matrix in two all-reduces. The bucket's other tensors
//                (biases, norms) go uncompressed first (Vogels et al., NeurIPS 2019)
//   onebit_adam  after `warmup_steps` full-precision iterations, the momentum (not the gradient)
//                is exchanged 1-bit compressed with one fp32 scale per rank's chunk, as DeepSpeed's
//                compressed_allreduce does: an ALL_TO_ALL of N/8 + 4·n bytes (each rank gets its
//                chunk from every other), the chunk averaged and recompressed, an ALL_GATHER of
//                N/8 + 4·n bytes; in the optimizer step after the whole backward (not overlapped
//                with it) (Tang et al., ICML 2021)
// The compression kernels run in the order of the data-parallel stream, between its collectives
// (as a DDP communication hook chains them on the reduction's future): they delay that chain and
// the optimizer step, and are assumed not to slow the backward kernels they run beside (small,
// memory-bound). Each is a COMPUTE task costed by the engine's compute model: the elementwise ones
// (ELEMENTWISE class) by their HBM bytes, PowerSGD's products as fp32 GEMMs by the slower of their
// FLOPs and bytes (skinny, r wide: bandwidth-bound; no tile model).
//
// Combinations (check_compression refuses the others with the reason):
//   ZeRO-1      every method except onebit_adam (DeepSpeed's 1-bit Adam works without ZeRO only);
//               the reduce-scatter of quantized bytes, or top-k's / PowerSGD's all-gather /
//               all-reduces followed by the update of the rank's shard
//   ZeRO-2/3    quantization only (fp16, bf16, fp8, int8: a reduce-scatter of fewer bytes, what FSDP's
//               reduce_dtype and ZeRO++ qgZ do). topk and powersgd are refused: a shard cannot be
//               reduced from other ranks' top-k sets or low-rank factors without every rank
//               rebuilding the whole gradient, and their full-size error-feedback residual undoes
//               the gradient sharding; no framework implements them there (PyTorch's PowerSGD is a
//               DDP hook; FSDP's hooks are the fp16 / bf16 casts)
//   pruning     compression applies to what pruning's `communication` sends: quantization to the
//               kept values (the index bytes unchanged), top-k to the kept values with its own
//               indices (pruning's index is not sent), 1-bit to the kept values; powersgd needs
//               `communication` "dense" (a compacted array of kept values is not a matrix)
//   precision   fp16 / bf16 where the reduction already is 16-bit (FSDP, DeepSpeed, fp16 training
//               under a framework ZeRO) change nothing: accepted with a warning
//   HSDP      (parallelism.shard_group) refused: its all-reduce of the gradient shard is not compressed
// Not compressed: the tied embedding's all-reduce between the first and last pipeline stage,
// parameter all-gathers (ZeRO), and tensor / pipeline / context / expert traffic.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "models/pruning.hpp"
#include "models/strategy.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::models {

enum class CompressionMethod : uint8_t { NONE, FP16, BF16, FP8, INT8, TOPK, POWERSGD, ONEBIT_ADAM };
std::string to_string(CompressionMethod m);  // "none", "fp16", "bf16", "fp8", "int8", "topk", "powersgd", "onebit_adam"

// The "optimizations.gradient_compression" section. Keys (all optional except as said):
//   method          "none" | "fp16" | "bf16" | "fp8" | "int8" | "topk" | "powersgd" | "onebit_adam";
//                   default "none" (the other keys are then ignored, so that
//                   --set optimizations.gradient_compression.method=none turns compression off)
//   ratio           topk: fraction of the elements sent, in [1e-6, 1]; default 0.01 (DGC sends 0.1%,
//                   ratio 0.001)
//   rank            powersgd: the approximation rank r, an integer >= 1 and at most the smaller
//                   dimension of every compressed matrix; default 4 (Vogels et al. use 1-4)
//   warmup_steps    iterations with uncompressed reductions before compression starts (1-bit
//                   Adam's freeze_step, PowerSGD's start_powerSGD_iter), >= 0; required for
//                   onebit_adam (it diverges without a warm-up), default 0 for the others
//   error_feedback  keep the residual of each compression and add it to the next gradient (and
//                   count its memory): default true for topk and powersgd, false for quantization;
//                   onebit_adam always has it (false is an error)
//   index_bytes     topk: bytes of one index, 4 (int32, default) or 8 (int64, torch.topk's indices)
//   scale_block     fp8, int8: elements per fp32 scale, an integer >= 1; default 2048
struct CompressionConfig {
  CompressionMethod method = CompressionMethod::NONE;
  double ratio = 0.01;
  int rank = 4;
  int64_t warmup_steps = 0;
  bool error_feedback = false;
  double index_bytes = 4;
  int64_t scale_block = 2048;

  bool enabled() const { return method != CompressionMethod::NONE; }
  bool quantization() const {
    return method == CompressionMethod::FP16 || method == CompressionMethod::BF16 || method == CompressionMethod::FP8 ||
           method == CompressionMethod::INT8;
  }
  // Bytes of one element on the wire for quantization (2 or 1); 0 for the other methods.
  double quantized_bytes() const;

  // Reads the section, resolving the per-method defaults; rejects unknown keys (calls r.finish()).
  static CompressionConfig from_json(core::ObjectReader& r);
  // Every key of the method resolved; {"method": "none"} without compression.
  core::Json to_json() const;
};

// The weight matrices a rank holds (PowerSGD compresses them; pruning.hpp's WeightMatrix): the
// transformer layers' linear layers of each kind present, the word embedding (V/t x h) on the first
// stage and the output layer on the last when it is not tied to it.
std::vector<WeightMatrix> compressed_matrices(const ModelSpec& m, const ParallelismConfig& p, LayerKind kind);
std::vector<WeightMatrix> embedding_matrices(const ModelSpec& m, const ParallelismConfig& p);
std::vector<WeightMatrix> head_matrices(const ModelSpec& m, const ParallelismConfig& p);

// Records in `diag` what cannot be combined (pointers under /optimizations/gradient_compression):
// PowerSGD's rank above a matrix's smaller dimension (naming the matrix), onebit_adam with ZeRO,
// topk and powersgd with ZeRO-2/3, powersgd with pruning's sparse communication.
void check_compression(const CompressionConfig& c, const ModelSpec& m, const ParallelismConfig& p,
                       const PruningConfig& pruning, const std::string& file, core::Diagnostics& diag);
// Bytes per gradient element of the data-parallel gradient reductions without compression
// (BuildPlan::gradient_reduce_bytes): fp32 main gradients (4) for Megatron-LM and without ZeRO; the
// 16-bit compute dtype where a framework ZeRO reduces (ParallelismConfig::framework_reduce()), or 4
// with its reduce_dtype "fp32"; 4 in fp32 / tf32 training.
double gradient_reduce_bytes(const TrainingConfig& t, const ParallelismConfig& p);

// Combinations that are allowed but do nothing or little (fp16 / bf16 where the reduction is already
// 16-bit): warnings for the report.
std::vector<std::string> compression_warnings(const CompressionConfig& c, const TrainingConfig& t,
                                              const ParallelismConfig& p);

// One gradient reduction before compression: a bucket's (or a ZeRO-3 unit's) gradients on one rank.
struct GradientReduction {
  double elements = 0;             // elements sent (pruning's `communication` applied)
  double index_bytes = 0;          // pruning's index bytes sent with them
  double element_bytes = 4;        // g: bytes per gradient element as reduced without compression
  int replicas = 1;                // n: ranks of the data-parallel group
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;  // ALL_REDUCE (no ZeRO) or REDUCE_SCATTER
  std::vector<WeightMatrix> matrices;  // PowerSGD: the bucket's weight matrices (elements = their
                                       // m·n·count plus the uncompressed rest)
};

// One step of a compressed reduction: a collective on the data-parallel group, or a compute task.
// The steps run one after another on the data-parallel stream.
struct CompressionStep {
  bool collective = true;
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;  // collective
  double bytes = 0;                // collective: buffer bytes per rank (nccl-tests' size); compute: HBM bytes
  double flops = 0;                // compute
  core::OpClass op_class = core::OpClass::ELEMENTWISE;     // compute
  core::GemmShape gemm;            // compute, GEMM class
  std::string name;                // task name, e.g. "powersgd P all_reduce", "compress (int8)"
};

// The steps of `r` under `c` (REQUIRES: c.enabled(); for powersgd, r.op is ALL_REDUCE or
// REDUCE_SCATTER and the matrices fit in r.elements). Without compression a reduction is the single
// collective r.op of r.elements·g + index_bytes bytes.
std::vector<CompressionStep> compressed_reduction(const CompressionConfig& c, const GradientReduction& r);
// The compute fields of a compute step's task (op class, FLOPs, HBM bytes, GEMM shape; PowerSGD's
// GEMMs in fp32: PyTorch does not use TF32 for matmuls by default). REQUIRES: !step.collective.
void set_compute_fields(const CompressionStep& step, core::Task& task);

// Bytes each rank's link sends for a collective of `bytes` (nccl-tests' size) over n ranks in a
// ring: size x core::bus_bandwidth_factor(op, n).
double wire_bytes(core::CollectiveOp op, double bytes, int ranks);

// Error-feedback state one rank keeps for `r` (bytes): the residual of each compressed element at
// g bytes (topk, powersgd, quantization, each with error_feedback); PowerSGD's P and Q factors
// ((m + n)·r·g per compressed matrix, kept between iterations for its warm start, with or without
// error feedback); 1-bit Adam's fp32 worker error (N·4) and server error (N/n·4).
double error_feedback_bytes(const CompressionConfig& c, const GradientReduction& r);

// What gradient compression changed on one pipeline stage (one rank of it), for the report. Bytes of
// the rank's data-parallel gradient reductions per iteration (the tied embedding's all-reduce and
// parameter gathers are not compressed and not counted): buffer bytes (nccl-tests' size) and the
// bytes its link sends in a ring (size x the bus-bandwidth factor), as emitted and uncompressed.
struct StageCompression {
  double bytes = 0;
  double uncompressed_bytes = 0;
  double wire_bytes = 0;
  double uncompressed_wire_bytes = 0;
  double error_feedback_bytes = 0;  // also in the stage's MemoryBreakdown::error_feedback
  int compute_tasks = 0;            // compression / decompression / PowerSGD tasks per iteration
};

}  // namespace trainsim::models
