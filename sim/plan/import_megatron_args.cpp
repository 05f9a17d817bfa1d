#include "sim/plan/import_megatron_args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <set>

#include "sim/plan/import_source.hpp"

namespace trainsim::plan {
namespace import_detail {
namespace {

// Megatron-LM store_true arguments the importer reads (they take no value).
const std::set<std::string, std::less<>>& flag_arguments() {
  static const std::set<std::string, std::less<>> names = {
      "swiglu", "squared-relu", "group-query-attention", "untie-embeddings-and-output-weights",
      "use-rotary-position-embeddings", "disable-bias-linear", "add-qkv-bias", "qk-layernorm", "multi-latent-attention",
      "bf16", "fp16", "fp8-param-gather", "use-flash-attn", "sequence-parallel", "recompute-activations",
      "checkpoint-activations", "use-distributed-optimizer", "overlap-grad-reduce", "overlap-param-gather",
      "tp-comm-overlap", "overlap-moe-expert-parallel-comm", "account-for-embedding-in-pipeline-split",
      "account-for-loss-in-pipeline-split", "use-torch-fsdp2", "use-megatron-fsdp", "cpu-offloading",
      "cpu-offloading-activations", "cpu-offloading-weights", "fine-grained-activation-offloading",
      // Common store_true arguments that are not read: they must not swallow the next token.
      "mock-data", "no-load-optim", "no-load-rng", "no-save-optim", "no-save-rng", "log-throughput", "log-progress",
      "moe-grouped-gemm", "moe-permute-fusion", "moe-router-fusion", "use-mcore-models", "no-masked-softmax-fusion",
      "no-bias-gelu-fusion", "no-bias-dropout-fusion", "no-gradient-accumulation-fusion", "no-async-tensor-model-parallel-allreduce",
      "use-checkpoint-args", "exit-on-missing-checkpoint", "manual-gc", "delay-wgrad-compute", "force-load-balancing",
      "cross-entropy-loss-fusion", "apply-layernorm-1p", "no-position-embedding", "async-save", "use-persistent-ckpt-worker",
      "ckpt-fully-parallel-load", "log-timers-to-tensorboard", "log-memory-to-tensorboard", "log-params-norm",
      "log-num-zeros-in-grad", "log-validation-ppl-to-tensorboard", "no-create-attention-mask-in-dataloader",
      "use-legacy-models", "moe-router-enable-expert-bias", "moe-router-pre-softmax", "moe-enable-deepep",
      "attention-softmax-in-fp32", "accumulate-allreduce-grads-in-fp32", "bf16-reduction", "check-for-nan-in-loss-and-grad",
      "no-rope-fusion", "use-rope-scaling", "moe-use-legacy-grouped-gemm", "moe-token-drop-policy", "enable-cuda-graph",
      "tp-comm-overlap-rs-dgrad", "tp-comm-bulk-dgrad", "tp-comm-bulk-wgrad", "use-te", "empty-unused-memory-level"};
  return names;
}

// Megatron-LM arguments that take a list of values (nargs '+' or '*').
bool list_argument(std::string_view name) {
  return name == "recompute-modules" || name == "rampup-batch-size" || name == "data-path" || name == "train-data-path" ||
         name == "valid-data-path" || name == "test-data-path" || name == "profile-ranks";
}

// Megatron-Bridge fields whose Megatron-LM argument is not the field name with '-' for '_';
// `inverted` fields are true where the argument is absent.
struct BridgeField {
  const char* field;
  const char* argument;
  bool inverted;
};
const BridgeField BRIDGE_RENAMES[] = {
    {"model.num_moe_experts", "num-experts", false},
    {"model.virtual_pipeline_model_parallel_size", "num-virtual-stages-per-pipeline-rank", false},
    {"model.share_embeddings_and_output_weights", "untie-embeddings-and-output-weights", true},
    {"model.add_bias_linear", "disable-bias-linear", true},
    {"model.gated_linear_unit", "swiglu", false},
    {"model.fp8", "fp8-format", false},
    {"model.fp8_param", "fp8-param-gather", false},
    {"model.layernorm_epsilon", "norm-epsilon", false},
    {"model.num_layers_in_first_pipeline_stage", "decoder-first-pipeline-num-layers", false},
    {"model.num_layers_in_last_pipeline_stage", "decoder-last-pipeline-num-layers", false},
    {"ddp.bucket_size", "ddp-bucket-size", false},
    {"dataset.sequence_length", "seq-length", false},
    {"dataset.seq_length", "seq-length", false},
    {"checkpoint.save_interval", "save-interval", false},
    {"mixed_precision", "mixed-precision-preset", false},
};
// Sections whose fields keep their Megatron-LM name (with '-' for '_').
const char* const BRIDGE_SECTIONS[] = {"model", "train", "ddp", "optimizer", "comm_overlap"};
// Megatron-LM arguments that the importer reads, as Megatron-Bridge fields of the sections above.
const std::set<std::string, std::less<>>& read_arguments() {
  static const std::set<std::string, std::less<>> names = {
      "num-layers", "hidden-size", "num-attention-heads", "ffn-hidden-size", "kv-channels", "num-query-groups",
      "vocab-size", "make-vocab-size-divisible-by", "position-embedding-type", "normalization", "num-experts",
      "moe-router-topk", "moe-ffn-hidden-size", "moe-shared-expert-intermediate-size", "moe-layer-freq", "q-lora-rank",
      "kv-lora-rank", "qk-head-dim", "qk-pos-emb-head-dim", "v-head-dim", "mtp-num-layers", "seq-length",
      "max-position-embeddings", "micro-batch-size", "global-batch-size", "train-iters", "train-samples", "fp8-format",
      "attention-backend", "transformer-impl", "tensor-model-parallel-size", "pipeline-model-parallel-size",
      "context-parallel-size", "expert-model-parallel-size", "expert-tensor-parallel-size",
      "num-layers-per-virtual-pipeline-stage", "num-virtual-stages-per-pipeline-rank", "decoder-first-pipeline-num-layers",
      "decoder-last-pipeline-num-layers", "recompute-granularity", "recompute-method", "recompute-num-layers",
      "recompute-modules", "ddp-bucket-size", "save-interval", "rampup-batch-size"};
  return names;
}

bool is_bridge_override(const std::string& token) {
  const size_t eq = token.find('=');
  if (eq == std::string::npos || eq == 0 || token.starts_with("-")) return false;
  size_t start = 0;
  while (start < eq && token[start] == '+') ++start;  // Hydra's +field= / ++field=
  for (size_t i = start; i < eq; ++i) {
    const char c = token[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  }
  return eq > start && std::isalpha(static_cast<unsigned char>(token[start]));
}

// "--name" -> "name"; Megatron-LM spells arguments with '-' (argparse also takes '_').
std::string canonical(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

void store(ParsedArgs& out, ImportFragment& f, const std::string& name, ArgValue v) {
  if (const auto it = out.values.find(name); it != out.values.end() && it->second.text != v.text) {
    add_note(f, v.written, it->second.text, fmt::format("given more than once: the last value, {}, is used (as argparse does)", v.text));
  }
  out.values[name] = std::move(v);
}

}  // namespace

ParsedArgs parse_megatron_tokens(const std::vector<std::string>& tokens, ImportFragment& f, core::Diagnostics& diag) {
  ParsedArgs out;
  size_t i = 0;
  // Environment assignments before the command (CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun ...).
  while (i < tokens.size() && !tokens[i].starts_with("-") && tokens[i].find('=') != std::string::npos &&
         tokens[i].find('.') == std::string::npos && tokens[i] != "mixed_precision" && !tokens[i].starts_with("mixed_precision=") &&
         std::isupper(static_cast<unsigned char>(tokens[i][0]))) {
    add_note(f, "environment", tokens[i], "no counterpart: an environment setting of the launch (not modelled)");
    ++i;
  }
  // The launcher, up to the training script.
  const auto script = std::find_if(tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens.end(),
                                   [](const std::string& t) { return t.ends_with(".py"); });
  if (script != tokens.end()) {
    const size_t end = static_cast<size_t>(script - tokens.begin());
    std::string launcher;
    for (size_t k = i; k <= end; ++k) {
      std::string t = tokens[k], value;
      if (const size_t eq = t.find('='); t.starts_with("--") && eq != std::string::npos) {
        value = t.substr(eq + 1);
        t = t.substr(0, eq);
      } else if (t.starts_with("--") && k + 1 < end && !tokens[k + 1].starts_with("-")) {
        value = tokens[k + 1];
      }
      const std::string name = canonical(t);
      if (name == "--nnodes" || name == "--nproc-per-node") {
        int n = 0;
        const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc() || p != value.data() + value.size() || n < 1) {
          diag.add(f.file, t, fmt::format("expected a positive integer, found \"{}\"{}", core::truncate_echo(value),
                                          value.find('$') != std::string::npos ? " (an unexpanded shell variable: give its value)" : ""));
        } else if (name == "--nnodes") {
          out.nodes = n;
        } else {
          out.gpus_per_node = n;
        }
        if (t.find('=') == std::string::npos && k + 1 < end && tokens[k + 1] == value) ++k;
        continue;
      }
      launcher += (launcher.empty() ? "" : " ") + tokens[k];
    }
    if (!launcher.empty()) add_note(f, "launcher", launcher, "no counterpart: the launch command (only --nnodes and --nproc-per-node are read)");
    i = end + 1;
  }
  for (; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (t.starts_with("--") && t.size() > 2) {
      out.megatron_lm = true;
      std::string name = t.substr(2), value;
      bool has_value = false;
      if (const size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      const std::string written = "--" + name;
      name = canonical(name);
      const bool flag = flag_arguments().contains(name);
      if (flag) {
        store(out, f, name, {has_value ? value : "true", written});
        continue;
      }
      if (!has_value) {
        std::vector<std::string> values;
        while (i + 1 < tokens.size() && !tokens[i + 1].starts_with("--") && !is_bridge_override(tokens[i + 1])) {
          values.push_back(tokens[++i]);
          if (!list_argument(name) && read_arguments().contains(name)) break;
        }
        if (values.empty()) {
          if (read_arguments().contains(name)) {
            diag.add(f.file, written, "expected a value after it, found none");
            continue;
          }
          value = "true";  // an unknown argument without a value: a flag
        } else {
          for (const std::string& v : values) value += (value.empty() ? "" : " ") + v;
        }
      }
      store(out, f, name, {value, written});
      continue;
    }
    if (is_bridge_override(t) || t.starts_with("mixed_precision=")) {
      const size_t eq = t.find('=');
      std::string field = t.substr(0, eq);
      field.erase(0, field.find_first_not_of('+'));
      std::string value = t.substr(eq + 1);
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
        value = value.substr(1, value.size() - 2);
      }
      if (value.empty() || value == "null" || value == "None") {
        add_note(f, field, value, "not given (null): left to the other sources");
        continue;
      }
      std::string name;
      bool inverted = false;
      for (const BridgeField& b : BRIDGE_RENAMES) {
        if (field == b.field) {
          name = b.argument;
          inverted = b.inverted;
        }
      }
      if (name.empty()) {
        const size_t dot = field.find('.');
        const std::string section = field.substr(0, dot);
        const std::string rest = dot == std::string::npos ? "" : canonical(field.substr(dot + 1));
        const bool mapped_section = std::find_if(std::begin(BRIDGE_SECTIONS), std::end(BRIDGE_SECTIONS),
                                                 [&](const char* s) { return section == s; }) != std::end(BRIDGE_SECTIONS);
        if (mapped_section && (read_arguments().contains(rest) || flag_arguments().contains(rest)) && rest.find('.') == std::string::npos) {
          name = rest;
        }
      }
      if (name.empty()) {
        store(out, f, field, {value, field});  // not read: a note at the end
        continue;
      }
      if (inverted) {
        if (value == "true" || value == "True") value = "false";
        else if (value == "false" || value == "False") value = "true";
      }
      if (name == "num-query-groups") store(out, f, "group-query-attention", {"true", field});
      if (name == "fp8-format" && (value == "true" || value == "True")) value = "hybrid";
      store(out, f, name, {value, field});
      continue;
    }
    add_note(f, "argument", t, "not an argument (no leading --, no section.field=value): ignored");
  }
  return out;
}

// Megatron-LM's --moe-layer-freq: an integer k (every k-th layer) or a Python list expression such
// as "[0]*3+[1]*58" or "([1]*3+[0]*1)*3" (1 = MoE).
std::optional<std::vector<bool>> moe_freq_pattern(const std::string& text, int64_t layers) {
  int64_t k = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
  if (ec == std::errc() && end == text.data() + text.size()) {
    if (k < 1) return std::nullopt;
    std::vector<bool> p(static_cast<size_t>(layers));
    for (int64_t i = 0; i < layers; ++i) p[static_cast<size_t>(i)] = i % k == 0;
    return p;
  }
  // A tiny evaluator for sums of lists and products by integers, with parentheses.
  size_t at = 0;
  std::function<std::optional<std::vector<bool>>()> sum;
  const auto skip = [&] {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  };
  const auto number = [&]() -> std::optional<int64_t> {
    skip();
    size_t start = at;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) ++at;
    if (start == at || at - start > 6) return std::nullopt;
    return std::stoll(text.substr(start, at - start));
  };
  const auto atom = [&]() -> std::optional<std::vector<bool>> {
    skip();
    if (at >= text.size()) return std::nullopt;
    if (text[at] == '(') {
      ++at;
      auto inner = sum();
      skip();
      if (!inner || at >= text.size() || text[at] != ')') return std::nullopt;
      ++at;
      return inner;
    }
    if (text[at] != '[') return std::nullopt;
    ++at;
    std::vector<bool> list;
    while (true) {
      const std::optional<int64_t> v = number();
      if (!v || *v > 1) return std::nullopt;
      list.push_back(*v == 1);
      skip();
      if (at < text.size() && text[at] == ',') {
        ++at;
        continue;
      }
      if (at < text.size() && text[at] == ']') {
        ++at;
        return list;
      }
      return std::nullopt;
    }
  };
  const auto product = [&]() -> std::optional<std::vector<bool>> {
    auto base = atom();
    skip();
    while (base && at < text.size() && text[at] == '*') {
      ++at;
      const std::optional<int64_t> n = number();
      if (!n || base->size() * static_cast<size_t>(*n) > (size_t{1} << 16)) return std::nullopt;
      std::vector<bool> repeated;
      for (int64_t i = 0; i < *n; ++i) repeated.insert(repeated.end(), base->begin(), base->end());
      base = std::move(repeated);
      skip();
    }
    return base;
  };
  sum = [&]() -> std::optional<std::vector<bool>> {
    auto total = product();
    skip();
    while (total && at < text.size() && text[at] == '+') {
      ++at;
      auto more = product();
      if (!more) return std::nullopt;
      total->insert(total->end(), more->begin(), more->end());
      skip();
    }
    return total;
  };
  auto p = sum();
  skip();
  if (!p || at != text.size() || static_cast<int64_t>(p->size()) != layers) return std::nullopt;
  return p;
}

std::string megatron_unused_reason(const std::string& name) {
  static const char* const NO_EFFECT[] = {
      "lr", "min-lr", "weight-decay", "clip-grad", "adam-", "sgd-", "init-method", "seed", "log", "tensorboard", "wandb",
      "save", "load", "data-", "split", "tokenizer", "vocab-file", "merge-file", "eval-", "num-workers", "hidden-dropout",
      "attention-dropout", "norm-epsilon", "rotary-", "distributed-", "exit-", "no-load", "no-save", "mock-data", "ckpt",
      "dist-ckpt", "timing-", "profile", "use-checkpoint", "finetune", "pretrained-checkpoint", "train-data", "valid-data",
      "test-data", "dataloader", "reset-", "eod-mask", "manual-gc", "override-opt", "start-weight-decay", "end-weight-decay",
      "loss-scale", "initial-loss-scale", "min-loss-scale", "hysteresis", "use-mcore-models", "moe-aux-loss-coeff",
      "moe-router-load-balancing-type", "moe-z-loss", "moe-router-dtype", "moe-router-score-function",
      "moe-router-topk-scaling-factor", "moe-router-bias-update-rate", "moe-router-enable-expert-bias",
      "moe-router-num-groups", "moe-router-group-topk", "moe-router-pre-softmax", "force-load-balancing", "optimizer.",
      "scheduler.", "logger.", "checkpoint.", "rng.", "tokenizer.", "dataset.", "profiling.", "use-rope-scaling",
      "check-for-nan", "rerun-", "straggler", "inprocess", "mixed-precision.", "nccl-"};
  for (const char* p : NO_EFFECT) {
    if (name.starts_with(p)) return "no counterpart (hyperparameter, initialization, data or I/O: no effect on an iteration's time or memory)";
  }
  static const char* const KERNELS[] = {"moe-grouped-gemm", "moe-permute-fusion", "moe-router-fusion", "moe-token-dispatcher-type",
                                         "moe-enable-deepep", "moe-flex-dispatcher", "no-masked-softmax-fusion",
                                         "no-bias-gelu-fusion", "no-bias-dropout-fusion", "no-gradient-accumulation-fusion",
                                         "cross-entropy", "enable-cuda-graph", "cuda-graph", "delay-wgrad-compute",
                                         "no-rope-fusion", "apply-layernorm-1p", "attention-softmax-in-fp32",
                                         "accumulate-allreduce-grads-in-fp32", "bf16-reduction", "use-te", "tp-comm-"};
  for (const char* p : KERNELS) {
    if (name.starts_with(p)) {
      return "not modelled: kernel and fusion choices are in the GPU's profile (the built-in ones were fitted on Megatron "
             "with Transformer Engine's fused kernels)";
    }
  }
  return "no counterpart in trainsim (not modelled)";
}

}  // namespace import_detail

std::vector<std::string> split_arguments(const std::string& text, const std::string& file) {
  std::vector<std::string> out;
  std::string cur;
  bool in_token = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\') {
      if (i + 1 < text.size() && text[i + 1] == '\n') {
        ++i;  // a line continuation
        continue;
      }
      if (i + 1 < text.size() && text[i + 1] == '\r' && i + 2 < text.size() && text[i + 2] == '\n') {
        i += 2;
        continue;
      }
      if (i + 1 < text.size()) {
        cur += text[++i];
        in_token = true;
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      const size_t close = text.find(c, i + 1);
      if (close == std::string::npos) {
        size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
        throw core::InputError(file, "", fmt::format("line {}: the quote {} opened here is never closed", line, c));
      }
      cur += text.substr(i + 1, close - i - 1);
      in_token = true;
      i = close;
      continue;
    }
    if (c == '#' && !in_token) {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_token) out.push_back(std::move(cur));
      cur.clear();
      in_token = false;
      continue;
    }
    cur += c;
    in_token = true;
  }
  if (in_token) out.push_back(std::move(cur));
  return out;
}

}  // namespace trainsim::plan
