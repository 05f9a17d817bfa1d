#pragma once
// Layer-graph models: CNNs (2D and 3D), ViTs, and anything else written as a sequence of layers with
// shapes, for the model families beyond transformers (issue 14; docs/cnn.md). A graph is read from
// the scenario's "model" ({"family": "layer_graph", "input": ..., "layers": [...]}) or taken from the
// catalog (resnet50, vgg16, vit-b16, cosmoflow-512), and its layers are resolved once: each gets its
// input and output shape, FLOPs, parameters and stored activations per sample.
//
// Shapes. An activation is {channels, dims}: channels (features) and 0-3 spatial dimensions (a token
// sequence is one dimension). Sizes below are per sample, forward, unsplit; K is the kernel width, d
// the number of spatial dimensions, "voxels" the product of the dims.
//   conv         2·K^d·Cin·Cout·out_voxels FLOPs (K^d·Cin·Cout·out_voxels multiply-adds);
//                K^d·Cin·Cout (+ Cout bias) parameters; out dim = (in + 2·padding − K) / stride + 1
//   pool         K^d·C·out_voxels FLOPs (max or average), no parameters
//   global_pool  C·in_voxels FLOPs ("avg"), 0 ("token": the class token); out {C, []}
//   batch_norm, layer_norm   5 FLOPs per element, 2·C parameters
//   relu         1 FLOP per element
//   dense        2·in·out FLOPs, in·out (+ out) parameters; in = C·in_voxels (it flattens)
//   sequence     the spatial dims become one token dimension (ViT after its patch convolution), with
//                an optional class token (C parameters, one more token) and learned positions
//                (tokens·C parameters); 1 FLOP per element
//   attention    a pre-norm transformer encoder block of width h = C over n = voxels tokens with
//                `heads` heads and an MLP of `mlp` (Dosovitskiy et al. 2021, Eq. 2-3):
//                2·n·(4h² + 2h·mlp) + 4·n²·h FLOPs; 4h² + 4h + 2h·mlp + mlp + h + 4h parameters
//   residual     runs `body`, and `shortcut` (empty: identity) on the same input, then adds them:
//                their output shapes must match; the add is 1 FLOP per element
// Backward is 2x forward for every layer (data and weight gradients of the GEMM-like layers).
// Model FLOPs (MFU) are 3x the forward FLOPs of conv, dense and attention; hardware FLOPs count every
// layer. Stored activations: each layer keeps its output until its backward (the attention block:
// a transformer layer's, activation_bytes_per_layer, Korthikanti et al. 2022 Eq. 1).
//
// Spatial parallelism (ParallelismConfig::spatial = S, on the CONTEXT layout axis): every layer
// whose input still has spatial dims is split along the first dim (slabs of ceil(D/S) planes; the
// slowest rank's share is what each rank computes). conv and pool with K > stride exchange halos of
// ceil((K − stride)/2) planes with each neighbour before the forward (input halos: halo·Cin·(other
// dims) elements per sample) and before the backward (output-gradient halos: halo·Cout·(other out
// dims)); batch_norm all-reduces its 2·C fp32 statistics over the S ranks in both directions; the
// first dense or global_pool consumes the split: each rank computes its part and the S ranks
// all-reduce the output (dense: b·out elements; global_pool: b·C), after which the remaining layers
// run whole on every rank. A sequence or attention layer cannot take a split input.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "models/strategy.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::models {

enum class GraphOp : uint8_t { CONV, POOL, GLOBAL_POOL, BATCH_NORM, LAYER_NORM, RELU, DENSE, SEQUENCE, ATTENTION, ADD };
std::string to_string(GraphOp op);  // "conv", "pool", ..., "add" (the add of a residual block)

struct ActivationShape {
  int64_t channels = 0;
  std::vector<int64_t> dims;  // spatial dims; empty after dense / global_pool
  double voxels() const;      // product of dims (1 without dims)
  double elements() const { return static_cast<double>(channels) * voxels(); }
  bool operator==(const ActivationShape&) const = default;
};
std::string to_string(const ActivationShape& s);  // "64x56x56"

