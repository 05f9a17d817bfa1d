// DeepSpeed JSON config -> a scenario fragment (docs/import.md, "DeepSpeed"). Key names and defaults
// are DeepSpeed's (deepspeed/runtime/config.py, deepspeed/runtime/zero/config.py).

#include <fmt/format.h>

#include "sim/plan/config_import.hpp"
#include "sim/plan/import_source.hpp"

namespace trainsim::plan {

using import_detail::add_note;
using import_detail::FieldStyle;
using import_detail::set_value;
using import_detail::SourceObject;

namespace {

bool is_auto(const core::Json* v) { return v != nullptr && v->is_string() && v->get<std::string>() == "auto"; }

const char* const AUTO_NOTE = "\"auto\" (filled in by the Hugging Face Trainer at run time): left to the other sources";

std::string unread_reason(const std::string& key) {
  static const std::set<std::string, std::less<>> no_effect = {
      "optimizer", "scheduler", "gradient_clipping", "steps_per_print", "wall_clock_breakdown", "dump_state",
      "zero_allow_untested_optimizer", "flops_profiler", "tensorboard", "wandb", "csv_monitor", "comms_logger",
      "checkpoint", "seed", "memory_breakdown", "prescale_gradients", "gradient_predivide_factor", "aio",
      "zero_force_ds_cpu_optimizer", "elasticity", "autotuning", "data_efficiency", "curriculum_learning"};
  if (no_effect.contains(key)) return "no counterpart (optimizer, logging or I/O setting: no effect on an iteration's time or memory)";
  return "no counterpart in trainsim (not modelled)";
}

// A bucket size given as a number of elements (5e8, 500000000) of at least `min`: the value, or
// nullopt (recorded).
std::optional<double> elements(SourceObject& o, const char* key, double min = 1) {
  const core::Json* v = o.get(key);
  if (v == nullptr || is_auto(v)) return std::nullopt;
  if (!v->is_number() || v->get<double>() < min || v->get<double>() > 1e15) {
    o.problem(key, fmt::format("expected a number of elements >= {:g}, found {}", min, core::describe_json(*v)));
    return std::nullopt;
  }
  return v->get<double>();
}

// ZeRO-3's parameter fetch: the stage3 keys that training.deepspeed takes (models/deepspeed_config.hpp).
struct Stage3Key {
  const char* deepspeed;
  const char* scenario;
};
constexpr Stage3Key STAGE3_KEYS[] = {{"stage3_prefetch_bucket_size", "prefetch_bucket_elements"},
                                     {"stage3_max_live_parameters", "max_live_parameters"},
                                     {"stage3_param_persistence_threshold", "persistence_threshold"}};

}  // namespace

ImportFragment read_deepspeed_json(const std::string& path) {
  const core::Json doc = core::load_json_file(path);
  ImportFragment f;
  f.format = ConfigFormat::DEEPSPEED;
  f.file = path;
  core::Diagnostics diag;
  SourceObject c(doc, path, "", FieldStyle::POINTER, diag);
  diag.throw_if_any();
  const auto set = [&](const std::string& pointer, core::Json v, const std::string& field) { set_value(f, pointer, std::move(v), field); };

  // Batch sizes: train_batch_size = micro x accumulation x data-parallel GPUs (resolved later).
  const auto batch = [&](const char* key, std::optional<int64_t>& out) {
    const core::Json* v = c.get(key);
    if (is_auto(v)) {
      add_note(f, c.field(key), "auto", AUTO_NOTE);
    } else if (v != nullptr) {
      out = c.integer(key, 1, int64_t{1} << 30);
      f.deferred.batch_fields += (f.deferred.batch_fields.empty() ? "" : ", ") + c.field(key);
    }
  };
  batch("train_batch_size", f.deferred.train_batch);
  batch("train_micro_batch_size_per_gpu", f.deferred.micro_batch);
  batch("gradient_accumulation_steps", f.deferred.accumulation);
  if (f.deferred.micro_batch) set("/training/micro_batch", *f.deferred.micro_batch, c.field("train_micro_batch_size_per_gpu"));

  // Precision.
  bool bf16 = false, fp16 = false, precision_auto = false;
  for (const char* key : {"bf16", "fp16", "amp"}) {
    std::optional<SourceObject> o = c.object(key);
    if (!o) continue;
    const core::Json* enabled = o->get("enabled");
    if (is_auto(enabled)) {
      precision_auto = true;
      add_note(f, o->field("enabled"), "auto", AUTO_NOTE);
    } else if (enabled != nullptr && !enabled->is_boolean()) {
      o->problem("enabled", fmt::format("expected true, false or \"auto\", found {}", core::describe_json(*enabled)));
    } else if (enabled != nullptr && enabled->get<bool>()) {
      if (std::string(key) == "bf16") bf16 = true;
      else fp16 = true;
      if (std::string(key) == "amp") add_note(f, o->field("enabled"), "true", "approximated as fp16 (NVIDIA Apex AMP)");
    }
    o->unread_notes(f.notes, [](const std::string&) { return std::string("no counterpart (loss scaling: no effect on an iteration's time or memory)"); });
  }
  if (bf16 && fp16) diag.add(path, "/bf16/enabled", "bf16 and fp16 cannot both be enabled");
  if (bf16) set("/training/precision", "bf16", c.field("bf16") + "/enabled");
  else if (fp16) set("/training/precision", "fp16", c.field("fp16") + "/enabled");
  else if (!precision_auto) set("/training/precision", "fp32", "/bf16/enabled, /fp16/enabled (absent: DeepSpeed trains in fp32)");

  // ZeRO.
  int64_t stage = 0;
  std::string zfield = "/zero_optimization/stage";
  if (std::optional<SourceObject> z = c.object("zero_optimization")) {
    zfield = z->field("stage");
    stage = z->integer("stage", 0, 3).value_or(0);
    if (const std::optional<bool> overlap = z->boolean("overlap_comm")) set("/parallelism/overlap_grad_reduce", *overlap, z->field("overlap_comm"));
    if (const std::optional<double> e = elements(*z, "reduce_bucket_size"); e && stage >= 1) {
      const double bytes = 4 * *e;  // trainsim counts buckets in fp32 gradient bytes
      set("/parallelism/bucket_size", fmt::format("{:.0f} B", bytes), z->field("reduce_bucket_size"));
    }
    for (const Stage3Key& k : STAGE3_KEYS) {
      const std::optional<double> e = elements(*z, k.deepspeed, 0);
      if (!e) continue;
      if (stage == 3) set(fmt::format("/training/deepspeed/{}", k.scenario), *e, z->field(k.deepspeed));
      else add_note(f, z->field(k.deepspeed), fmt::format("{:g}", *e), "no effect below stage 3");
    }
    std::string states = "none", params = "none";
    std::string ofield, pfield;
    if (std::optional<SourceObject> o = z->object("offload_optimizer")) {
      states = o->choice("device", {"none", "cpu", "nvme"}).value_or("none");
      ofield = o->field("device");
      o->unread_notes(f.notes, [](const std::string&) { return std::string("no counterpart (buffers, pinning, paths: not modelled)"); });
    }
    if (std::optional<SourceObject> o = z->object("offload_param")) {
      params = o->choice("device", {"none", "cpu", "nvme"}).value_or("none");
      pfield = o->field("device");
      o->unread_notes(f.notes, [](const std::string&) { return std::string("no counterpart (buffers, pinning, paths: not modelled)"); });
      if (params != "none" && stage != 3) diag.add(path, pfield, fmt::format("offload_param needs stage 3, found stage {}", stage));
    }
    // DeepSpeed's CPU Adam steps the states where they are; the fp32 gradient partitions travel
    // with them (ZeRO-Offload, ZeRO-Infinity): trainsim's presets.
    if (states != "none" || params != "none") {
      core::Json offload = core::Json::object();
      if (states == "cpu" && params == "none") offload["preset"] = "zero-offload";
      else if (states == "nvme" && params == "nvme") offload["preset"] = "zero-infinity";
      else if (states == "cpu") offload = {{"preset", "zero-offload"}, {"parameters", params}};
      else if (states == "nvme") offload = {{"optimizer_states", "nvme"}, {"gradients", "nvme"}, {"parameters", params}};
      else offload = {{"parameters", params}, {"optimizer_step", "cpu"}, {"optimizer_states", "cpu"}};
      if (states == "none" && params != "none") {
        add_note(f, pfield, params, "offload_param without offload_optimizer: trainsim offloads parameters only with a CPU "
                                    "optimizer step, so the optimizer states are offloaded to the CPU too");
      }
      set("/optimizations/offload", offload, !ofield.empty() ? ofield : pfield);
    }
    z->unread_notes(f.notes, [](const std::string& key) {
      if (key == "allgather_bucket_size") return std::string("no counterpart: trainsim gathers parameters per parallelism.bucket_size");
      if (key.starts_with("zero_quantized") || key.starts_with("zero_hpz")) return std::string("no counterpart: ZeRO++ is not modelled");
      return std::string("no counterpart in trainsim (not modelled)");
    });
  }
  set("/parallelism/zero_stage", stage, zfield);
  if (stage >= 1) set("/parallelism/zero_impl", "deepspeed", zfield);
  set("/training/stack", "deepspeed", zfield);
  f.deferred.data_fills_world = true;
  f.deferred.data_field = "the data-parallel size (DeepSpeed: world size / (tensor x pipeline))";

  // Activation checkpointing: the section configures what the model code turns on.
  if (std::optional<SourceObject> ac = c.object("activation_checkpointing")) {
    set("/parallelism/recompute", "full", c.field("activation_checkpointing"));
    add_note(f, c.field("activation_checkpointing"), "", "imported as recompute full: the model code (Megatron-DeepSpeed "
                                                         "--checkpoint-activations, Hugging Face gradient_checkpointing) turns it on");
    if (const std::optional<bool> cpu = ac->boolean("cpu_checkpointing"); cpu && *cpu) {
      set("/optimizations/offload/activations", "cpu", ac->field("cpu_checkpointing"));
    } else if (cpu) {
      f.matched.push_back(ac->field("cpu_checkpointing"));
    }
    if (const std::optional<bool> partition = ac->boolean("partition_activations"); partition && *partition) {
      add_note(f, ac->field("partition_activations"), "true", "no counterpart: checkpointed activations are not partitioned over the tensor group");
    } else if (partition) {
      f.matched.push_back(ac->field("partition_activations"));
    }
    ac->unread_notes(f.notes, [](const std::string&) { return std::string("no counterpart in trainsim (not modelled)"); });
  }
  if (const std::optional<std::string> dtype = c.string("communication_data_type")) {
    if (*dtype == "fp32" && stage >= 1) {
      set("/parallelism/reduce_dtype", "fp32", c.field("communication_data_type"));
    } else if (*dtype == "fp16" || *dtype == "bf16") {
      f.matched.push_back(c.field("communication_data_type"));
    } else {
      add_note(f, c.field("communication_data_type"), *dtype,
               stage >= 1 ? "no counterpart: trainsim's DeepSpeed reduces gradients in 16 bits or fp32 (parallelism.reduce_dtype)"
                          : "no counterpart: without ZeRO the gradients are all-reduced in fp32 (Megatron-style main gradients)");
    }
  }
  c.unread_notes(f.notes, unread_reason);
  diag.throw_if_any();
  return f;
}

}  // namespace trainsim::plan
