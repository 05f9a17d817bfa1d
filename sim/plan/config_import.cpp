#include "sim/plan/config_import.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "models/model_spec.hpp"
#include "sim/plan/import_source.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {

std::string to_string(ConfigFormat f) {
  switch (f) {
    case ConfigFormat::MEGATRON: return "megatron";
    case ConfigFormat::TORCHTITAN: return "torchtitan";
    case ConfigFormat::DEEPSPEED: return "deepspeed";
    case ConfigFormat::HUGGING_FACE: return "hf";
  }
  return "";
}

std::optional<ConfigFormat> config_format_named(std::string_view name) {
  for (ConfigFormat f : {ConfigFormat::MEGATRON, ConfigFormat::TORCHTITAN, ConfigFormat::DEEPSPEED, ConfigFormat::HUGGING_FACE}) {
    if (to_string(f) == name) return f;
  }
  return std::nullopt;
}

std::string describe(ConfigFormat f) {
  switch (f) {
    case ConfigFormat::MEGATRON: return "Megatron-LM arguments";
    case ConfigFormat::TORCHTITAN: return "torchtitan TOML";
    case ConfigFormat::DEEPSPEED: return "DeepSpeed config";
    case ConfigFormat::HUGGING_FACE: return "Hugging Face config.json";
  }
  return "";
}

std::string ImportNote::to_string() const {
  std::string out;
  if (!file.empty()) out += file + ": ";
  out += field;
  if (!value.empty()) out += " = " + value;
  return out + ": " + message;
}

namespace {

constexpr const char* IMPORTED = "imported scenario";

// A value of the scenario being built and the source field it came from.
struct Origin {
  core::Json value;
  std::string where;   // "config.json: /hidden_size"
  bool implied;        // a default the source implies, not a value written in it
};

class Merge {
 public:
  explicit Merge(std::vector<ImportNote>& notes) : notes_(notes) {}

  // Records `value` at `pointer`. Two written values that differ are a problem naming both; a
  // written value replaces an implied one; of two implied values the first is kept.
  void put(const std::string& pointer, const core::Json& value, const std::string& file, const std::string& field) {
    const bool implied = field.find("(absent:") != std::string::npos;
    const std::string where = file.empty() ? field : file + ": " + field;
    const auto it = values_.find(pointer);
    if (it == values_.end()) {
      values_[pointer] = {value, where, implied};
      order_.push_back(pointer);
      return;
    }
    Origin& o = it->second;
    if (o.value == value) return;
    static const std::set<std::string, std::less<>> labels = {"/model/name", "/model/source", "/model/family"};
    if (labels.contains(pointer)) return;
    if (implied) {
      if (!o.implied) return;
      notes_.push_back({file, field, import_detail::echo(value), fmt::format("not used: {} gives {}", o.where, import_detail::echo(o.value))});
      return;
    }
    if (o.implied) {
      notes_.push_back({"", o.where, import_detail::echo(o.value), fmt::format("replaced by {} from {}", import_detail::echo(value), where)});
      o = {value, where, false};
      return;
    }
    diag_.add(file, field, fmt::format("{} contradicts {} = {} (both give the scenario's {})", import_detail::echo(value), o.where,
                                       import_detail::echo(o.value), pointer));
  }
  bool has(const std::string& pointer) const { return values_.contains(pointer); }
  const core::Json* get(const std::string& pointer) const {
    const auto it = values_.find(pointer);
    return it == values_.end() ? nullptr : &it->second.value;
  }
  std::string where(const std::string& pointer) const {
    const auto it = values_.find(pointer);
    return it == values_.end() ? std::string() : it->second.where;
  }
  const std::vector<std::string>& order() const { return order_; }
  core::Diagnostics& diagnostics() { return diag_; }

 private:
  std::map<std::string, Origin> values_;
  std::vector<std::string> order_;
  std::vector<ImportNote>& notes_;
  core::Diagnostics diag_;
};

int64_t int_at(const core::Json& doc, const std::string& pointer, int64_t fallback) {
  const core::Json::json_pointer p(pointer);
  if (!doc.contains(p)) return fallback;
  return core::exact_integer(doc.at(p)).value_or(fallback);
}

// The model section as a spec (catalog names and bases resolved), or nullopt when it does not read.
std::optional<models::ModelSpec> model_of(const core::Json& doc) {
  if (!doc.contains("model")) return std::nullopt;
  core::Diagnostics ignore;
  models::ModelSpec m = models::ModelSpec::from_json(doc.at("model"), IMPORTED, "/model", ignore);
  if (!ignore.empty() || m.is_layer_graph() || m.heads <= 0) return std::nullopt;
  return m;
}

std::string stem(const std::string& file) { return std::filesystem::path(file).stem().string(); }

}  // namespace

