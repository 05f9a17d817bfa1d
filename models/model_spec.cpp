#include "models/model_spec.hpp"

#include "models/layer_graph.hpp"

#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::models {
namespace {

// Megatron-LM pads GPT-2's 50257-token BPE vocabulary to a multiple of 128 x TP: 51200 for TP <= 8.
constexpr int64_t GPT2_PADDED_VOCAB = 51200;
constexpr const char* GPT3_SOURCE =
    "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1; vocabulary padded to 51200 as in "
    "Megatron-LM";

ModelSpec gpt(std::string name, int layers, int64_t hidden, int heads, std::string source) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.vocab = GPT2_PADDED_VOCAB;
  m.activation = Activation::GELU;
  m.tied_embeddings = true;
  m.learned_positions = true;
  m.source = std::move(source);
  return m;
}

ModelSpec llama3(std::string name, int layers, int64_t hidden, int heads, int64_t ffn_hidden) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = 8;
  m.ffn_hidden = ffn_hidden;
  m.vocab = 128256;
  m.activation = Activation::SWIGLU;
  m.tied_embeddings = false;
  m.learned_positions = false;
  m.source = "Llama Team 2024, The Llama 3 Herd of Models, Table 3";
  return m;
}

std::vector<ModelSpec> make_catalog() {
  std::vector<ModelSpec> c;
  c.push_back(gpt("gpt3-125m", 12, 768, 12, GPT3_SOURCE));
  c.push_back(gpt("gpt3-350m", 24, 1024, 16, GPT3_SOURCE));
  c.push_back(gpt("gpt3-760m", 24, 1536, 16, GPT3_SOURCE));
  // Table 2.1 lists 24 heads of size 128 for a 2048-wide model, which cannot both hold; the head size
  // 128 (16 heads) is what Megatron-LM's GPT-3 1.3B configuration uses.
  c.push_back(gpt("gpt3-1.3b", 24, 2048, 16,
                  std::string(GPT3_SOURCE) + " (16 heads of 128: the table's 24 heads do not divide 2048)"));
  c.push_back(gpt("gpt3-2.7b", 32, 2560, 32, GPT3_SOURCE));
  c.push_back(gpt("gpt3-6.7b", 32, 4096, 32, GPT3_SOURCE));
  // Table 2.1 prints d_model 5140 for 40 heads of 128; 5120 = 40 x 128 is the intended width.
  c.push_back(gpt("gpt3-13b", 40, 5120, 40, std::string(GPT3_SOURCE) + " (d_model 5120 = 40 x 128; the table's 5140 is a typo)"));
  c.push_back(gpt("gpt3-175b", 96, 12288, 96, GPT3_SOURCE));
  c.push_back(gpt("megatron-1t", 128, 25600, 160,
                  "Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using "
                  "Megatron-LM, Table 1"));
  c.push_back(gpt("mt-nlg-530b", 105, 20480, 128,
                  "Smith et al. 2022, Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B, Section 3"));
  ModelSpec bloom = gpt("bloom-176b", 70, 14336, 112,
                        "BigScience 2022, BLOOM: A 176B-Parameter Open-Access Multilingual Language Model, "
                        "Table 3 (ALiBi positions, embedding LayerNorm)");
  bloom.vocab = 250880;
  bloom.learned_positions = false;
  bloom.embedding_norm = true;
  c.push_back(bloom);
  c.push_back(llama3("llama3-8b", 32, 4096, 32, 14336));
  c.push_back(llama3("llama3-70b", 80, 8192, 64, 28672));
  c.push_back(llama3("llama3-405b", 126, 16384, 128, 53248));
  return c;
}

constexpr int64_t MAX_LAYERS = 65535;  // Task::layer is 16 bits
constexpr int64_t MAX_WIDTH = int64_t{1} << 40;
constexpr int64_t MAX_HEADS = int64_t{1} << 20;

