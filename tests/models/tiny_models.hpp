#pragma once
// Tiny models whose parameters the model tests count by hand (pruning_test.cpp, compression_test.cpp).

#include "models/model_spec.hpp"

namespace trainsim::models::test_support {

// A tiny Llama-style model: 2 layers, h 64, 4 heads (kv 4, head_dim 16), SwiGLU f 128, V 256, tied
// embeddings, rotary positions: 98624 parameters (pruning_test.cpp counts them).
inline ModelSpec tiny_llama() {
  ModelSpec m;
  m.name = "tiny";
  m.layers = 2;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 128;
  m.vocab = 256;
  m.activation = Activation::SWIGLU;
  m.learned_positions = false;
  return m;
}

}  // namespace trainsim::models::test_support
