// Hugging Face config.json -> the scenario's model (docs/import.md, "Hugging Face config.json").
// Key names and class defaults are those of transformers' configuration_<model_type>.py.

#include <fmt/format.h>

#include <numeric>

#include "models/model_spec.hpp"
#include "sim/plan/config_import.hpp"
#include "sim/plan/import_source.hpp"

namespace trainsim::plan {

using import_detail::FieldStyle;
using import_detail::SourceObject;

namespace {

constexpr int64_t MAX_SIZE = int64_t{1} << 40;
constexpr int64_t MAX_COUNT = int64_t{1} << 20;

enum class Family { LLAMA, QWEN2, QWEN3, QWEN2_MOE, QWEN3_MOE, MIXTRAL, DEEPSEEK, GPT2 };

struct FamilyInfo {
  const char* model_type;
  Family family;
  bool tie_default;  // the class's tie_word_embeddings default
};

const FamilyInfo FAMILIES[] = {
    {"llama", Family::LLAMA, false},         {"mistral", Family::LLAMA, false},
    {"qwen2", Family::QWEN2, false},         {"qwen3", Family::QWEN3, false},
    {"qwen2_moe", Family::QWEN2_MOE, false}, {"qwen3_moe", Family::QWEN3_MOE, false},
    {"mixtral", Family::MIXTRAL, false},     {"deepseek_v2", Family::DEEPSEEK, false},
    {"deepseek_v3", Family::DEEPSEEK, false}, {"gpt2", Family::GPT2, true},
};

// Keys that describe initialization, tokenization, inference or numerics: nothing an iteration's
// time or memory depends on.
bool no_effect_key(const std::string& key) {
  static const std::set<std::string, std::less<>> keys = {
      "architectures", "transformers_version", "torch_dtype", "dtype", "initializer_range", "rms_norm_eps",
      "layer_norm_eps", "layer_norm_epsilon", "norm_eps", "bos_token_id", "eos_token_id", "pad_token_id",
      "use_cache", "rope_theta", "rope_scaling", "rope_parameters", "attention_dropout", "pretraining_tp",
      "output_router_logits", "router_aux_loss_coef", "aux_loss_alpha", "seq_aux", "router_jitter_noise",
      "resid_pdrop", "embd_pdrop", "attn_pdrop", "summary_type", "summary_use_proj", "summary_activation",
      "summary_proj_to_labels", "summary_first_dropout", "scale_attn_weights", "scale_attn_by_inverse_layer_idx",
      "reorder_and_upcast_attn", "task_specific_params", "_name_or_path", "auto_map", "quantization_config",
      "routed_scaling_factor", "topk_method", "n_group", "topk_group", "scoring_func", "norm_topk_prob",
      "ep_size", "rope_interleave", "qk_layernorm", "bos_token", "eos_token", "model_type", "is_decoder",
      "tie_encoder_decoder", "return_dict", "output_hidden_states", "output_attentions", "torchscript",
      "use_bfloat16", "chunk_size_feed_forward", "id2label", "label2id", "problem_type"};
  return keys.contains(key);
}

std::string unread_reason(const std::string& key) {
  if (no_effect_key(key)) return "no counterpart (no effect on an iteration's time or memory)";
  if (key == "max_position_embeddings") {
    return "no counterpart: the sequence length trained is training.sequence_length (rotary positions have no parameters)";
  }
  if (key == "sliding_window" || key == "use_sliding_window" || key == "max_window_layers" || key == "layer_types") {
    return "no counterpart: trainsim's attention covers the whole sequence (sliding-window attention is not modelled)";
  }
  return "no counterpart in trainsim's model (not modelled)";
}

// DeepSeek's multi-head latent attention parameters of one layer (DeepSeek-V2 paper, Sec. 2.1.2):
// q down/up (or a plain q projection without q_lora_rank), the joint KV down-projection with the
// decoupled rotary key, the K/V up-projection, their norms, and the output projection.
int64_t mla_parameters(int64_t h, int64_t heads, std::optional<int64_t> q_lora, int64_t kv_lora, int64_t rope, int64_t nope,
                       int64_t v) {
  const int64_t q_head = nope + rope;
  int64_t p = q_lora ? h * *q_lora + *q_lora + *q_lora * heads * q_head : h * heads * q_head;
  p += h * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v);
  p += heads * v * h;
  return p;
}

}  // namespace