ImportResult import_configs(const ImportOptions& o) {
  ImportResult result;
  std::vector<ImportFragment> fragments;
  {
    std::vector<core::InputProblem> problems;
    const auto read = [&](auto&& reader) {
      try {
        fragments.push_back(reader());
      } catch (const core::InputError& e) {
        problems.insert(problems.end(), e.problems().begin(), e.problems().end());
      }
    };
    if (!o.hf_config.empty()) read([&] { return read_hf_config(o.hf_config); });
    if (!o.deepspeed.empty()) read([&] { return read_deepspeed_json(o.deepspeed); });
    if (!o.torchtitan.empty()) read([&] { return read_torchtitan_toml(o.torchtitan, !o.hf_config.empty()); });
    if (!o.megatron.empty()) read([&] { return read_megatron_file(o.megatron); });
    if (!o.megatron_args.empty()) read([&] { return read_megatron_args(o.megatron_args, "command line"); });
    if (!problems.empty()) throw core::InputError(problems);
  }
  if (fragments.empty()) {
    throw core::InputError("", "", "nothing to import: give --hf, --megatron, --torchtitan, --deepspeed, or Megatron arguments after --");
  }
  for (const ImportFragment& f : fragments) {
    result.sources.push_back(fmt::format("{} ({})", f.file, describe(f.format)));
    result.notes.insert(result.notes.end(), f.notes.begin(), f.notes.end());
  }

  // 1-2. The base, the cluster.
  core::Json doc = core::Json::object();
  if (!o.base.empty() && !o.cluster_from.empty()) {
    throw core::InputError("--cluster-from", "", "not with --base: the base scenario's cluster is kept (change it with --set cluster.KEY=VALUE)");
  }
  if (!o.base.empty()) {
    doc = core::load_scenario_file(o.base);
    if (!doc.is_object()) throw core::InputError(o.base, "", fmt::format("expected a scenario object, found {}", core::describe_json(doc)));
    doc.erase("expect");
    result.sources.push_back(fmt::format("{} (base scenario: the sections the imports leave)", o.base));
    if (doc.contains(core::Json::json_pointer("/simulation/profile")) && doc["simulation"]["profile"].is_string() &&
        std::filesystem::path(doc["simulation"]["profile"].get<std::string>()).is_relative()) {
      result.notes.push_back({o.base, "/simulation/profile", doc["simulation"]["profile"].get<std::string>(),
                              "relative to the base scenario's folder: keep the imported scenario there, or edit the path"});
    }
  } else if (!o.cluster_from.empty()) {
    const core::Json other = core::load_scenario_file(o.cluster_from);
    if (!other.is_object() || !other.contains("cluster")) {
      throw core::InputError(o.cluster_from, "/cluster", "expected a scenario with a \"cluster\" section (--cluster-from takes its cluster)");
    }
    doc["cluster"] = other["cluster"];
    result.sources.push_back(fmt::format("{} (its cluster)", o.cluster_from));
  }
  if (!o.gpu.empty()) doc["cluster"]["gpu"] = o.gpu;
  if (o.nodes > 0) doc["cluster"]["nodes"] = o.nodes;
  if (o.gpus_per_node > 0) doc["cluster"]["gpus_per_node"] = o.gpus_per_node;

  // 3. The imported values, merged.
  Merge merge(result.notes);
  for (const ImportFragment& f : fragments) {
    for (const auto& [pointer, field] : f.origin) merge.put(pointer, f.scenario.at(core::Json::json_pointer(pointer)), f.file, field);
  }
  merge.diagnostics().throw_if_any();
  bool model_imported = false;
  core::Json model = core::Json::object();
  for (const std::string& p : merge.order()) {
    if (p.starts_with("/model/")) {
      model[p.substr(7)] = *merge.get(p);
      model_imported = true;
    }
  }
  bool full_spec = model_imported;
  for (const char* k : import_detail::REQUIRED_MODEL_KEYS) full_spec = full_spec && model.contains(k);
  if (full_spec) {
    if (!model.contains("family")) model["family"] = "transformer";
    core::Json ordered = {{"family", model["family"]}};
    for (auto it = model.begin(); it != model.end(); ++it) ordered[it.key()] = it.value();
    doc["model"] = ordered;
  } else if (model_imported && doc.contains("model")) {
    if (doc["model"].is_string()) doc["model"] = core::Json{{"base", doc["model"]}};
    model.erase("family");
    for (auto it = model.begin(); it != model.end(); ++it) doc["model"][it.key()] = it.value();
  } else if (model_imported) {
    std::vector<std::string> missing;
    for (const char* k : import_detail::REQUIRED_MODEL_KEYS) {
      if (!model.contains(k)) missing.emplace_back(k);
    }
    throw core::InputError("", "", fmt::format("the model is incomplete: the imported files give no {} (give the model's config.json "
                                               "with --hf, --vocab-size among Megatron's arguments, or a --base scenario with a model)",
                                               fmt::join(missing, ", ")));
  } else if (!doc.contains("model")) {
    throw core::InputError("", "", "no model: give the model's config.json with --hf, a Megatron argument list with --num-layers, "
                                   "--hidden-size, --num-attention-heads and --vocab-size, a torchtitan [model] flavor, or --base SCENARIO");
  }
  for (const std::string& p : merge.order()) {
    if (!p.starts_with("/model/")) doc[core::Json::json_pointer(p)] = *merge.get(p);
  }
  // A layout imported over a base: the base's split of the layers no longer fits it.
  if (merge.has("/parallelism/pipeline") || merge.has("/parallelism/pipeline_schedule")) {
    for (const char* key : {"stage_layers", "virtual_stages"}) {
      if (!merge.has(std::string("/parallelism/") + key) && doc.contains("parallelism")) doc["parallelism"].erase(key);
    }
  }
  if (merge.has("/parallelism/expert") && !merge.has("/parallelism/expert_tensor") && doc.contains("parallelism")) {
    doc["parallelism"].erase("expert_tensor");
  }
  // A sharding imported over a base: the base's implementation and its knobs belong to its own.
  if (merge.has("/parallelism/zero_stage") && doc.contains("parallelism")) {
    for (const char* key : {"zero_impl", "prefetch", "backward_prefetch", "reduce_dtype", "gradient_buffers", "overlap_param_gather",
                            "bucket_size", "shard_group"}) {
      if (!merge.has(std::string("/parallelism/") + key)) doc["parallelism"].erase(key);
    }
  }
  // The overrides before the sizes are resolved (they may give the cluster or the batch), and again last.
  for (const std::string& s : o.overrides) apply_override(doc, s);

  // 4. Sizes left to the world size.
  DeferredSizes d;
  for (const ImportFragment& f : fragments) {
    const DeferredSizes& s = f.deferred;
    if (s.data_fills_world) {
      d.data_fills_world = true;
      d.data_field = f.file + ": " + s.data_field;
    }
    for (auto [from, to] : {std::pair{&s.train_batch, &d.train_batch}, {&s.micro_batch, &d.micro_batch},
                            {&s.accumulation, &d.accumulation}, {&s.local_batch, &d.local_batch}, {&s.steps, &d.steps},
                            {&s.samples, &d.samples}}) {
      if (*from) *to = *from;
    }
    if (s.local_batch) d.local_batch_field = f.file + ": " + s.local_batch_field;
    if (s.steps || s.samples) d.steps_field = f.file + ": " + s.steps_field;
    if (s.nodes) d.nodes = s.nodes;
    if (s.gpus_per_node) d.gpus_per_node = s.gpus_per_node;
    if (s.world_size) {
      d.world_size = s.world_size;
      d.world_field = f.file + ": " + s.world_field;
    }
    if (s.vocab_multiple > 0) d.vocab_multiple = s.vocab_multiple;
    if (s.replicate > 0) d.replicate = s.replicate;
  }
  if (!doc.contains("cluster")) {
    throw core::InputError("", "", "the cluster is unknown: give --base SCENARIO, --cluster-from SCENARIO, or --gpu NAME with "
                                   "--nodes N and --gpus-per-node G (`trainsim describe gpus` lists the GPUs)");
  }
  core::Json& cluster = doc["cluster"];
  if (!cluster.contains("gpus_per_node") && d.gpus_per_node) cluster["gpus_per_node"] = *d.gpus_per_node;
  if (!cluster.contains("nodes") && d.nodes) cluster["nodes"] = *d.nodes;
  if (!cluster.contains("nodes") && d.world_size) {
    const int64_t per_node = int_at(doc, "/cluster/gpus_per_node", std::min(8, *d.world_size));
    if (per_node <= 0 || *d.world_size % per_node != 0) {
      throw core::InputError("", "/cluster/nodes", fmt::format("{} makes {} GPUs, not a whole number of nodes of {}: give --nodes",
                                                               d.world_field, *d.world_size, per_node));
    }
    if (!cluster.contains("gpus_per_node")) cluster["gpus_per_node"] = per_node;
    cluster["nodes"] = *d.world_size / per_node;
  }
  const int64_t world = int_at(doc, "/cluster/nodes", 1) * int_at(doc, "/cluster/gpus_per_node", 8);
  const int64_t tp = int_at(doc, "/parallelism/tensor", 1), pp = int_at(doc, "/parallelism/pipeline", 1);
  const int64_t cp = int_at(doc, "/parallelism/context", 1), ep = int_at(doc, "/parallelism/expert", 1);
  const bool folded = doc.contains(core::Json::json_pointer("/parallelism/expert_tensor"));
  if (d.world_size && *d.world_size != world) {
    result.notes.push_back({"", d.world_field, std::to_string(*d.world_size), fmt::format("the cluster has {} GPUs: the cluster's count is used", world)});
  }
  if (!d.data_fills_world && !doc.contains(core::Json::json_pointer("/parallelism/data"))) {
    d.data_fills_world = true;
    d.data_field = "parallelism.data (no source gives it: the GPUs left)";
  }
  if (d.data_fills_world) {
    const int64_t others = tp * pp * cp * (folded ? 1 : ep);
    if (others <= 0 || world % others != 0) {
      throw core::InputError("", "", fmt::format("{}: the cluster's {} GPUs are not a multiple of tensor {} x pipeline {} x context {}{} = {}",
                                                 d.data_field, world, tp, pp, cp, folded ? "" : fmt::format(" x expert {}", ep), others));
    }
    doc["parallelism"]["data"] = world / others;
  }
  const int64_t data = int_at(doc, "/parallelism/data", 1);
  if (d.replicate > 0) {
    if (data % d.replicate != 0) {
      throw core::InputError("", "", fmt::format("data_parallel_replicate_degree {} does not divide the data-parallel degree {}", d.replicate, data));
    }
    if (data / d.replicate == 1 && cp == 1) {
      doc["parallelism"]["zero_stage"] = 0;
      doc["parallelism"].erase("zero_impl");
    } else if (d.replicate > 1) {
      // HSDP: fully_shard over a (replicate, shard) mesh shards over data / replicate data ranks (x
      // context) and all-reduces the gradient shards across the replicas.
      doc["parallelism"]["shard_group"] = data / d.replicate;
    }
  }
  const int64_t replicas = data * (folded ? 1 : ep);  // sequences per micro-batch step / micro_batch
  const auto put = [&](const std::string& pointer, int64_t value, const std::string& field) {
    merge.put(pointer, value, "", field);
    doc[core::Json::json_pointer(pointer)] = *merge.get(pointer);
  };
  if (d.train_batch || d.micro_batch || d.accumulation) {
    const std::string ds = "DeepSpeed's train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x data-parallel GPUs";
    const int64_t dp = replicas;
    if (d.train_batch && d.micro_batch && d.accumulation && *d.train_batch != *d.micro_batch * *d.accumulation * dp) {
      throw core::InputError(o.deepspeed, "/train_batch_size", fmt::format("{} is not {} x {} x {} data-parallel GPUs ({})", *d.train_batch,
                                                                           *d.micro_batch, *d.accumulation, dp, ds));
    }
    int64_t micro = d.micro_batch.value_or(0);
    if (!d.micro_batch && d.train_batch) {
      const int64_t per = d.accumulation.value_or(1) * dp;
      if (*d.train_batch % per != 0) {
        throw core::InputError(o.deepspeed, "/train_batch_size", fmt::format("{} is not a multiple of {} data-parallel GPUs x {} accumulation "
                                                                             "steps ({})", *d.train_batch, dp, d.accumulation.value_or(1), ds));
      }
      micro = *d.train_batch / per;
      put("/training/micro_batch", micro, "DeepSpeed: train_batch_size / (gradient_accumulation_steps x data-parallel GPUs)");
    }
    if (micro == 0) {
      throw core::InputError(o.deepspeed, "/train_micro_batch_size_per_gpu", "expected it or train_batch_size (DeepSpeed needs one of them)");
    }
    if (d.train_batch) {
      if (*d.train_batch % (micro * dp) != 0) {
        throw core::InputError(o.deepspeed, "/train_batch_size", fmt::format("{} is not a multiple of {} x {} data-parallel GPUs ({})",
                                                                             *d.train_batch, micro, dp, ds));
      }
      put("/training/global_batch", *d.train_batch, "/train_batch_size");
    } else {
      put("/training/global_batch", micro * d.accumulation.value_or(1) * dp,
          "DeepSpeed: train_micro_batch_size_per_gpu x gradient_accumulation_steps x data-parallel GPUs");
    }
  }
  if (d.local_batch && !doc.contains(core::Json::json_pointer("/training/global_batch"))) {
    put("/training/global_batch", *d.local_batch * replicas, d.local_batch_field + " (absent: local batch x data-parallel degree)");
  }
  merge.diagnostics().throw_if_any();
  if (!doc.contains(core::Json::json_pointer("/training/global_batch"))) {
    throw core::InputError("", "/training/global_batch", "unknown: give it with --set training.global_batch=N, --base SCENARIO, or a "
                                                         "framework config (Megatron --global-batch-size, torchtitan "
                                                         "training.global_batch_size, DeepSpeed train_batch_size)");
  }
  const int64_t sequence = int_at(doc, "/training/sequence_length", 2048);
  // Defaults that change a prediction and that no source gave.
  if (!doc.contains(core::Json::json_pointer("/training/sequence_length"))) {
    result.notes.push_back({"", "training.sequence_length", "", "no source gives it: trainsim's default 2048 is used (--set training.sequence_length=N)"});
  }
  if (!doc.contains(core::Json::json_pointer("/training/attention"))) {
    result.notes.push_back({"", "training.attention", "", "no source gives it: trainsim's default unfused is used (--set training.attention=flash "
                                                          "for FlashAttention or PyTorch's scaled_dot_product_attention)"});
  }
  if (d.steps) doc["training"]["tokens"] = static_cast<double>(*d.steps) * static_cast<double>(int_at(doc, "/training/global_batch", 0)) * static_cast<double>(sequence);
  if (d.samples) doc["training"]["tokens"] = static_cast<double>(*d.samples) * static_cast<double>(sequence);
  if (d.vocab_multiple > 0) {
    if (const std::optional<models::ModelSpec> m = model_of(doc)) {
      const int64_t multiple = d.vocab_multiple * tp;
      const int64_t padded = (m->vocab + multiple - 1) / multiple * multiple;
      if (padded != m->vocab) {
        if (doc["model"].is_string()) doc["model"] = core::Json{{"base", doc["model"]}};
        doc["model"]["vocab"] = padded;
        result.notes.push_back({"", "vocab", std::to_string(m->vocab),
                                fmt::format("padded to {} as Megatron does (a multiple of --make-vocab-size-divisible-by {} x tensor {})",
                                            padded, d.vocab_multiple, tp)});
      }
    }
  }
  // torchtitan's per-op checkpointing is modelled for dense layers (models/strategy.hpp).
  if (const core::Json* rc = merge.get("/parallelism/recompute"); rc != nullptr && *rc == "selective-op") {
    if (const std::optional<models::ModelSpec> m = model_of(doc); m && m->is_moe()) {
      doc["parallelism"]["recompute"] = "selective";
      result.notes.push_back({"", merge.where("/parallelism/recompute"), "op",
                              "approximated as selective (the attention core): trainsim models the per-op policy "
                              "(selective-op) for dense layers, and this model has MoE layers"});
    }
  }

  // The name, then 5. the overrides.
  if (!o.name.empty()) doc["name"] = o.name;
  if (!doc.contains("name")) {
    // The first source's file name; a config.json is named by its model ("meta-llama/Meta-Llama-3-8B").
    const ImportFragment& first = fragments.front();
    std::string name = first.file == "command line" ? std::string("imported") : stem(first.file);
    if (name == "config" && first.scenario.contains(core::Json::json_pointer("/model/name"))) {
      name = first.scenario.at(core::Json::json_pointer("/model/name")).get<std::string>();
      name = name.substr(name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
    }
    doc["name"] = name;
  }
  for (const std::string& s : o.overrides) apply_override(doc, s);
  // The sections in the order of a scenario file, their keys in the order docs/scenario.md lists them.
  static const std::map<std::string, std::vector<std::string>> key_order = {
      {"model", {"family", "base", "name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab", "activation",
                 "experts", "top_k", "shared_experts", "shared_expert_ffn_hidden", "moe_layer_freq", "first_dense_layers",
                 "dense_ffn_hidden", "tied_embeddings", "learned_positions", "embedding_norm", "source"}},
      {"training", {"sequence_length", "global_batch", "micro_batch", "precision", "attention", "fp8_params", "tokens", "stack", "compile"}},
      {"parallelism", {"tensor", "pipeline", "data", "context", "expert", "expert_tensor", "sequence_parallel", "pipeline_schedule",
                       "virtual_stages", "stage_layers", "recompute", "zero_stage", "zero_impl", "bucket_size", "overlap_grad_reduce",
                       "overlap_param_gather", "prefetch", "shard_group", "backward_prefetch", "reduce_dtype", "gradient_buffers",
                       "tp_comm_overlap", "moe_a2a_overlap"}}};
  for (const auto& [section, keys] : key_order) {
    if (!doc.contains(section) || !doc[section].is_object()) continue;
    core::Json sorted = core::Json::object();
    for (const std::string& k : keys) {
      if (doc[section].contains(k)) sorted[k] = doc[section][k];
    }
    for (auto it = doc[section].begin(); it != doc[section].end(); ++it) {
      if (!sorted.contains(it.key())) sorted[it.key()] = it.value();
    }
    doc[section] = std::move(sorted);
  }
  core::Json ordered = core::Json::object();
  for (const char* k : {"name", "cluster", "model", "training", "parallelism", "optimizations", "simulation", "profile"}) {
    if (doc.contains(k)) ordered[k] = doc[k];
  }
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (!ordered.contains(it.key())) ordered[it.key()] = it.value();
  }
  result.scenario = std::move(ordered);

  if (o.check) {
    try {
      const Scenario s = read_scenario(result.scenario, IMPORTED);
      result.parameters = s.model.is_layer_graph() ? 0 : s.model.parameter_count(s.training.sequence_length);
      result.active_parameters = s.model.is_layer_graph() ? 0 : s.model.active_parameter_count(s.training.sequence_length);
    } catch (const core::InputError& e) {
      // Each problem names the source field that set the value, where one did.
      std::vector<core::InputProblem> problems;
      for (core::InputProblem p : e.problems()) {
        for (std::string at = p.pointer; !at.empty(); at = at.substr(0, at.rfind('/'))) {
          if (merge.has(at)) {
            p.message += fmt::format(" (from {})", merge.where(at));
            break;
          }
        }
        problems.push_back(std::move(p));
      }
      problems.push_back({"", "", "the imported scenario does not run as it is (write it anyway with --no-check, then edit it)"});
      throw core::InputError(problems);
    }
  } else if (const std::optional<models::ModelSpec> m = model_of(result.scenario)) {
    result.parameters = m->parameter_count(int_at(result.scenario, "/training/sequence_length", 2048));
    result.active_parameters = m->active_parameter_count(int_at(result.scenario, "/training/sequence_length", 2048));
  }
  if (const std::optional<models::ModelSpec> m = model_of(result.scenario)) {
    core::Json shape = m->to_json();
    shape.erase("name");
    shape.erase("source");
    for (const models::ModelSpec& c : models::model_catalog()) {
      core::Json other = c.to_json();
      other.erase("name");
      other.erase("source");
      if (other == shape && !result.scenario["model"].is_string()) {
        result.notes.push_back({"", "model", "", fmt::format("the shape of the catalog's {} (`\"model\": \"{}\"` is the same model)", c.name, c.name)});
      }
    }
  }
  return result;
}

std::string scenario_text(const ImportResult& r) {
  const auto line = [](std::string text) {
    for (char& c : text) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    return text;
  };
  std::string out = "// Imported by `trainsim import` from:\n";
  for (const std::string& s : r.sources) out += "//   " + line(s) + "\n";
  if (!r.notes.empty()) {
    out += fmt::format("// {} value{} without a counterpart in the scenario, approximated or implied (docs/import.md):\n",
                       r.notes.size(), r.notes.size() == 1 ? "" : "s");
    for (const ImportNote& n : r.notes) out += "//   " + line(n.to_string()) + "\n";
  }
  out += r.scenario.dump(2, ' ', false, core::Json::error_handler_t::replace);
  out += "\n";
  return out;
}

}  // namespace trainsim::plan
