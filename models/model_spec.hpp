#pragma once
// Transformer model descriptions: the built-in catalog (`trainsim describe models`) and inline specs.
//
// Two block styles are described by `activation`:
//  - GELU: GPT-style block (GPT-3, Megatron, MT-NLG, BLOOM): LayerNorm with weight and bias, biases on
//    every linear layer, a 2-matrix MLP.
//  - SWIGLU: Llama-style block: RMSNorm (weight only), no linear biases, a 3-matrix gated MLP.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"

namespace trainsim::models {

enum class Activation { GELU, SWIGLU };  // GeLU MLP (2 matrices) or SwiGLU (3 matrices)
std::string to_string(Activation a);     // "gelu", "swiglu"

// What the MLP of one transformer layer is: a dense MLP, or a mixture of experts (router, routed
// experts, optional shared experts).
enum class LayerKind : uint8_t { DENSE, MOE };

struct LayerGraph;  // models/layer_graph.hpp

struct ModelSpec {
  std::string name;            // catalog name, or "custom"
  int layers = 0;
  int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;            // = heads without GQA/MQA
  int64_t ffn_hidden = 0;      // MLP inner size (per expert for MoE)
  int64_t vocab = 0;
  Activation activation = Activation::GELU;
  int experts = 1;             // 1 = dense
  int top_k = 1;               // experts per token
  int64_t head_dim_given = 0;  // "head_dim"; 0: hidden / heads (use head_dim())
  int shared_experts = 0;      // shared expert MLPs run on every token of an MoE layer
  int64_t shared_expert_ffn_given = 0;  // "shared_expert_ffn_hidden"; 0: ffn_hidden
  int moe_layer_freq = 1;      // every moe_layer_freq-th layer is MoE (Megatron's --moe-layer-freq)
  int first_dense_layers = 0;  // the first layers are dense (DeepSeek-V3's first_k_dense_replace)
  int64_t dense_ffn_given = 0;  // "dense_ffn_hidden": MLP size of an MoE model's dense layers; 0: ffn_hidden
  bool tied_embeddings = true;  // input embedding shared with the output layer
  bool learned_positions = true;  // GPT-style learned position embeddings (false: rotary, no parameters)
  bool embedding_norm = false;    // a norm right after the word embedding (BLOOM's word_embeddings_layernorm)
  std::string source;          // where the architecture comes from (catalog entries)
  // Family "layer_graph" (CNNs, ViT: models/layer_graph.hpp, docs/cnn.md): the resolved graph; null
  // for transformers. The transformer fields above are then unused (layers counts the graph's layers).
  std::shared_ptr<const LayerGraph> graph;
  bool is_layer_graph() const { return graph != nullptr; }

  int64_t head_dim() const { return head_dim_given > 0 ? head_dim_given : hidden / heads; }
  // Width of the queries and of the attention output: heads x head_dim (= hidden unless head_dim is
  // given, e.g. Qwen3 and Gemma).
  int64_t attention_width() const { return static_cast<int64_t>(heads) * head_dim(); }
  bool is_moe() const { return experts > 1; }
  // Layer `layer` (0-based) is MoE when the model has experts, layer >= first_dense_layers and
  // layer % moe_layer_freq == 0 (Megatron-core's moe_layer_freq and HF DeepSeek-V3's rule).
  LayerKind layer_kind(int layer) const;
  int moe_layer_count() const;
  // MLP inner size of a dense layer: ffn_hidden for a dense model, dense_ffn_hidden for an MoE model.
  int64_t dense_ffn() const { return is_moe() && dense_ffn_given > 0 ? dense_ffn_given : ffn_hidden; }
  // Inner size of all shared experts of an MoE layer together (they run as one MLP):
  // shared_experts x shared_expert_ffn_hidden; 0 without shared experts.
  int64_t shared_ffn() const {
    return static_cast<int64_t>(shared_experts) * (shared_expert_ffn_given > 0 ? shared_expert_ffn_given : ffn_hidden);
  }
  bool has_biases() const { return activation == Activation::GELU; }
  // Parameters of one norm: LayerNorm weight + bias (GELU models) or RMSNorm weight (SWIGLU models).
  int64_t norm_parameters() const { return has_biases() ? 2 * hidden : hidden; }
  // Parameters of one MLP of inner size `ffn` (weights, and biases for GELU models).
  int64_t mlp_parameters(int64_t ffn) const;
  // Total parameters (all experts), embeddings included. `sequence_length` sizes the learned position
  // table (ignored without learned positions). Exact for the block styles above, e.g. GPT-3 175B:
  // 12·l·h² + 13·l·h + V·h + s·h + 2·h.
  int64_t parameter_count(int64_t sequence_length) const;
  // Parameters one token goes through: parameter_count() with top_k of the routed experts of each
  // MoE layer instead of all of them (the "A22B" of Qwen3-235B-A22B).
  int64_t active_parameter_count(int64_t sequence_length) const;

