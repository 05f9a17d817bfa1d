#pragma once
// FLOP, byte and memory accounting of a transformer under a strategy. Formulas follow Narayanan et
// al. 2021 (SC21) and Korthikanti et al. 2022 ("Reducing Activation Recomputation"); each function
// says which.

#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "models/strategy.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::models {

// One op of a layer (or of the embedding / output head), per micro-batch, on one GPU under the
// given tensor/sequence/context parallelism.
struct OpCost {
  std::string name;             // "qkv", "attention", "proj", "mlp_up", "mlp_act", "mlp_down", "ln1", ...
  core::OpClass op_class = core::OpClass::GEMM;
  core::Flops forward_flops;
  core::Bytes forward_bytes;    // HBM traffic
  core::Flops backward_flops;   // data + weight gradients
  core::Bytes backward_bytes;
  bool recomputed_selective = false;  // recomputed under selective recompute (attention core)
};

// Ops of one transformer layer, in forward order.
std::vector<OpCost> layer_ops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);
// Embedding lookup (first stage) and output logits + loss (last stage).
std::vector<OpCost> embedding_ops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);
std::vector<OpCost> head_ops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);

struct IterationFlops {
  core::Flops model;     // without recompute (what MFU counts)
  core::Flops hardware;  // executed, recompute included (what HFU counts)
};
// Whole-model FLOPs per iteration summed over all GPUs. Without recompute this equals
// 72·B·s·l·h²·(1 + s/6h + V/12lh) (Korthikanti Eq. 7) for a GPT with ffn = 4h; with full recompute the
// hardware FLOPs equal 96·B·s·l·h²·(1 + s/6h + V/16lh) (Narayanan Eq. 3).
IterationFlops iteration_flops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);

// Activation memory of one layer for one micro-batch on one GPU (Korthikanti Table 2):
//   no parallelism, no recompute: s·b·h·(34 + 5·a·s/h)
//   tensor parallel:              s·b·h·(10 + 24/t + 5·a·s/(h·t))
//   tensor + sequence parallel:   s·b·h/t·(34 + 5·a·s/h)
//   + selective recompute:        drops the 5·a·s/h term
//   full recompute:               2·s·b·h (only the layer input; /t with sequence parallelism)
core::Bytes activation_bytes_per_layer(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);

struct MemoryBreakdown {
  core::Bytes weights;
  core::Bytes gradients;
  core::Bytes optimizer_states;  // fp32 master weights + Adam moments, ZeRO-sharded
  core::Bytes activations;       // peak stored activations (in-flight micro-batches x per-micro-batch)
  core::Bytes buffers;           // communication buffers, workspace, logits
  core::Bytes total() const { return weights + gradients + optimizer_states + activations + buffers; }
};

}  // namespace trainsim::models
