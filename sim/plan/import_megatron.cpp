// Megatron-LM arguments and Megatron-Bridge overrides -> a scenario fragment (docs/import.md,
// "Megatron-LM / Megatron-Bridge"). Argument names and defaults are those of Megatron-LM's
// megatron/training/arguments.py; Megatron-Bridge's ConfigContainer fields map onto them as in
// Megatron-Bridge's docs/megatron-lm-to-megatron-bridge.md.

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <numeric>

#include "sim/core/text_file.hpp"
#include "sim/plan/config_import.hpp"
#include "sim/plan/import_megatron_args.hpp"
#include "sim/plan/import_source.hpp"

namespace trainsim::plan {

using import_detail::add_note;
using import_detail::set_value;

namespace {

constexpr int64_t MAX_SIZE = int64_t{1} << 40;

// The parsed list: canonical Megatron-LM names (without "--") to their values.
class Args {
 public:
  Args(ImportFragment& f, std::map<std::string, import_detail::ArgValue> values, core::Diagnostics& diag)
      : f_(f), values_(std::move(values)), diag_(diag) {}

  bool has(const std::string& name) const { return values_.contains(name); }
  const std::string& written(const std::string& name) const { return values_.at(name).written; }
  std::string field(const std::string& name) const { return has(name) ? written(name) : "--" + name; }
  void problem(const std::string& name, std::string message) { diag_.add(f_.file, field(name), std::move(message)); }
  void used(const std::string& name) { used_.insert(name); }

  // A store_true flag (Megatron-LM: present; Megatron-Bridge: =true/=false).
  bool flag(const std::string& name) {
    used(name);
    if (!has(name)) return false;
    const std::string& v = values_.at(name).text;
    if (v == "true" || v == "True" || v == "1") return true;
    if (v == "false" || v == "False" || v == "0") return false;
    problem(name, fmt::format("expected true or false, found \"{}\"", core::truncate_echo(v)));
    return false;
  }
  std::optional<int64_t> integer(const std::string& name, int64_t min = 1, int64_t max = MAX_SIZE) {
    used(name);
    if (!has(name)) return std::nullopt;
    const std::string& v = values_.at(name).text;
    int64_t out = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || end != v.data() + v.size() || out < min || out > max) {
      problem(name, fmt::format("expected {}, found \"{}\"{}",
                                max == MAX_SIZE ? fmt::format("an integer >= {}", min) : fmt::format("an integer in [{}, {}]", min, max),
                                core::truncate_echo(v),
                                v.find('$') != std::string::npos ? " (an unexpanded shell variable: give its value)" : ""));
      return std::nullopt;
    }
    return out;
  }
  std::optional<std::string> text(const std::string& name) {
    used(name);
    if (!has(name)) return std::nullopt;
    return values_.at(name).text;
  }
  std::optional<std::string> choice(const std::string& name, const std::vector<std::string>& allowed) {
    const std::optional<std::string> v = text(name);
    if (!v) return std::nullopt;
    for (const std::string& a : allowed) {
      if (a == *v) return v;
    }
    std::string list;
    for (size_t i = 0; i < allowed.size(); ++i) list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
    const std::string hint = core::closest_match(*v, allowed);
    problem(name, fmt::format("expected {}, found \"{}\"{}", list, core::truncate_echo(*v),
                              hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint)));
    return std::nullopt;
  }

  void set(const std::string& pointer, core::Json value, const std::string& name) {
    set_value(f_, pointer, std::move(value), field(name));
  }
  // A value several arguments decide together: the origin names those given.
  void set(const std::string& pointer, core::Json value, std::initializer_list<const char*> names) {
    std::string fields;
    for (const char* n : names) {
      if (has(n) || fields.empty()) fields += (fields.empty() ? "" : ", ") + field(n);
    }
    set_value(f_, pointer, std::move(value), fields);
  }
  // A store_true flag's value where it is given; false, Megatron-LM's default, where it is absent
  // from a Megatron-LM command line (`lm`).
  void boolean(const std::string& pointer, const std::string& name, bool lm) {
    const bool v = flag(name);
    if (has(name)) set(pointer, v, name);
    else if (lm) set_default(pointer, false, name);
  }
  // A value Megatron-LM implies when the argument is absent.
  void set_default(const std::string& pointer, core::Json value, const std::string& name) {
    set_value(f_, pointer, std::move(value), fmt::format("--{} (absent: Megatron-LM's default)", name));
  }
  void note(const std::string& name, std::string message) {
    used(name);
    add_note(f_, field(name), has(name) ? values_.at(name).text : "", std::move(message));
  }