  // `value` is a catalog name ("gpt3-175b"), an object {"base": name, <overrides>}, or a full spec
  // {"family": "transformer", "layers": .., "hidden": .., "heads": .., ...}. Problems are recorded in
  // `diag` with pointers under `pointer`.
  //
  // Keys of an object (full spec: layers, hidden, heads and vocab are required; with "base" every key
  // overrides the catalog entry):
  //   family             "transformer" (the only family; required without "base")
  //   name               label in reports; default "custom" (with "base": the base name, or
  //                      "<base> (modified)" when anything is overridden)
  //   layers, hidden, heads, vocab     integers >= 1; heads must divide hidden unless head_dim is given
  //   head_dim           size of one attention head; default hidden / heads. Q and the attention
  //                      output are heads x head_dim wide, K and V kv_heads x head_dim (Qwen3, Gemma)
  //   kv_heads           key/value heads (GQA), must divide heads; default heads (with "base": the
  //                      base's, or the new heads when the base has no GQA)
  //   ffn_hidden         MLP inner size; default 4·hidden (with "base": the base's, or 4·hidden when
  //                      the base follows that rule)
  //   activation         "gelu" | "swiglu"; default "gelu"
  //   experts            experts per MoE layer; default 1 (dense)
  //   top_k              experts per token, <= experts; default 1
  //   shared_experts     MoE only: shared expert MLPs every token goes through (DeepSeek, Qwen2-MoE),
  //                      tensor-parallel like a dense MLP, their gradients reduced with the dense
  //                      ones; default 0
  //   shared_expert_ffn_hidden   MoE only, with shared_experts >= 1: inner size of each shared
  //                      expert; default ffn_hidden
  //   moe_layer_freq     MoE only: every k-th layer (0, k, 2k, ...) is MoE, the others dense;
  //                      default 1 (every layer)
  //   first_dense_layers MoE only: the first n layers are dense (DeepSeek-V3: 3); default 0
  //   dense_ffn_hidden   MoE only: MLP inner size of the dense layers; default ffn_hidden
  //   tied_embeddings    default true
  //   learned_positions  default true
  //   embedding_norm     default false
  //   source             free text; default ""
  static ModelSpec from_json(const core::Json& value, const std::string& file, const std::string& pointer,
                             core::Diagnostics& diag);
  core::Json to_json() const;  // the fully resolved spec, accepted back by from_json
};

// The built-in catalog, in a fixed order: GPT-3 (Brown et al. 2020, Table 2.1), Megatron 1T
// (Narayanan et al. 2021), MT-NLG 530B, BLOOM 176B, Llama 3 8B/70B/405B. Each entry cites its source.
const std::vector<ModelSpec>& model_catalog();
const ModelSpec* find_model(const std::string& name);  // nullptr when unknown
std::vector<std::string> model_names();

}  // namespace trainsim::models