// One resolved primitive layer in execution order (a residual block contributes its body, its
// shortcut, then an ADD).
struct GraphLayer {
  GraphOp op = GraphOp::CONV;
  std::string name;     // given "name", or "<type><index>" (conv3); a residual's parts "<block>.<part>"
  std::string pointer;  // JSON pointer of its definition ("" for catalog entries' generated layers)
  ActivationShape in, out;
  int64_t kernel = 1, stride = 1, padding = 0;  // conv, pool
  int heads = 0;                                // attention
  int64_t mlp = 0;                              // attention
  double flops = 0;               // forward, per sample, unsplit
  double model_flops = 0;         // forward FLOPs counted for MFU (conv, dense, attention), per sample
  double parameters = 0;
  double stored_elements = 0;     // kept from forward to backward, per sample
  // The GEMM shape per sample (implicit GEMM for conv: m = out voxels, n = Cout, k = Cin·K^d; dense
  // m = 1, n = out, k = in; attention's linear layers m = n tokens, k = h, n = 4h + 2·mlp); count 0
  // for the other layers.
  core::GemmShape gemm;
  double attention_core_flops = 0;  // attention: the 4·n²·h of QKᵀ and AV (a separate task)
  // Halo planes on each side under a spatial split (conv, pool with K > stride): ceil((K − stride)/2).
  int64_t halo = 0;
};

struct LayerGraph {
  std::string name;
  std::string source;
  ActivationShape input;
  std::vector<GraphLayer> layers;  // resolved, execution order
  core::Json definition;           // the "input" and "layers" as given (to_json)

  double parameter_count() const;
  double forward_flops_per_sample() const;
  double model_flops_per_sample() const;  // 3 x forward model FLOPs
  // Multiply-adds of conv, dense and attention layers per sample (what He et al. 2016 call FLOPs).
  double multiply_adds_per_sample() const;
};

// The most layers a graph may have, counting every entry of `layers` and of each residual's `body`
// and `shortcut`: 30 times ResNet-1001 (He et al. 2016b, ~3,400 entries in this form: conv, BN and
// ReLU of 333 bottleneck blocks). Counted on the JSON before any layer is read; a graph above it is
// refused with its count and what predicting it would take (about 6 us and 2 KB per layer and
// micro-batch: 2 million layers, 4 GB). The scenario file's size limit
// (core::MAX_SCENARIO_FILE_BYTES) refuses larger graphs before they are parsed.
inline constexpr size_t MAX_GRAPH_LAYERS = 100'000;

// Reads {"family": "layer_graph", "name", "source", "input": {"channels", "dims"}, "layers": [...]};
// problems (malformed keys, shapes that do not fit, naming the layer, more than MAX_GRAPH_LAYERS)
// go to `diag` under `pointer`.
std::shared_ptr<const LayerGraph> read_layer_graph(const core::Json& value, const std::string& file,
                                                   const std::string& pointer, core::Diagnostics& diag);

// The catalog of layer-graph models: resnet50, vgg16, vit-b16, cosmoflow-512 (each cites its source).
const std::vector<std::shared_ptr<const LayerGraph>>& layer_graph_catalog();
std::shared_ptr<const LayerGraph> find_layer_graph(const std::string& name);  // null when unknown

// The checks of check_strategy() for a layer-graph model: only data and spatial parallelism (tensor,
// pipeline, context, expert 1; zero_stage 0; recompute none), a global batch that divides, a
// spatial split no larger than any split layer's first dim, halos no wider than the local block.
void check_layer_graph_strategy(const LayerGraph& g, const TrainingConfig& t, const ParallelismConfig& p,
                                int world_size, const std::string& file, core::Diagnostics& diag);

// Per-layer costs on one rank for one micro-batch of `micro_batch` samples under a spatial split.
struct LocalLayerCost {
  bool split = false;            // the layer's input is split over the spatial ranks
  double fraction = 1;           // of the layer's work this rank does (ceil(D/S)/D when split)
  double flops = 0;              // forward
  double bytes = 0;              // forward HBM traffic (input, output, weights)
  double stored_bytes = 0;       // activations kept for the backward
  core::GemmShape gemm;          // m scaled by the micro-batch and the split
  double halo_forward_bytes = 0;   // to each neighbour, before the forward
  double halo_backward_bytes = 0;  // to each neighbour, before the backward
  double spatial_reduce_bytes = 0; // all-reduce over the spatial ranks (batch_norm statistics: both
                                   // directions; dense / global_pool consuming the split: forward)
};
std::vector<LocalLayerCost> local_layer_costs(const LayerGraph& g, const TrainingConfig& t, const ParallelismConfig& p);

// An attention layer as the one-layer GPT-style transformer it is (hidden = width, heads, ffn = mlp,
// GELU) and the training run that gives it its n tokens per sample: the workload emits its ops
// (accounting.hpp's layer_ops: QKV, core attention, projection, MLP, norms, with their HBM bytes)
// and stores activation_bytes_per_layer, as for a transformer layer. REQUIRES: l.op == ATTENTION.
struct EncoderBlock {
  ModelSpec model;
  TrainingConfig training;
};
EncoderBlock encoder_block(const GraphLayer& l, const TrainingConfig& t);

}  // namespace trainsim::models
