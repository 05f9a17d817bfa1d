#pragma once
// Transformer model descriptions: the built-in catalog (`trainsim describe models`) and inline specs.
//
// Two block styles are described by `activation`:
//  - GELU: GPT-style block (GPT-3, Megatron, MT-NLG, BLOOM): LayerNorm with weight and bias, biases on
//    every linear layer, a 2-matrix MLP.
//  - SWIGLU: Llama-style block: RMSNorm (weight only), no linear biases, a 3-matrix gated MLP.

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"

namespace trainsim::models {

enum class Activation { GELU, SWIGLU };  // GeLU MLP (2 matrices) or SwiGLU (3 matrices)
std::string to_string(Activation a);     // "gelu", "swiglu"

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
  bool tied_embeddings = true;  // input embedding shared with the output layer
  bool learned_positions = true;  // GPT-style learned position embeddings (false: rotary, no parameters)
  bool embedding_norm = false;    // a norm right after the word embedding (BLOOM's word_embeddings_layernorm)
  std::string source;          // where the architecture comes from (catalog entries)

  int64_t head_dim() const { return hidden / heads; }
  bool is_moe() const { return experts > 1; }
  bool has_biases() const { return activation == Activation::GELU; }
  // Parameters of one norm: LayerNorm weight + bias (GELU models) or RMSNorm weight (SWIGLU models).
  int64_t norm_parameters() const { return has_biases() ? 2 * hidden : hidden; }
  // Total parameters (all experts), embeddings included. `sequence_length` sizes the learned position
  // table (ignored without learned positions). Exact for the block styles above, e.g. GPT-3 175B:
  // 12·l·h² + 13·l·h + V·h + s·h + 2·h.
  int64_t parameter_count(int64_t sequence_length) const;

  // `value` is a catalog name ("gpt3-175b"), an object {"base": name, <overrides>}, or a full spec
  // {"family": "transformer", "layers": .., "hidden": .., "heads": .., ...}. Problems are recorded in
  // `diag` with pointers under `pointer`.
  //
  // Keys of an object (full spec: layers, hidden, heads and vocab are required; with "base" every key
  // overrides the catalog entry):
  //   family             "transformer" (the only family; required without "base")
  //   name               label in reports; default "custom" (with "base": the base name, or
  //                      "<base> (modified)" when anything is overridden)
  //   layers, hidden, heads, vocab     integers >= 1; heads must divide hidden
  //   kv_heads           key/value heads (GQA), must divide heads; default heads (with "base": the
  //                      base's, or the new heads when the base has no GQA)
  //   ffn_hidden         MLP inner size; default 4·hidden (with "base": the base's, or 4·hidden when
  //                      the base follows that rule)
  //   activation         "gelu" | "swiglu"; default "gelu"
  //   experts            experts per MoE layer; default 1 (dense)
  //   top_k              experts per token, <= experts; default 1
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