// Reads the spec keys of an object over `spec` (the base entry, or defaults for a full spec).
void read_fields(core::ObjectReader& r, ModelSpec& spec, bool full_spec) {
  const ModelSpec base = spec;
  auto count = [&](std::string_view key, int64_t current, int64_t max) -> int64_t {
    if (full_spec) return r.required_integer(key, 1, max).value_or(current);
    return r.integer(key, current, 1, max);
  };
  spec.name = r.string("name", spec.name);
  spec.layers = static_cast<int>(count("layers", spec.layers, MAX_LAYERS));
  spec.hidden = count("hidden", spec.hidden, MAX_WIDTH);
  spec.heads = static_cast<int>(count("heads", spec.heads, MAX_HEADS));
  spec.vocab = count("vocab", spec.vocab, MAX_WIDTH);
  const int kv_default = (full_spec || base.kv_heads == base.heads) ? spec.heads : base.kv_heads;
  spec.kv_heads = static_cast<int>(r.integer("kv_heads", kv_default, 1, MAX_HEADS));
  const int64_t ffn_default = (full_spec || base.ffn_hidden == 4 * base.hidden) ? 4 * spec.hidden : base.ffn_hidden;
  spec.ffn_hidden = r.integer("ffn_hidden", ffn_default, 1, MAX_WIDTH);
  spec.activation = r.choice("activation", to_string(spec.activation), {"gelu", "swiglu"}) == "swiglu"
                        ? Activation::SWIGLU
                        : Activation::GELU;
  spec.head_dim_given = r.has("head_dim") ? r.integer("head_dim", 0, 1, MAX_WIDTH) : base.head_dim_given;
  spec.experts = static_cast<int>(r.integer("experts", spec.experts, 1, MAX_HEADS));
  spec.top_k = static_cast<int>(r.integer("top_k", spec.top_k, 1, MAX_HEADS));
  spec.shared_experts = static_cast<int>(r.integer("shared_experts", spec.shared_experts, 0, MAX_HEADS));
  spec.shared_expert_ffn_given = r.has("shared_expert_ffn_hidden")
                                     ? r.integer("shared_expert_ffn_hidden", 0, 1, MAX_WIDTH)
                                     : base.shared_expert_ffn_given;
  spec.moe_layer_freq = static_cast<int>(r.integer("moe_layer_freq", spec.moe_layer_freq, 1, MAX_LAYERS));
  spec.first_dense_layers = static_cast<int>(r.integer("first_dense_layers", spec.first_dense_layers, 0, MAX_LAYERS));
  spec.dense_ffn_given =
      r.has("dense_ffn_hidden") ? r.integer("dense_ffn_hidden", 0, 1, MAX_WIDTH) : base.dense_ffn_given;
  spec.tied_embeddings = r.boolean("tied_embeddings", spec.tied_embeddings);
  spec.learned_positions = r.boolean("learned_positions", spec.learned_positions);
  spec.embedding_norm = r.boolean("embedding_norm", spec.embedding_norm);
  spec.source = r.string("source", spec.source);
}

// Consistency of the resolved spec; pointers name the key responsible.
void check_shape(const ModelSpec& m, const std::string& file, const std::string& pointer, core::Diagnostics& diag) {
  if (m.head_dim_given == 0 && m.heads > 0 && m.hidden % m.heads != 0) {
    diag.add(file, core::append_pointer(pointer, "heads"),
             fmt::format("heads ({}) must divide hidden ({}) unless head_dim is given", m.heads, m.hidden));
  }
  if (m.kv_heads > 0 && m.heads % m.kv_heads != 0) {
    diag.add(file, core::append_pointer(pointer, "kv_heads"),
             fmt::format("kv_heads ({}) must divide heads ({})", m.kv_heads, m.heads));
  }
  if (m.top_k > m.experts) {
    diag.add(file, core::append_pointer(pointer, "top_k"),
             fmt::format("top_k ({}) must not exceed experts ({})", m.top_k, m.experts));
  }
  // The MoE-only keys describe the MoE layers; on a dense model they would be silently ignored.
  auto moe_only = [&](std::string_view key, bool set, const std::string& found) {
    if (set && !m.is_moe()) {
      diag.add(file, core::append_pointer(pointer, key),
               fmt::format("{} applies to MoE models (experts > 1) only, found {} with experts 1", key, found));
    }
  };
  moe_only("shared_experts", m.shared_experts != 0, std::to_string(m.shared_experts));
  moe_only("moe_layer_freq", m.moe_layer_freq != 1, std::to_string(m.moe_layer_freq));
  moe_only("first_dense_layers", m.first_dense_layers != 0, std::to_string(m.first_dense_layers));
  moe_only("dense_ffn_hidden", m.dense_ffn_given != 0, std::to_string(m.dense_ffn_given));
  if (m.shared_expert_ffn_given != 0 && m.shared_experts == 0) {
    diag.add(file, core::append_pointer(pointer, "shared_expert_ffn_hidden"),
             fmt::format("shared_expert_ffn_hidden ({}) needs shared_experts >= 1, found shared_experts 0",
                         m.shared_expert_ffn_given));
  }
  if (m.is_moe() && m.layers > 0 && m.moe_layer_count() == 0) {
    diag.add(file, core::append_pointer(pointer, "first_dense_layers"),
             fmt::format("first_dense_layers {} and moe_layer_freq {} leave no MoE layer among the {} layers",
                         m.first_dense_layers, m.moe_layer_freq, m.layers));
  }
}

