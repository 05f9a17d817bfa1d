// torchtitan job config (TOML) -> a scenario fragment (docs/import.md, "torchtitan"). Section and
// key names are torchtitan's torchtitan/config/job_config.py; flavor shapes its
// torchtitan/models/<name>/__init__.py (llama3_configs, qwen3_configs).

#include <fmt/format.h>

#include <sstream>
#include <toml++/toml.h>

#include "sim/core/text_file.hpp"
#include "sim/plan/config_import.hpp"
#include "sim/plan/import_source.hpp"

namespace trainsim::plan {

using import_detail::add_note;
using import_detail::FieldStyle;
using import_detail::set_value;
using import_detail::SourceObject;

namespace {

core::Json toml_to_json(const toml::node& n) {
  if (const toml::table* t = n.as_table()) {
    core::Json j = core::Json::object();
    for (auto&& [k, v] : *t) j[std::string(k.str())] = toml_to_json(v);
    return j;
  }
  if (const toml::array* a = n.as_array()) {
    core::Json j = core::Json::array();
    for (const toml::node& v : *a) j.push_back(toml_to_json(v));
    return j;
  }
  if (const auto* v = n.as_integer()) return v->get();
  if (const auto* v = n.as_floating_point()) return v->get();
  if (const auto* v = n.as_boolean()) return v->get();
  if (const auto* v = n.as_string()) return v->get();
  std::ostringstream s;  // dates and times: no setting trainsim reads is one
  if (const auto* v = n.as_date()) s << *v;
  else if (const auto* t = n.as_time()) s << *t;
  else if (const auto* dt = n.as_date_time()) s << *dt;
  return s.str();
}

std::string unread_reason(const std::string& section) {
  static const std::set<std::string, std::less<>> no_effect = {
      "job", "profiling", "metrics", "optimizer", "lr_scheduler", "comm", "memory_estimation", "experimental",
      "validation", "debug", "fault_tolerance"};
  if (no_effect.contains(section)) return "no counterpart (a hyperparameter, logging or I/O setting: no effect on an iteration's time or memory)";
  if (section == "checkpoint") return "no counterpart here: checkpoints need training.checkpoint and cluster.storage (docs/resilience.md)";
  return "no counterpart in trainsim (not modelled)";
}

}  // namespace

// llama3: FeedForward hidden_dim = compute_ffn_hidden_dim(dim, multiple_of, ffn_dim_multiplier)
// (8B: 4096, 1024, 1.3 -> 14336; 70B: 8192, 4096, 1.3 -> 28672; 405B: 16384, 4096, 1.2 -> 53248;
// debugmodel: 256, 256 -> 768); vocabulary 128256 (2048 for the debug model). qwen3: as written
// in qwen3_configs (head_dim 128; the three smallest tie their embeddings).
const std::vector<import_detail::TorchtitanFlavor>& import_detail::torchtitan_flavors() {
  static const std::vector<TorchtitanFlavor> flavors = {
      {"llama3", "debugmodel", 6, 256, 16, 16, 0, 768, 2048, false, 1, 1},
      {"llama3", "8B", 32, 4096, 32, 8, 0, 14336, 128256, false, 1, 1},
      {"llama3", "70B", 80, 8192, 64, 8, 0, 28672, 128256, false, 1, 1},
      {"llama3", "405B", 126, 16384, 128, 8, 0, 53248, 128256, false, 1, 1},
      {"qwen3", "0.6B", 28, 1024, 16, 8, 128, 3072, 151936, true, 1, 1},
      {"qwen3", "1.7B", 28, 2048, 16, 8, 128, 6144, 151936, true, 1, 1},
      {"qwen3", "4B", 36, 2560, 32, 8, 128, 9728, 151936, true, 1, 1},
      {"qwen3", "8B", 36, 4096, 32, 8, 128, 12288, 151936, false, 1, 1},
      {"qwen3", "14B", 40, 5120, 40, 8, 128, 17408, 151936, false, 1, 1},
      {"qwen3", "32B", 64, 5120, 64, 8, 128, 25600, 151936, false, 1, 1},
      {"qwen3", "30B-A3B", 48, 2048, 32, 4, 128, 768, 151936, false, 128, 8},
      {"qwen3", "235B-A22B", 94, 4096, 64, 4, 128, 1536, 151936, false, 128, 8},
  };
  return flavors;
}

core::Json import_detail::flavor_model(const TorchtitanFlavor& f) {
  core::Json m = {{"family", "transformer"}, {"name", fmt::format("{} {}", f.name, f.flavor)}, {"layers", f.layers},
                  {"hidden", f.hidden}, {"heads", f.heads}, {"kv_heads", f.kv_heads}};
  if (f.head_dim > 0) m["head_dim"] = f.head_dim;
  m["ffn_hidden"] = f.ffn;
  m["vocab"] = f.vocab;
  m["activation"] = "swiglu";
  m["tied_embeddings"] = f.tied;
  m["learned_positions"] = false;
  if (f.experts > 1) {
    m["experts"] = f.experts;
    m["top_k"] = f.top_k;
  }
  return m;
}

ImportFragment read_torchtitan_toml(const std::string& path, bool shape_elsewhere) {
  const std::string text = core::read_text_file(path, core::MAX_SCENARIO_FILE_BYTES, "TOML");
  core::Json doc;
  try {
    doc = toml_to_json(toml::parse(text, path));
  } catch (const toml::parse_error& e) {
    throw core::InputError(path, "", fmt::format("invalid TOML at line {}, column {}: {}", e.source().begin.line,
                                                 e.source().begin.column, e.description()));
  }
  ImportFragment f;
  f.format = ConfigFormat::TORCHTITAN;
  f.file = path;
  core::Diagnostics diag;
  SourceObject root(doc, path, "", FieldStyle::DOTTED, diag);
  const auto set = [&](const std::string& pointer, core::Json v, const std::string& field) { set_value(f, pointer, std::move(v), field); };

  // [model]
  std::optional<SourceObject> model = root.object("model");
  std::string name = "llama3", flavor = "debugmodel";  // job_config.py's defaults
  if (model) {
    name = model->string("name").value_or(name);
    flavor = model->string("flavor").value_or(flavor);
  }
  const import_detail::TorchtitanFlavor* shape = nullptr;
  for (const import_detail::TorchtitanFlavor& fl : import_detail::torchtitan_flavors()) {
    if (name == fl.name && flavor == fl.flavor) shape = &fl;
  }
  const std::string model_field = model ? model->field("flavor") : "model.flavor";
  if (shape != nullptr && !shape_elsewhere) {
    const core::Json m = import_detail::flavor_model(*shape);
    for (auto it = m.begin(); it != m.end(); ++it) set("/model/" + it.key(), it.value(), model_field);
    set("/model/source", fmt::format("torchtitan flavor {} {} (torchtitan/models/{}/__init__.py): {}", name, flavor, name, path), model_field);
    if (std::string(shape->name) == "qwen3") {
      add_note(f, model_field, flavor, fmt::format("no counterpart: Qwen3's QK norms ({} parameters) are not counted", shape->layers * 2 * 128));
    }
  } else if (shape_elsewhere) {
    add_note(f, model_field, fmt::format("{} {}", name, flavor), "the shape is the Hugging Face config.json's");
  } else {
    std::string known;
    for (const import_detail::TorchtitanFlavor& fl : import_detail::torchtitan_flavors()) {
      known += fmt::format("{}{} {}", known.empty() ? "" : ", ", fl.name, fl.flavor);
    }
    diag.add(path, model_field, fmt::format("trainsim does not know the shape of torchtitan's {} flavor \"{}\" (it knows {}): "
                                            "give the model's config.json with --hf",
                                            core::truncate_echo(name), core::truncate_echo(flavor), known));
  }
  bool float8 = false;
  if (model) {
    if (const core::Json* conv = model->get("converters")) {
      const std::string list = conv->is_array() ? conv->dump() : import_detail::echo(*conv);
      float8 = list.find("float8") != std::string::npos || list.find("mx") != std::string::npos;
      if (list != "[]" && !list.empty()) {
        add_note(f, model->field("converters"), list,
                 float8 ? "imported as precision fp8 (torchao's float8 linears; trainsim's fp8 is Transformer Engine's recipe)"
                        : "no counterpart in trainsim (not modelled)");
      }
    }
    model->unread_notes(f.notes, [](const std::string&) { return std::string("no counterpart (tokenizer and assets: no effect on an iteration)"); });
  }

  // [parallelism]
  std::optional<SourceObject> par = root.object("parallelism");
  const auto degree = [&](const char* key, int64_t fallback, int64_t min) -> int64_t {
    return par ? par->integer(key, min, int64_t{1} << 24).value_or(fallback) : fallback;
  };
  const int64_t replicate = degree("data_parallel_replicate_degree", 1, 1);
  const int64_t shard = degree("data_parallel_shard_degree", -1, -1);
  const int64_t tp = degree("tensor_parallel_degree", 1, 1);
  const int64_t pp = degree("pipeline_parallel_degree", 1, 1);
  const int64_t cp = degree("context_parallel_degree", 1, 1);
  const int64_t ep = degree("expert_parallel_degree", 1, 1);
  const std::optional<int64_t> etp = par ? par->integer("expert_tensor_parallel_degree", 1, int64_t{1} << 24) : std::nullopt;
  const std::string pfield = par ? par->field("data_parallel_shard_degree") : "parallelism.data_parallel_shard_degree";
  if (shard == 0) diag.add(path, pfield, "expected -1 (the ranks left) or a positive degree, found 0");
  set("/parallelism/tensor", tp, par ? par->field("tensor_parallel_degree") : "parallelism.tensor_parallel_degree");
  set("/parallelism/pipeline", pp, par ? par->field("pipeline_parallel_degree") : "parallelism.pipeline_parallel_degree");
  set("/parallelism/context", cp, par ? par->field("context_parallel_degree") : "parallelism.context_parallel_degree");
  set("/parallelism/sequence_parallel", tp > 1, par ? par->field("tensor_parallel_degree") : "parallelism.tensor_parallel_degree");
  if (ep > 1) {
    set("/parallelism/expert", ep, par->field("expert_parallel_degree"));
    set("/parallelism/expert_tensor", etp.value_or(1), par->field("expert_tensor_parallel_degree"));
  }
  f.deferred.replicate = static_cast<int>(replicate);
  if (shard == -1) {
    f.deferred.data_fills_world = true;
    f.deferred.data_field = pfield + " -1 (the ranks left after replicate, tensor, pipeline and context)";
  } else if (shard > 0) {
    set("/parallelism/data", replicate * shard, pfield);
    f.deferred.world_size = static_cast<int>(replicate * shard * tp * pp * cp);
    f.deferred.world_field = "the product of [parallelism] degrees";
  }
  const bool sharded = shard != 1 || cp > 1;
  // fully_shard's reshard_after_forward (parallelize.py): "always" reshards (FULL_SHARD, stage 3),
  // "never" keeps each unit gathered from its forward to its backward (SHARD_GRAD_OP, stage 2), and
  // "default" is "never" under a pipeline (no gather per micro-batch), else "always".
  const std::string reshard = par ? par->choice("fsdp_reshard_after_forward", {"default", "always", "never"}).value_or("default") : "default";
  const std::string rfield = par && par->has("fsdp_reshard_after_forward")
                                 ? par->field("fsdp_reshard_after_forward")
                                 : "parallelism.fsdp_reshard_after_forward (absent: torchtitan's default)";
  const bool keep_gathered = reshard == "never" || (reshard == "default" && pp > 1);
  if (sharded) {
    set("/parallelism/zero_stage", keep_gathered ? 2 : 3, keep_gathered || reshard != "default" ? rfield : pfield);
    set("/parallelism/zero_impl", "fsdp2", pfield);
    // FSDP2's MixedPrecisionPolicy(reduce_dtype=...) from training.mixed_precision_reduce (read below).
    set("/parallelism/reduce_dtype", "fp32", "training.mixed_precision_reduce (absent: torchtitan's default float32)");
    if (keep_gathered && reshard == "default") {
      add_note(f, rfield, "default", "with a pipeline, torchtitan keeps each unit gathered from its forward to its backward: "
                                     "zero_stage 2 (SHARD_GRAD_OP)");
    }
    if (replicate > 1) {
      add_note(f, par->field("data_parallel_replicate_degree"), std::to_string(replicate),
               "HSDP: parallelism.shard_group = data / replicate (sharded within each group, gradient shards all-reduced "
               "across the replicas)");
    }
  } else {
    set("/parallelism/zero_stage", 0, pfield);
  }
  int64_t micro_size = 1;
  if (par) {
    if (par->boolean("enable_async_tensor_parallel").value_or(false)) set("/parallelism/tp_comm_overlap", true, par->field("enable_async_tensor_parallel"));
    micro_size = par->integer("pipeline_parallel_microbatch_size", 1, int64_t{1} << 20).value_or(1);
    const std::string schedule = par->string("pipeline_parallel_schedule").value_or("1F1B");
    const std::optional<int64_t> per_stage = par->integer("pipeline_parallel_layers_per_stage", 1, 65535);
    const std::string sfield = par->field("pipeline_parallel_schedule");
    if (pp > 1) {
      const bool looped = schedule == "Interleaved1F1B" || schedule == "LoopedBFS" || schedule == "InterleavedZeroBubble";
      if (schedule == "1F1B") {
        set("/parallelism/pipeline_schedule", "1f1b", sfield);
      } else if (schedule == "GPipe") {
        set("/parallelism/pipeline_schedule", "gpipe", sfield);
      } else if (looped) {
        set("/parallelism/pipeline_schedule", schedule == "InterleavedZeroBubble" ? "zero-bubble-h1" : "interleaved-1f1b", sfield);
        if (schedule != "Interleaved1F1B") add_note(f, sfield, schedule, "approximated as the nearest trainsim schedule (docs/schedules.md)");
        if (schedule != "InterleavedZeroBubble") {
          const int64_t layers = shape != nullptr ? shape->layers : 0;
          const int64_t v = per_stage && layers > 0 && layers % (pp * *per_stage) == 0 ? layers / (pp * *per_stage) : 2;
          set("/parallelism/virtual_stages", v, per_stage ? par->field("pipeline_parallel_layers_per_stage") : sfield);
          if (!per_stage) add_note(f, sfield, schedule, "two stages per rank (torchtitan's default for a looped schedule without pipeline_parallel_layers_per_stage)");
        }
      } else if (schedule == "ZBVZeroBubble" || schedule == "DualPipeV") {
        set("/parallelism/pipeline_schedule", "zero-bubble-h1", sfield);
        add_note(f, sfield, schedule, "approximated as zero-bubble-h1: V-shaped schedules are not modelled");
      } else {
        par->problem("pipeline_parallel_schedule", fmt::format("expected 1F1B, GPipe, Interleaved1F1B, LoopedBFS, InterleavedZeroBubble, "
                                                               "ZBVZeroBubble or DualPipeV, found \"{}\"", core::truncate_echo(schedule)));
      }
      if (per_stage && !(schedule == "Interleaved1F1B" || schedule == "LoopedBFS")) {
        add_note(f, par->field("pipeline_parallel_layers_per_stage"), std::to_string(*per_stage), "no counterpart with this schedule: the layers are split evenly");
      }
    }
    par->unread_notes(f.notes, [](const std::string& key) {
      return key == "pipeline_parallel_split_points" ? std::string("no counterpart: set parallelism.stage_layers by hand")
                                                     : std::string("no counterpart in trainsim (not modelled)");
    });
  }

  // [training]
  std::optional<SourceObject> training = root.object("training");
  int64_t local = 8;  // job_config.py's default local_batch_size
  std::string precision = "bfloat16";
  bool compile = false;
  if (training) {
    if (const auto b = training->integer("local_batch_size", 1, int64_t{1} << 20)) local = *b;
    else if (const auto old = training->integer("batch_size", 1, int64_t{1} << 20)) local = *old;  // before the rename
    const std::string lfield = training->field(training->has("batch_size") ? "batch_size" : "local_batch_size");
    if (pp > 1) {
      if (local % micro_size != 0) {
        diag.add(path, par->field("pipeline_parallel_microbatch_size"),
                 fmt::format("{} must divide {} ({})", micro_size, lfield, local));
      }
      set("/training/micro_batch", micro_size, par->field("pipeline_parallel_microbatch_size"));
    } else {
      set("/training/micro_batch", local, lfield);
    }
    if (const auto g = training->integer("global_batch_size", -1, int64_t{1} << 30); g && *g > 0) {
      set("/training/global_batch", *g, training->field("global_batch_size"));
    } else {
      f.deferred.local_batch = local;
      f.deferred.local_batch_field = training->field("global_batch_size");
    }
    if (const auto s = training->integer("seq_len", 1, int64_t{1} << 24)) set("/training/sequence_length", *s, training->field("seq_len"));
    else set("/training/sequence_length", 2048, training->field("seq_len") + " (absent: torchtitan's default)");
    if (const auto steps = training->integer("steps", 1, int64_t{1} << 40)) {
      f.deferred.steps = *steps;
      f.deferred.steps_field = training->field("steps");
    }
    precision = training->choice("mixed_precision_param", {"bfloat16", "float32"}).value_or(precision);
    if (const std::optional<std::string> reduce = training->choice("mixed_precision_reduce", {"float32", "bfloat16"}); reduce && sharded) {
      set("/parallelism/reduce_dtype", *reduce == "float32" ? "fp32" : "bf16", training->field("mixed_precision_reduce"));
    }
    compile = training->boolean("compile").value_or(false);
    if (training->boolean("enable_cpu_offload").value_or(false)) {
      set("/optimizations/offload", core::Json{{"optimizer_states", "cpu"}, {"gradients", "cpu"}, {"parameters", "cpu"}},
          training->field("enable_cpu_offload"));
    }
    training->unread_notes(f.notes, [](const std::string&) {
      return std::string("no counterpart (data, clipping, seeds or garbage collection: no effect on an iteration's time or memory)");
    });
  } else {
    f.deferred.local_batch = local;
    f.deferred.local_batch_field = "training.global_batch_size";
    set("/training/micro_batch", pp > 1 ? micro_size : local, "training.local_batch_size (absent: torchtitan's default)");
    set("/training/sequence_length", 2048, "training.seq_len (absent: torchtitan's default)");
  }
  set("/training/precision", float8 ? "fp8" : precision == "float32" ? "fp32" : "bf16",
      training ? training->field("mixed_precision_param") : "training.mixed_precision_param");
  set("/training/attention", "flash", "torchtitan's attention (scaled_dot_product_attention)");

  // [compile], [activation_checkpoint], [float8]
  if (std::optional<SourceObject> c = root.object("compile")) {
    compile = c->boolean("enable").value_or(compile);
    if (const core::Json* comp = c->get("components"); comp != nullptr && compile) {
      add_note(f, c->field("components"), import_detail::echo(*comp), "training.compile applies to the whole model");
    }
    c->unread_notes(f.notes, [](const std::string&) { return std::string("no counterpart in trainsim (not modelled)"); });
  }
  set("/training/compile", compile, "compile.enable");
  std::string ac_mode = "selective", ac_option = "2";  // job_config.py's defaults
  std::string ac_field = "activation_checkpoint.mode (absent: torchtitan's default)";
  if (std::optional<SourceObject> ac = root.object("activation_checkpoint")) {
    if (ac->has("mode")) ac_field = ac->field("mode");
    ac_mode = ac->choice("mode", {"none", "selective", "full"}).value_or(ac_mode);
    if (const core::Json* opt = ac->get("selective_ac_option")) ac_option = import_detail::echo(*opt);
    ac->unread_notes(f.notes, [](const std::string&) { return std::string("no counterpart in trainsim (not modelled)"); });
  }
  if (ac_mode == "selective" && ac_option != "op") {
    const bool every_layer = ac_option == "1";
    set("/parallelism/recompute", "full", ac_field);
    if (!every_layer) {
      add_note(f, "activation_checkpoint.selective_ac_option", ac_option,
               fmt::format("approximated as full: torchtitan recomputes every {}th layer whole, trainsim all of them "
                           "(recompute time over-, activation memory underestimated)", ac_option));
    }
  } else if (ac_mode == "selective") {
    // Per-op selective checkpointing: trainsim's "selective-op" is this policy, modelled for dense
    // layers with their tensor and context collectives (models/strategy.hpp; an MoE model is handled
    // once its shape is known, in import_configs).
    set("/parallelism/recompute", "selective-op", ac_field + ", activation_checkpoint.selective_ac_option");
  } else {
    set("/parallelism/recompute", ac_mode, ac_field);
  }
  if (std::optional<SourceObject> fp8 = root.object("float8")) {
    if (fp8->boolean("enable_fsdp_float8_all_gather").value_or(false) && float8) {
      set("/training/fp8_params", true, fp8->field("enable_fsdp_float8_all_gather"));
    }
    fp8->unread_notes(f.notes, [](const std::string&) { return std::string("no counterpart in trainsim (not modelled)"); });
  }
  if (ep > 1) {
    add_note(f, par->field("expert_parallel_degree"), std::to_string(ep),
             "training.stack left implied (zero_impl fsdp2 prices the job as torchtitan): trainsim's torchtitan stack does "
             "not accept expert parallelism (models/strategy.hpp)");
  } else {
    set("/training/stack", "torchtitan", "model.name");
  }
  root.unread_notes(f.notes, unread_reason);
  diag.throw_if_any();
  return f;
}

}  // namespace trainsim::plan
