#pragma once
// Transformer model descriptions: the built-in catalog (`trainsim describe models`) and inline specs.

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"

namespace trainsim::models {

enum class Activation { GELU, SWIGLU };  // GeLU MLP (2 matrices) or SwiGLU (3 matrices)

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
  std::string source;          // where the architecture comes from (catalog entries)

  int64_t head_dim() const { return hidden / heads; }
  // Total parameters (all experts), embeddings included.
  int64_t parameter_count(int64_t sequence_length) const;

  // `value` is a catalog name ("gpt3-175b"), an object {"base": name, <overrides>}, or a full spec
  // {"family": "transformer", "layers": .., "hidden": .., "heads": .., ...}. Problems are recorded in
  // `diag` with pointers under `pointer`.
  static ModelSpec from_json(const core::Json& value, const std::string& file, const std::string& pointer,
                             core::Diagnostics& diag);
  core::Json to_json() const;  // the fully resolved spec
};

const std::vector<ModelSpec>& model_catalog();
const ModelSpec* find_model(const std::string& name);  // nullptr when unknown

}  // namespace trainsim::models