ImportFragment read_hf_config(const std::string& path) {
  const core::Json doc = core::load_json_file(path);
  if (!doc.is_object()) throw core::InputError(path, "", fmt::format("expected a Hugging Face config.json object, found {}", core::describe_json(doc)));
  ImportFragment f;
  f.format = ConfigFormat::HUGGING_FACE;
  f.file = path;
  core::Diagnostics diag;
  SourceObject c(doc, path, "", FieldStyle::POINTER, diag);

  const std::optional<std::string> type = c.string("model_type");
  const FamilyInfo* info = nullptr;
  for (const FamilyInfo& fi : FAMILIES) {
    if (type && *type == fi.model_type) info = &fi;
  }
  if (info == nullptr) {
    std::vector<std::string> names;
    for (const FamilyInfo& fi : FAMILIES) names.emplace_back(fi.model_type);
    std::string list;
    for (size_t i = 0; i < names.size(); ++i) list += (i == 0 ? "" : ", ") + names[i];
    const std::string hint = type ? core::closest_match(*type, names) : std::string();
    diag.add(path, "/model_type",
             type ? fmt::format("model_type \"{}\" is not a family trainsim imports ({}){}", core::truncate_echo(*type), list,
                                hint.empty() ? "" : fmt::format("; did you mean \"{}\"?", hint))
                  : fmt::format("expected \"model_type\" naming the family ({})", list));
    diag.throw_if_any();
  }
  const Family family = info->family;
  const bool gpt2 = family == Family::GPT2;
  const auto key = [&](const char* llama_key, const char* gpt2_key) { return gpt2 ? gpt2_key : llama_key; };
  const auto required = [&](const char* k, int64_t max) -> int64_t {
    if (!c.has(k)) {
      c.mark_read(k);
      c.problem(k, fmt::format("expected \"{}\" (a positive integer): model_type {} needs it", k, *type));
      return 0;
    }
    return c.integer(k, 1, max).value_or(0);
  };
  const auto set = [&](const std::string& model_key, core::Json v, const char* field) {
    import_detail::set_value(f, "/model/" + model_key, std::move(v), c.field(field));
  };

  const int64_t hidden = required(key("hidden_size", "n_embd"), MAX_SIZE);
  const int64_t layers = required(key("num_hidden_layers", "n_layer"), 65535);
  const int64_t heads = required(key("num_attention_heads", "n_head"), MAX_COUNT);
  const int64_t vocab = required("vocab_size", MAX_SIZE);
  int64_t kv_heads = heads;
  if (!gpt2 && c.has("num_key_value_heads")) kv_heads = c.integer("num_key_value_heads", 1, MAX_COUNT).value_or(heads);
  const bool moe = family == Family::QWEN2_MOE || family == Family::QWEN3_MOE || family == Family::MIXTRAL || family == Family::DEEPSEEK;
  int64_t ffn = 0;
  if (gpt2) {
    ffn = c.has("n_inner") ? c.integer("n_inner", 1, MAX_SIZE).value_or(0) : 4 * hidden;
    c.mark_read("n_inner");
  } else if (family == Family::MIXTRAL || !moe) {
    ffn = required("intermediate_size", MAX_SIZE);
  }
  std::optional<int64_t> head_dim;
  if (!gpt2 && family != Family::DEEPSEEK && c.has("head_dim")) head_dim = c.integer("head_dim", 1, MAX_SIZE);
  c.mark_read("head_dim");

  // Shapes that cannot be a model, named by their keys here rather than by the scenario's (sizes
  // already refused read as 0 and are not checked again).
  if (!head_dim && family != Family::DEEPSEEK && heads > 0 && hidden % heads != 0) {
    c.problem(key("num_attention_heads", "n_head"),
              fmt::format("{} must divide {} ({}) when head_dim is not given", heads, key("hidden_size", "n_embd"), hidden));
  }
  if (heads > 0 && kv_heads > 0 && heads % kv_heads != 0) {
    c.problem("num_key_value_heads", fmt::format("{} must divide num_attention_heads ({})", kv_heads, heads));
  }

  std::string name = *type;
  if (const std::optional<std::string> n = c.string("_name_or_path"); n && !n->empty()) name = *n;
  set("family", "transformer", "model_type");
  set("name", name, "_name_or_path");
  set("layers", layers, key("num_hidden_layers", "n_layer"));
  set("hidden", hidden, key("hidden_size", "n_embd"));
  set("heads", heads, key("num_attention_heads", "n_head"));
  set("vocab", vocab, "vocab_size");

  bool tied = info->tie_default;
  if (const std::optional<bool> t = c.boolean("tie_word_embeddings")) tied = *t;

  if (gpt2) {
    const std::string act = c.string("activation_function").value_or("gelu_new");
    if (act.find("gelu") == std::string::npos) {
      import_detail::add_note(f, c.field("activation_function"), act,
                              "approximated as gelu (trainsim's GPT block: LayerNorm, biases, a 2-matrix MLP)");
    }
    set("activation", "gelu", "activation_function");
    set("kv_heads", heads, "n_head");
    set("ffn_hidden", ffn, "n_inner");
    set("learned_positions", true, "n_positions");
    if (const std::optional<int64_t> pos = c.integer("n_positions", 1, MAX_SIZE)) {
      import_detail::add_note(f, c.field("n_positions"), std::to_string(*pos),
                              "no counterpart: trainsim sizes the learned position table by training.sequence_length");
    }
  } else {
    const std::string act = c.string("hidden_act").value_or("silu");
    if (act != "silu" && act != "swish") {
      import_detail::add_note(f, c.field("hidden_act"), act,
                              "approximated as swiglu: trainsim's gated MLP (3 matrices) has the same shapes and FLOPs");
    }
    set("activation", "swiglu", "hidden_act");
    set("learned_positions", false, "model_type");
  }
  set("tied_embeddings", tied, "tie_word_embeddings");

  const int64_t hd = head_dim.value_or(heads > 0 ? hidden / heads : 0);
  if (family != Family::DEEPSEEK) {
    set("kv_heads", kv_heads, "num_key_value_heads");
    if (head_dim && *head_dim * heads != hidden) set("head_dim", *head_dim, "head_dim");
    if (!moe || family == Family::MIXTRAL) set("ffn_hidden", ffn, family == Family::MIXTRAL ? "intermediate_size" : key("intermediate_size", "n_inner"));
  }

  // Parameters trainsim's blocks do not have (its SwiGLU block has no biases and no QK norms).
  if (c.has("attention_bias") || family == Family::QWEN2 || family == Family::QWEN2_MOE) {
    const bool bias = family == Family::QWEN2 || family == Family::QWEN2_MOE || c.boolean("attention_bias").value_or(false);
    c.mark_read("attention_bias");
    if (!bias) f.matched.push_back(c.field("attention_bias"));
    if (bias && !gpt2) {
      const int64_t n = layers * (heads * hd + 2 * kv_heads * hd);
      import_detail::add_note(f, family == Family::QWEN2 || family == Family::QWEN2_MOE ? "q/k/v projections" : c.field("attention_bias"),
                              family == Family::QWEN2 || family == Family::QWEN2_MOE ? "biases" : "true",
                              fmt::format("no counterpart: trainsim's SwiGLU block has no biases ({} bias parameters not counted)", n));
    }
  }
  if (const std::optional<bool> mlp_bias = c.boolean("mlp_bias"); mlp_bias && *mlp_bias) {
    import_detail::add_note(f, c.field("mlp_bias"), "true", "no counterpart: trainsim's SwiGLU block has no biases");
  } else if (mlp_bias) {
    f.matched.push_back(c.field("mlp_bias"));
  }
  if (family == Family::QWEN3 || family == Family::QWEN3_MOE) {
    import_detail::add_note(f, "q_norm, k_norm", "RMSNorm over head_dim",
                            fmt::format("no counterpart: Qwen3's QK norms ({} parameters) are not counted", layers * 2 * hd));
  }

  if (moe) {
    const bool deepseek = family == Family::DEEPSEEK;
    const char* experts_key = family == Family::MIXTRAL ? "num_local_experts" : deepseek ? "n_routed_experts" : "num_experts";
    const int64_t experts = required(experts_key, MAX_COUNT);
    const int64_t top_k = required("num_experts_per_tok", MAX_COUNT);
    set("experts", experts, experts_key);
    set("top_k", top_k, "num_experts_per_tok");
    if (experts > 0 && top_k > experts) c.problem("num_experts_per_tok", fmt::format("{} exceeds {} ({})", top_k, experts_key, experts));
    if (family != Family::MIXTRAL) {
      const int64_t expert_ffn = required("moe_intermediate_size", MAX_SIZE);
      set("ffn_hidden", expert_ffn, "moe_intermediate_size");
    }
    // Which layers are MoE.
    std::vector<bool> pattern(static_cast<size_t>(layers), true);
    std::string rule_field;
    if (family == Family::QWEN2_MOE || family == Family::QWEN3_MOE) {
      const int64_t step = c.integer("decoder_sparse_step", 1, 65535).value_or(1);
      std::set<int64_t> dense_only;
      if (const core::Json* list = c.get("mlp_only_layers")) {
        if (!list->is_array()) {
          c.problem("mlp_only_layers", fmt::format("expected an array of layer indices, found {}", core::describe_json(*list)));
        } else {
          for (const core::Json& i : *list) {
            const std::optional<int64_t> v = core::exact_integer(i);
            if (!v || *v < 0 || *v >= layers) {
              c.problem("mlp_only_layers", fmt::format("expected layer indices in [0, {}), found {}", layers, core::describe_json(i)));
              break;
            }
            dense_only.insert(*v);
          }
        }
      }
      for (int64_t i = 0; i < layers; ++i) pattern[static_cast<size_t>(i)] = !dense_only.contains(i) && (i + 1) % step == 0;
      rule_field = "decoder_sparse_step, mlp_only_layers";
    } else if (deepseek) {
      const int64_t first = c.integer("first_k_dense_replace", 0, 65535).value_or(0);
      const int64_t freq = c.integer("moe_layer_freq", 1, 65535).value_or(1);
      for (int64_t i = 0; i < layers; ++i) pattern[static_cast<size_t>(i)] = i >= first && i % freq == 0;
      rule_field = "first_k_dense_replace, moe_layer_freq";
    }
    const import_detail::MoePattern p = import_detail::fit_moe_pattern(pattern);
    int dense_layers = 0;
    for (bool m : pattern) dense_layers += m ? 0 : 1;
    if (p.first_dense_layers != 0 || !rule_field.empty()) set("first_dense_layers", p.first_dense_layers, rule_field.c_str());
    if (p.moe_layer_freq != 1 || !rule_field.empty()) set("moe_layer_freq", p.moe_layer_freq, rule_field.c_str());
    if (!p.exact) {
      import_detail::add_note(f, rule_field, "", fmt::format("approximated: trainsim's MoE layers are those from first_dense_layers {} "
                                                             "on whose index is a multiple of moe_layer_freq {}, which does "
                                                             "not give this model's pattern of {} dense layers exactly",
                                                             p.first_dense_layers, p.moe_layer_freq, dense_layers));
    }
    if (family == Family::QWEN2_MOE || family == Family::QWEN3_MOE || deepseek) {
      const int64_t dense_ffn = c.has("intermediate_size") ? c.integer("intermediate_size", 1, MAX_SIZE).value_or(0) : 0;
      c.mark_read("intermediate_size");
      if (dense_layers > 0 && dense_ffn > 0) {
        set("dense_ffn_hidden", dense_ffn, "intermediate_size");
      } else if (dense_ffn > 0) {
        import_detail::add_note(f, c.field("intermediate_size"), std::to_string(dense_ffn), "not used: every layer is MoE");
      }
    }
    if (family == Family::QWEN2_MOE) {
      if (const std::optional<int64_t> s = c.integer("shared_expert_intermediate_size", 1, MAX_SIZE)) {
        set("shared_experts", 1, "shared_expert_intermediate_size");
        set("shared_expert_ffn_hidden", *s, "shared_expert_intermediate_size");
        import_detail::add_note(f, "shared_expert_gate", "", fmt::format("no counterpart: the shared expert's sigmoid gate ({} parameters) is not counted", layers * hidden));
      }
    }
    if (deepseek) {
      if (const std::optional<int64_t> s = c.integer("n_shared_experts", 0, MAX_COUNT); s && *s > 0) {
        set("shared_experts", *s, "n_shared_experts");
      }
      if (const std::optional<int64_t> mtp = c.integer("num_nextn_predict_layers", 0, 65535); mtp && *mtp > 0) {
        import_detail::add_note(f, c.field("num_nextn_predict_layers"), std::to_string(*mtp),
                                "no counterpart: multi-token prediction modules are not modelled (the published 671B of "
                                "DeepSeek-V3 leaves them out too)");
      }
      // Multi-head latent attention: approximated as grouped-query attention.
      const int64_t kv_lora = required("kv_lora_rank", MAX_SIZE);
      const int64_t rope = required("qk_rope_head_dim", MAX_SIZE);
      const int64_t nope = required("qk_nope_head_dim", MAX_SIZE);
      const int64_t v = required("v_head_dim", MAX_SIZE);
      std::optional<int64_t> q_lora;
      if (c.has("q_lora_rank")) q_lora = c.integer("q_lora_rank", 1, MAX_SIZE);
      c.mark_read("q_lora_rank");
      c.mark_read("num_key_value_heads");
      diag.throw_if_any();
      const int64_t approx_kv = std::gcd(heads, int64_t{8});
      set("kv_heads", approx_kv, "kv_lora_rank");
      set("head_dim", v, "v_head_dim");
      // Both counts, for the note: the scenario's model and the same with MLA's attention.
      core::Diagnostics ignore;
      const models::ModelSpec spec = models::ModelSpec::from_json(f.scenario["model"], path, "/model", ignore);
      const int64_t approx_attention = hidden * (heads * v + 2 * approx_kv * v) + heads * v * hidden;
      const int64_t exact_attention = mla_parameters(hidden, heads, q_lora, kv_lora, rope, nope, v);
      const int64_t approx_total = ignore.empty() ? spec.parameter_count(0) : 0;
      const int64_t exact_total = approx_total - layers * (approx_attention - exact_attention);
      import_detail::add_note(
          f, "kv_lora_rank, q_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim, num_key_value_heads",
          fmt::format("{}, {}, {}, {}, {}, {}", kv_lora, q_lora ? std::to_string(*q_lora) : "null", rope, nope, v, kv_heads),
          fmt::format("approximated: multi-head latent attention has no counterpart; modelled as grouped-query attention "
                      "with {} heads of v_head_dim {} and kv_heads {} ({:.2f}M attention parameters per layer against "
                      "MLA's {:.2f}M: {:.2f}B parameters in all against {:.2f}B with MLA; the attention scores use "
                      "head dim {} instead of {})",
                      heads, v, approx_kv, approx_attention / 1e6, exact_attention / 1e6, approx_total / 1e9,
                      exact_total / 1e9, v, nope + rope));
    }
  }
  diag.throw_if_any();
  c.unread_notes(f.notes, unread_reason);
  const std::string source = fmt::format("Hugging Face config.json (model_type {}): {}", *type, path);
  import_detail::set_value(f, "/model/source", source, "model_type");
  return f;
}

}  // namespace trainsim::plan