// A ModelSpec carrying a layer graph: name, source and `layers` (its resolved layer count) from it.
ModelSpec graph_spec(std::shared_ptr<const LayerGraph> g) {
  ModelSpec spec;
  spec.name = g->name;
  spec.source = g->source;
  spec.layers = static_cast<int>(g->layers.size());
  spec.graph = std::move(g);
  return spec;
}

std::string unknown_model(const std::string& name) {
  std::vector<std::string> names = model_names();
  for (const auto& g : layer_graph_catalog()) names.push_back(g->name);
  const std::string hint = core::closest_match(name, names);
  return hint.empty() ? fmt::format("unknown model \"{}\" (see `trainsim describe models`)", name)
                      : fmt::format("unknown model \"{}\" (did you mean \"{}\"?)", name, hint);
}

}  // namespace

std::string to_string(Activation a) { return a == Activation::SWIGLU ? "swiglu" : "gelu"; }

LayerKind ModelSpec::layer_kind(int layer) const {
  return is_moe() && layer >= first_dense_layers && layer % moe_layer_freq == 0 ? LayerKind::MOE : LayerKind::DENSE;
}

int ModelSpec::moe_layer_count() const {
  int n = 0;
  for (int l = 0; l < layers; ++l) n += layer_kind(l) == LayerKind::MOE ? 1 : 0;
  return n;
}

int64_t ModelSpec::mlp_parameters(int64_t ffn) const {
  const int64_t up_matrices = activation == Activation::SWIGLU ? 2 : 1;
  int64_t mlp = (up_matrices + 1) * hidden * ffn;
  if (has_biases()) mlp += up_matrices * ffn + hidden;
  return mlp;
}

namespace {

// Parameters of the model with `routed` routed experts per MoE layer.
int64_t count_parameters(const ModelSpec& m, int64_t sequence_length, int64_t routed) {
  const int64_t h = m.hidden;
  const int64_t q = m.attention_width();
  const int64_t kv = static_cast<int64_t>(m.kv_heads) * m.head_dim();
  const int64_t qkv_out = q + 2 * kv;
  int64_t attention = h * qkv_out + q * h;  // QKV and output projection
  if (m.has_biases()) attention += qkv_out + h;
  const int64_t common = attention + 2 * m.norm_parameters();
  const int64_t dense_layer = common + m.mlp_parameters(m.dense_ffn());
  int64_t moe_layer = common + routed * m.mlp_parameters(m.ffn_hidden) + h * m.experts;  // router, no bias
  if (m.shared_experts > 0) moe_layer += m.mlp_parameters(m.shared_ffn());
  const int64_t moe_layers = m.moe_layer_count();
  int64_t total = moe_layers * moe_layer + (m.layers - moe_layers) * dense_layer + m.norm_parameters();  // + final norm
  total += m.vocab * h;                                // word embedding
  if (!m.tied_embeddings) total += m.vocab * h;        // separate output layer
  if (m.learned_positions) total += sequence_length * h;
  if (m.embedding_norm) total += m.norm_parameters();
  return total;
}

}  // namespace