  // Notes for every argument not used: hyperparameters and I/O have no effect on an iteration.
  void unused_notes() {
    for (const auto& [name, v] : values_) {
      if (used_.contains(name)) continue;
      add_note(f_, v.written, v.text, import_detail::megatron_unused_reason(name));
    }
  }

 private:
  ImportFragment& f_;
  std::map<std::string, import_detail::ArgValue> values_;
  core::Diagnostics& diag_;
  std::set<std::string> used_;
};

}  // namespace

ImportFragment read_megatron_file(const std::string& path) {
  const std::string text = core::read_text_file(path, core::MAX_SCENARIO_FILE_BYTES, "argument list");
  return read_megatron_args(split_arguments(text, path), path);
}

ImportFragment read_megatron_args(const std::vector<std::string>& tokens, const std::string& origin) {
  ImportFragment f;
  f.format = ConfigFormat::MEGATRON;
  f.file = origin;
  core::Diagnostics diag;
  import_detail::ParsedArgs parsed = import_detail::parse_megatron_tokens(tokens, f, diag);
  diag.throw_if_any();
  Args a(f, std::move(parsed.values), diag);
  const bool lm = parsed.megatron_lm;  // absent arguments take Megatron-LM's defaults
  if (!lm) {
    add_note(f, "Megatron-Bridge overrides", "",
             "only the fields given are imported: what the recipe sets in Python comes from --base, the other "
             "sources or trainsim's defaults");
  }
  f.deferred.nodes = parsed.nodes;
  f.deferred.gpus_per_node = parsed.gpus_per_node;
  if (parsed.nodes && parsed.gpus_per_node) f.deferred.world_field = "torchrun --nnodes x --nproc-per-node";

  // The model.
  const std::optional<int64_t> layers = a.integer("num-layers", 1, 65535);
  const std::optional<int64_t> hidden = a.integer("hidden-size");
  const std::optional<int64_t> heads = a.integer("num-attention-heads", 1, int64_t{1} << 20);
  const bool describes_model = lm && (layers || hidden || heads);
  if (layers) a.set("/model/layers", *layers, "num-layers");
  if (hidden) a.set("/model/hidden", *hidden, "hidden-size");
  if (heads) a.set("/model/heads", *heads, "num-attention-heads");
  if (describes_model) a.set("/model/family", "transformer", "num-layers");
  const bool swiglu = a.flag("swiglu");
  if (a.flag("squared-relu")) a.note("squared-relu", "approximated as gelu: a 2-matrix MLP with the same shapes and FLOPs");
  if (describes_model || a.has("swiglu")) {
    a.set("/model/activation", swiglu ? "swiglu" : "gelu", {"swiglu", "normalization", "disable-bias-linear"});
  }
  if (const auto v = a.integer("vocab-size")) a.set("/model/vocab", *v, {"vocab-size", "make-vocab-size-divisible-by"});
  if (lm) f.deferred.vocab_multiple = a.integer("make-vocab-size-divisible-by").value_or(128);
  else if (const auto d = a.integer("make-vocab-size-divisible-by")) f.deferred.vocab_multiple = *d;
  const bool gqa = a.flag("group-query-attention") || (!lm && a.has("num-query-groups"));
  if (const auto g = a.integer("num-query-groups", 1, int64_t{1} << 20)) {
    if (gqa) a.set("/model/kv_heads", *g, {"num-query-groups", "group-query-attention"});
    else a.note("num-query-groups", "ignored, as Megatron-LM ignores it without --group-query-attention (the model runs multi-head attention)");
  }
  if (describes_model && !gqa && heads) a.set_default("/model/kv_heads", *heads, "group-query-attention");
  if (const auto kv = a.integer("kv-channels")) a.set("/model/head_dim", *kv, "kv-channels");
  const std::optional<int64_t> ffn = a.integer("ffn-hidden-size");
  if (ffn) {
    a.set("/model/ffn_hidden", *ffn, "ffn-hidden-size");
  } else if (describes_model && hidden) {
    // arguments.py: 4 x hidden, or for SwiGLU two thirds of it rounded down to a multiple of 64.
    const int64_t d = swiglu ? (4 * *hidden * 2 / 3) / 64 * 64 : 4 * *hidden;
    a.set_default("/model/ffn_hidden", d, "ffn-hidden-size");
  }
  const bool untie = a.flag("untie-embeddings-and-output-weights");
  if (describes_model || a.has("untie-embeddings-and-output-weights")) a.set("/model/tied_embeddings", !untie, "untie-embeddings-and-output-weights");
  std::optional<std::string> pos = a.choice("position-embedding-type", {"learned_absolute", "rope", "mrope", "yarn", "relative", "none"});
  if (a.flag("use-rotary-position-embeddings")) pos = "rope";
  if (pos || describes_model) {
    const std::string p = pos.value_or("learned_absolute");
    a.set("/model/learned_positions", p == "learned_absolute", "position-embedding-type");
    if (p == "relative") a.note("position-embedding-type", "approximated: relative position biases have no counterpart (no parameters counted)");
  }
  const std::optional<std::string> norm = a.choice("normalization", {"LayerNorm", "RMSNorm"});
  const std::string norm_used = norm.value_or(lm ? "LayerNorm" : (swiglu ? "RMSNorm" : "LayerNorm"));
  if (describes_model || norm) {
    if ((norm_used == "RMSNorm") != swiglu) {
      a.note("normalization", fmt::format("approximated: trainsim's {} block uses {}, with its parameters",
                                          swiglu ? "SwiGLU" : "GELU", swiglu ? "RMSNorm" : "LayerNorm"));
    }
  }
  const bool no_bias = a.flag("disable-bias-linear");
  if (describes_model) {
    if (swiglu && !no_bias) {
      add_note(f, "--disable-bias-linear", "",
               "absent: Megatron-LM adds biases to every linear layer, which trainsim's SwiGLU block does not have (not counted)");
    } else if (!swiglu && no_bias) {
      a.note("disable-bias-linear", "no counterpart: trainsim's GELU block has biases on every linear layer (counted)");
    }
  }
  if (a.flag("add-qkv-bias") && swiglu) a.note("add-qkv-bias", "no counterpart: trainsim's SwiGLU block has no biases (not counted)");
  if (a.flag("qk-layernorm")) a.note("qk-layernorm", "no counterpart: QK norms are not counted");

  // Mixture of experts.
  const std::optional<int64_t> experts = a.integer("num-experts", 1, int64_t{1} << 20);
  if (experts) {
    a.set("/model/experts", *experts, "num-experts");
    const std::optional<int64_t> top_k = a.integer("moe-router-topk", 1, int64_t{1} << 20);
    if (top_k) a.set("/model/top_k", *top_k, "moe-router-topk");
    else if (lm) a.set_default("/model/top_k", 2, "moe-router-topk");
    const std::optional<int64_t> expert_ffn = a.integer("moe-ffn-hidden-size");
    if (expert_ffn) {
      a.set("/model/ffn_hidden", *expert_ffn, "moe-ffn-hidden-size");
      if (ffn && *ffn != *expert_ffn) a.set("/model/dense_ffn_hidden", *ffn, "ffn-hidden-size");
    }
    if (const auto shared = a.integer("moe-shared-expert-intermediate-size")) {
      a.set("/model/shared_experts", 1, "moe-shared-expert-intermediate-size");
      a.set("/model/shared_expert_ffn_hidden", *shared, "moe-shared-expert-intermediate-size");
    }
    if (const std::optional<std::string> freq = a.text("moe-layer-freq")) {
      const std::optional<std::vector<bool>> p = layers ? import_detail::moe_freq_pattern(*freq, *layers) : std::nullopt;
      if (!layers) {
        a.problem("moe-layer-freq", "needs --num-layers to place the MoE layers");
      } else if (!p) {
        a.problem("moe-layer-freq", fmt::format("expected an integer >= 1 or a list of {} zeros and ones such as "
                                                "\"[0]*3+[1]*{}\", found \"{}\"", *layers, *layers - 3, core::truncate_echo(*freq)));
      } else {
        const import_detail::MoePattern m = import_detail::fit_moe_pattern(*p);
        if (m.first_dense_layers != 0) a.set("/model/first_dense_layers", m.first_dense_layers, "moe-layer-freq");
        if (m.moe_layer_freq != 1) a.set("/model/moe_layer_freq", m.moe_layer_freq, "moe-layer-freq");
        if (!m.exact) {
          a.note("moe-layer-freq", fmt::format("approximated: trainsim's MoE layers are those from first_dense_layers {} on "
                                               "whose index is a multiple of moe_layer_freq {}", m.first_dense_layers, m.moe_layer_freq));
        }
        const bool any_dense = std::find(p->begin(), p->end(), false) != p->end();
        if (any_dense && ffn && expert_ffn && *ffn == *expert_ffn) a.set("/model/dense_ffn_hidden", *ffn, "ffn-hidden-size");
      }
    }
  }
  if (a.flag("multi-latent-attention")) {
    const int64_t v = a.integer("v-head-dim").value_or(128);
    const int64_t h = heads.value_or(0);
    const int64_t kv = h > 0 ? std::gcd(h, int64_t{8}) : 8;
    a.set("/model/head_dim", v, "v-head-dim");
    a.set("/model/kv_heads", kv, "multi-latent-attention");
    for (const char* k : {"q-lora-rank", "kv-lora-rank", "qk-head-dim", "qk-pos-emb-head-dim"}) a.used(k);
    a.note("multi-latent-attention", fmt::format("approximated: multi-head latent attention has no counterpart; modelled as "
                                                 "grouped-query attention with heads of v-head-dim {} and kv_heads {} "
                                                 "(docs/import.md)", v, kv));
  }
  if (const auto mtp = a.integer("mtp-num-layers", 0)) {
    if (*mtp > 0) a.note("mtp-num-layers", "no counterpart: multi-token prediction layers are not modelled");
  }

  // Training.
  if (const auto s = a.integer("seq-length", 1, int64_t{1} << 24)) a.set("/training/sequence_length", *s, "seq-length");
  if (const auto m = a.integer("max-position-embeddings")) {
    if (!(a.has("seq-length") && a.text("seq-length") == std::to_string(*m))) {
      a.note("max-position-embeddings", "no counterpart: trainsim sizes a learned position table by training.sequence_length");
    } else {
      f.matched.push_back(a.field("max-position-embeddings"));
    }
  }
  const std::optional<int64_t> micro = a.integer("micro-batch-size", 1, int64_t{1} << 20);
  if (micro) a.set("/training/micro_batch", *micro, "micro-batch-size");
  if (const auto g = a.integer("global-batch-size", 1, int64_t{1} << 30)) {
    a.set("/training/global_batch", *g, "global-batch-size");
  } else if (lm && micro) {
    f.deferred.local_batch = *micro;  // arguments.py: micro-batch-size x data-parallel size
    f.deferred.local_batch_field = "--global-batch-size";
  }
  if (const auto iters = a.integer("train-iters")) {
    f.deferred.steps = *iters;
    f.deferred.steps_field = a.field("train-iters");
  } else if (const auto samples = a.integer("train-samples")) {
    f.deferred.samples = *samples;
    f.deferred.steps_field = a.field("train-samples");
  }
  const std::optional<std::string> fp8 = a.choice("fp8-format", {"e4m3", "hybrid"});
  const bool bf16 = a.flag("bf16"), fp16 = a.flag("fp16");
  if (const std::optional<std::string> mp = a.text("mixed-precision-preset")) {
    // Megatron-Bridge's mixed_precision recipes by name.
    if (mp->find("fp8") != std::string::npos || mp->find("mxfp8") != std::string::npos) a.set("/training/precision", "fp8", "mixed-precision-preset");
    else if (mp->find("bf16") != std::string::npos) a.set("/training/precision", "bf16", "mixed-precision-preset");
    else if (mp->find("fp16") != std::string::npos) a.set("/training/precision", "fp16", "mixed-precision-preset");
    else if (mp->find("32") != std::string::npos) a.set("/training/precision", "fp32", "mixed-precision-preset");
    else a.problem("mixed-precision-preset", fmt::format("expected a preset naming bf16, fp16, fp8 or fp32, found \"{}\"", core::truncate_echo(*mp)));
  } else if (fp8) {
    a.set("/training/precision", "fp8", "fp8-format");
    if (*fp8 == "e4m3") a.note("fp8-format", "approximated: trainsim's fp8 is Transformer Engine's hybrid recipe (E4M3 forward, E5M2 gradients)");
  } else if (bf16) {
    a.set("/training/precision", "bf16", "bf16");
  } else if (fp16) {
    a.set("/training/precision", "fp16", "fp16");
  } else if (lm) {
    a.set_default("/training/precision", "fp32", "bf16");
  }
  if (a.flag("fp8-param-gather")) a.set("/training/fp8_params", true, "fp8-param-gather");
  const std::optional<std::string> backend = a.choice("attention-backend", {"auto", "flash", "fused", "unfused", "local"});
  const std::optional<std::string> impl = a.choice("transformer-impl", {"transformer_engine", "local", "inference_optimized"});
  const bool flash_flag = a.flag("use-flash-attn");
  if (flash_flag || (backend && (*backend == "flash" || *backend == "fused"))) {
    a.set("/training/attention", "flash", flash_flag ? "use-flash-attn" : "attention-backend");
    if (backend && *backend == "fused") a.note("attention-backend", "counted as flash: cuDNN's fused attention keeps the scores on chip as FlashAttention does");
  } else if (backend && (*backend == "unfused" || *backend == "local")) {
    a.set("/training/attention", "unfused", "attention-backend");
  } else if (impl && *impl == "local") {
    a.set("/training/attention", "unfused", "transformer-impl");
  } else if (lm) {
    a.set_default("/training/attention", "flash", "attention-backend");
    add_note(f, "--attention-backend", backend.value_or(""),
             "auto (Megatron-core's default with Transformer Engine) picks a flash or fused kernel: imported as flash; "
             "give --attention-backend unfused for a run with Megatron's unfused softmax");
  }
  // Implied, so that a DeepSpeed config beside Megatron-DeepSpeed's arguments names the stack.
  if (lm || a.has("use-distributed-optimizer")) a.set_default("/training/stack", "megatron", "use-distributed-optimizer");

  // Parallelism.
  const auto degree = [&](const char* name, const char* key) -> int64_t {
    const std::optional<int64_t> v = a.integer(name, 1, int64_t{1} << 24);
    if (v) a.set(std::string("/parallelism/") + key, *v, name);
    else if (lm) a.set_default(std::string("/parallelism/") + key, 1, name);
    return v.value_or(1);
  };
  const int64_t tp = degree("tensor-model-parallel-size", "tensor");
  const int64_t pp = degree("pipeline-model-parallel-size", "pipeline");
  degree("context-parallel-size", "context");
  const int64_t ep = degree("expert-model-parallel-size", "expert");
  const std::optional<int64_t> etp = a.integer("expert-tensor-parallel-size", 1, int64_t{1} << 24);
  if (ep > 1) {
    // Megatron-core lays the experts out by parallel folding (docs/scenario.md); the expert tensor
    // size defaults to the tensor size.
    if (etp) a.set("/parallelism/expert_tensor", *etp, "expert-tensor-parallel-size");
    else a.set_default("/parallelism/expert_tensor", tp, "expert-tensor-parallel-size");
  } else if (etp && *etp != tp) {
    a.note("expert-tensor-parallel-size", "no effect without expert parallelism (--expert-model-parallel-size 1): the experts are split over the tensor group");
  }
  if (lm || a.has("tensor-model-parallel-size") || a.has("pipeline-model-parallel-size")) {
    f.deferred.data_fills_world = true;
    f.deferred.data_field = "the data-parallel size (Megatron: world size / (tensor x pipeline x context))";
  }
  a.boolean("/parallelism/sequence_parallel", "sequence-parallel", lm);
  std::optional<int64_t> vpp = a.integer("num-virtual-stages-per-pipeline-rank");
  if (const auto per_stage = a.integer("num-layers-per-virtual-pipeline-stage")) {
    if (!layers || *layers % (pp * *per_stage) != 0) {
      a.problem("num-layers-per-virtual-pipeline-stage",
                layers ? fmt::format("{} layers per virtual stage x pipeline {} must divide --num-layers {}", *per_stage, pp, *layers)
                       : std::string("needs --num-layers to count the virtual stages"));
    } else {
      vpp = *layers / (pp * *per_stage);
    }
  }
  if (vpp && *vpp > 1) {
    a.set("/parallelism/pipeline_schedule", "interleaved-1f1b", a.has("num-virtual-stages-per-pipeline-rank") ? "num-virtual-stages-per-pipeline-rank" : "num-layers-per-virtual-pipeline-stage");
    a.set("/parallelism/virtual_stages", *vpp, a.has("num-virtual-stages-per-pipeline-rank") ? "num-virtual-stages-per-pipeline-rank" : "num-layers-per-virtual-pipeline-stage");
  } else if (lm) {
    a.set_default("/parallelism/pipeline_schedule", "1f1b", "num-virtual-stages-per-pipeline-rank");
  }
  const std::optional<int64_t> first = a.integer("decoder-first-pipeline-num-layers", 0);
  const std::optional<int64_t> last = a.integer("decoder-last-pipeline-num-layers", 0);
  if (first || last) {
    const char* name = first ? "decoder-first-pipeline-num-layers" : "decoder-last-pipeline-num-layers";
    const int64_t chunks = pp - (first ? 1 : 0) - (last ? 1 : 0);
    const int64_t rest = layers.value_or(0) - first.value_or(0) - last.value_or(0);
    if (!layers || (vpp && *vpp > 1) || pp < 2 || chunks < 0 || rest < 0 || (chunks == 0 ? rest != 0 : rest % chunks != 0)) {
      a.problem(name, layers ? fmt::format("the first and last stages' layers must leave --num-layers {} minus them divisible by "
                                           "the {} other stages of --pipeline-model-parallel-size {} (no virtual stages)",
                                           *layers, std::max<int64_t>(chunks, 0), pp)
                             : std::string("needs --num-layers"));
    } else {
      std::vector<int64_t> split;
      for (int64_t s = 0; s < pp; ++s) {
        split.push_back(s == 0 && first ? *first : s == pp - 1 && last ? *last : rest / std::max<int64_t>(chunks, 1));
      }
      a.set("/parallelism/stage_layers", split, name);
    }
  }
  if (a.flag("account-for-embedding-in-pipeline-split") || a.flag("account-for-loss-in-pipeline-split")) {
    add_note(f, "--account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split", "true",
             "no counterpart: set parallelism.stage_layers to balance the stages by hand");
  }
  std::optional<std::string> recompute = a.choice("recompute-granularity", {"full", "selective"});
  if (a.flag("recompute-activations")) recompute = "selective";
  if (a.flag("checkpoint-activations")) recompute = "full";
  const std::optional<std::string> method = a.choice("recompute-method", {"uniform", "block"});
  const std::optional<int64_t> recompute_layers = a.integer("recompute-num-layers");
  if (recompute) {
    a.set("/parallelism/recompute", *recompute, "recompute-granularity");
    if (*recompute == "full" && method == "block" && layers && recompute_layers && *recompute_layers * pp * vpp.value_or(1) < *layers) {
      a.note("recompute-method", fmt::format("approximated as full: trainsim recomputes every layer, Megatron only the first {} "
                                             "of each stage's chunk (--recompute-num-layers)", *recompute_layers));
    } else if (*recompute == "full" && method == "uniform" && recompute_layers && *recompute_layers > 1) {
      a.note("recompute-num-layers", "approximated: Megatron recomputes groups of layers from one stored input, trainsim each layer from its own");
    }
  } else if (lm) {
    a.set_default("/parallelism/recompute", "none", "recompute-granularity");
  }
  if (const auto modules = a.text("recompute-modules")) {
    if (*modules != "core_attn") a.note("recompute-modules", "approximated: trainsim's selective recompute is the attention core (Korthikanti et al. 2022)");
  }
  const bool dist_opt = a.flag("use-distributed-optimizer");
  if (dist_opt) a.set("/parallelism/zero_stage", 1, "use-distributed-optimizer");
  else if (lm) a.set_default("/parallelism/zero_stage", 0, "use-distributed-optimizer");
  a.boolean("/parallelism/overlap_grad_reduce", "overlap-grad-reduce", lm);
  const bool overlap_param = a.flag("overlap-param-gather");
  if (dist_opt) {
    a.boolean("/parallelism/overlap_param_gather", "overlap-param-gather", lm);
  } else if (overlap_param) {
    a.note("overlap-param-gather", "no effect without --use-distributed-optimizer (Megatron-LM requires it)");
  }
  if (const auto bucket = a.integer("ddp-bucket-size")) {
    const int64_t bytes = 4 * *bucket;  // fp32 main gradients
    a.set("/parallelism/bucket_size", bytes % 1000000 == 0 ? fmt::format("{} MB", bytes / 1000000) : fmt::format("{} B", bytes), "ddp-bucket-size");
  } else if (lm) {
    add_note(f, "--ddp-bucket-size", "", "absent: Megatron buckets max(40M, 1M x data-parallel size) gradients; not imported "
                                         "(parallelism.bucket_size is another source's, else trainsim's default 40 MB)");
  }
  a.boolean("/parallelism/tp_comm_overlap", "tp-comm-overlap", lm);
  const bool a2a = a.flag("overlap-moe-expert-parallel-comm");
  if (a.has("overlap-moe-expert-parallel-comm")) {
    a.set("/parallelism/moe_a2a_overlap", a2a, "overlap-moe-expert-parallel-comm");
  } else if (lm && experts && *experts > 1 && ep > 1) {
    a.set_default("/parallelism/moe_a2a_overlap", false, "overlap-moe-expert-parallel-comm");
  }
  for (const char* fsdp : {"use-torch-fsdp2", "use-megatron-fsdp"}) {
    if (a.flag(fsdp)) a.note(fsdp, "no counterpart: trainsim's megatron stack shards with the distributed optimizer only (ZeRO-1); use a torchtitan or fsdp scenario for FSDP");
  }
  for (const char* offload : {"cpu-offloading", "cpu-offloading-activations", "cpu-offloading-weights", "fine-grained-activation-offloading"}) {
    if (a.flag(offload)) a.note(offload, "no counterpart: set optimizations.offload.activations by hand (docs/scenario.md)");
  }
  if (a.has("save-interval")) a.note("save-interval", "no counterpart here: checkpoints need training.checkpoint and cluster.storage (docs/resilience.md)");
  if (a.has("rampup-batch-size")) a.note("rampup-batch-size", "no counterpart: the iteration predicted is at the full --global-batch-size");

  a.unused_notes();
  diag.throw_if_any();
  return f;
}

}  // namespace trainsim::plan