int64_t ModelSpec::parameter_count(int64_t sequence_length) const {
  return count_parameters(*this, sequence_length, experts);
}

int64_t ModelSpec::active_parameter_count(int64_t sequence_length) const {
  return count_parameters(*this, sequence_length, is_moe() ? top_k : 1);
}

ModelSpec ModelSpec::from_json(const core::Json& value, const std::string& file, const std::string& pointer,
                               core::Diagnostics& diag) {
  ModelSpec spec;
  if (value.is_string()) {
    const std::string name = value.get<std::string>();
    if (const ModelSpec* m = find_model(name)) return *m;
    if (auto g = find_layer_graph(name)) return graph_spec(std::move(g));
    diag.add(file, pointer, unknown_model(name));
    return spec;
  }
  if (!value.is_object()) {
    diag.add(file, pointer,
             fmt::format("expected a catalog model name or an object, found {}", core::describe_json(value)));
    return spec;
  }
  if (value.contains("family") && value.at("family") == "layer_graph") {
    return graph_spec(read_layer_graph(value, file, pointer, diag));
  }
  core::ObjectReader r(value, file, pointer, diag);
  const bool has_base = r.has("base");
  if (has_base) {
    const std::string base = r.string("base", "");
    if (const ModelSpec* m = find_model(base)) {
      spec = *m;
    } else {
      // Without a base the spec has zero heads: reading on would divide by them (SIGFPE).
      r.problem("base", find_layer_graph(base)
                            ? fmt::format("\"{}\" is a layer-graph model: a base with overrides is for transformers; give "
                                          "it by name, or as a full \"family\": \"layer_graph\" object (docs/cnn.md)",
                                          base)
                            : unknown_model(base));
      r.finish({"family", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "activation", "experts",
                "top_k", "input"});
      return spec;
    }
    r.choice("family", "transformer", {"transformer"});
  } else {
    spec.name = "custom";
    if (r.required_string("family")) r.choice("family", "transformer", {"transformer"});
  }
  const ModelSpec before = spec;
  read_fields(r, spec, !has_base);
  r.finish();
  if (has_base && spec.name == before.name) {
    const bool modified = spec.to_json() != before.to_json();
    if (modified) spec.name = before.name + " (modified)";
  }
  check_shape(spec, file, pointer, diag);
  return spec;
}

core::Json ModelSpec::to_json() const {
  core::Json j;
  if (graph) {
    j["family"] = "layer_graph";
    j["name"] = graph->name;
    if (!graph->source.empty()) j["source"] = graph->source;
    if (!graph->definition.is_null()) {
      j["input"] = graph->definition.at("input");
      j["layers"] = graph->definition.at("layers");
    }
    return j;
  }
  j["family"] = "transformer";
  j["name"] = name;
  j["layers"] = layers;
  j["hidden"] = hidden;
  j["heads"] = heads;
  j["kv_heads"] = kv_heads;
  j["ffn_hidden"] = ffn_hidden;
  j["vocab"] = vocab;
  j["activation"] = to_string(activation);
  j["head_dim"] = head_dim();
  j["experts"] = experts;
  j["top_k"] = top_k;
  j["shared_experts"] = shared_experts;
  // The MoE-only sizes are printed where they apply (from_json rejects them on a dense model).
  if (shared_experts > 0) j["shared_expert_ffn_hidden"] = shared_ffn() / shared_experts;
  j["moe_layer_freq"] = moe_layer_freq;
  j["first_dense_layers"] = first_dense_layers;
  if (is_moe()) j["dense_ffn_hidden"] = dense_ffn();
  j["tied_embeddings"] = tied_embeddings;
  j["learned_positions"] = learned_positions;
  j["embedding_norm"] = embedding_norm;
  if (!source.empty()) j["source"] = source;
  return j;
}

const std::vector<ModelSpec>& model_catalog() {
  static const std::vector<ModelSpec> catalog = make_catalog();
  return catalog;
}

const ModelSpec* find_model(const std::string& name) {
  for (const ModelSpec& m : model_catalog()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const ModelSpec& m : model_catalog()) names.push_back(m.name);
  return names;
}

}  // namespace trainsim::models
