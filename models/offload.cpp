#include "models/offload.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "models/workload_builder.hpp"
#include "sim/core/error.hpp"

namespace trainsim::models {
namespace {

const std::vector<std::string> TARGETS = {"none", "cpu", "nvme"};
const std::vector<std::string> HOST_ONLY = {"none", "cpu"};
const std::vector<std::string> STEPS = {"cpu", "gpu"};

OffloadTarget target_of(const std::string& s) {
  if (s == "cpu") return OffloadTarget::CPU;
  if (s == "nvme") return OffloadTarget::NVME;
  return OffloadTarget::NONE;
}

void add(OffloadedStates& host, OffloadedStates& nvme, OffloadTarget where, core::Bytes OffloadedStates::*field,
         core::Bytes bytes) {
  if (where == OffloadTarget::CPU) host.*field += bytes;
  if (where == OffloadTarget::NVME) nvme.*field += bytes;
}

}  // namespace

std::string to_string(OffloadTarget t) { return TARGETS[static_cast<size_t>(t)]; }

bool OffloadConfig::active() const {
  return optimizer_states != OffloadTarget::NONE || master_weights != OffloadTarget::NONE ||
         gradients != OffloadTarget::NONE || parameters != OffloadTarget::NONE || activations != OffloadTarget::NONE;
}

bool OffloadConfig::uses_nvme() const {
  return optimizer_states == OffloadTarget::NVME || master_weights == OffloadTarget::NVME ||
         gradients == OffloadTarget::NVME || parameters == OffloadTarget::NVME;
}

const std::vector<std::string>& OffloadConfig::presets() {
  static const std::vector<std::string> names = {"none", "zero-offload", "zero-infinity", "axonn"};
  return names;
}

OffloadConfig offload_preset(const std::string& name) {
  OffloadConfig o;
  o.preset = name;
  if (name == "zero-offload") {
    o.optimizer_states = o.master_weights = o.gradients = OffloadTarget::CPU;
    o.step_on_host = true;
  } else if (name == "zero-infinity") {
    o.optimizer_states = o.master_weights = o.gradients = o.parameters = OffloadTarget::NVME;
    o.step_on_host = true;
  } else if (name == "axonn") {
    o.optimizer_states = o.master_weights = OffloadTarget::CPU;
    o.overlap = false;
  } else {
    TRAINSIM_CHECK(name == "none", fmt::format("unknown offload preset \"{}\"", name));
  }
  return o;
}

OffloadConfig OffloadConfig::from_json(core::ObjectReader& r) {
  OffloadConfig o = offload_preset(r.choice("preset", "none", presets()));
  o.optimizer_states = target_of(r.choice("optimizer_states", to_string(o.optimizer_states), TARGETS));
  // The master weights follow the states unless given (a preset spells them out).
  const OffloadTarget master = o.preset == "none" ? o.optimizer_states : o.master_weights;
  o.master_weights = target_of(r.choice("master_weights", to_string(master), TARGETS));
  o.gradients = target_of(r.choice("gradients", to_string(o.gradients), TARGETS));
  o.parameters = target_of(r.choice("parameters", to_string(o.parameters), TARGETS));
  o.activations = target_of(r.choice("activations", to_string(o.activations), HOST_ONLY));
  const bool host_default = o.preset == "none" ? o.states_off_gpu() : o.step_on_host;
  o.step_on_host = r.choice("optimizer_step", host_default ? "cpu" : "gpu", STEPS) == "cpu";
  o.overlap = r.boolean("overlap", o.overlap);
  r.finish();
  return o;
}

core::Json OffloadConfig::to_json() const {
  core::Json j;
  j["preset"] = preset;
  j["optimizer_states"] = to_string(optimizer_states);
  j["master_weights"] = to_string(master_weights);
  j["gradients"] = to_string(gradients);
  j["parameters"] = to_string(parameters);
  j["activations"] = to_string(activations);
  j["optimizer_step"] = step_on_host ? "cpu" : "gpu";
  j["overlap"] = overlap;
  return j;
}

std::string OffloadConfig::describe() const {
  if (!active()) return "none";
  std::string out;
  for (const OffloadTarget where : {OffloadTarget::CPU, OffloadTarget::NVME}) {
    std::vector<std::string> what;
    if (optimizer_states == where) what.push_back("optimizer states");
    if (master_weights == where) what.push_back("master weights");
    if (gradients == where) what.push_back("gradients");
    if (parameters == where) what.push_back("parameters");
    if (activations == where) what.push_back("activations");
    if (what.empty()) continue;
    std::string list;
    for (size_t i = 0; i < what.size(); ++i) list += (i == 0 ? "" : ", ") + what[i];
    out += fmt::format("{}{} -> {}", out.empty() ? "" : "; ", list, to_string(where));
  }
  return fmt::format("{}; optimizer step on {}; {}", out, step_on_host ? "cpu" : "gpu",
                     overlap ? "overlapped" : "not overlapped");
}

void check_offload(const OffloadConfig& o, const ParallelismConfig& p, bool has_nvme, const std::string& file,
                   core::Diagnostics& diag) {
  const std::string at = "/optimizations/offload/";
  if (o.step_on_host && (o.optimizer_states == OffloadTarget::NONE || o.master_weights == OffloadTarget::NONE)) {
    diag.add(file, at + "optimizer_step",
             fmt::format("\"cpu\" needs the optimizer states and the master weights off the GPU (\"cpu\" or "
                         "\"nvme\"), found optimizer_states \"{}\", master_weights \"{}\"",
                         to_string(o.optimizer_states), to_string(o.master_weights)));
  }
  if (!o.step_on_host && (o.gradients != OffloadTarget::NONE || o.parameters != OffloadTarget::NONE)) {
    diag.add(file, at + "optimizer_step",
             fmt::format("\"gpu\" cannot update {} in host memory: offloaded {} need optimizer_step \"cpu\" (as "
                         "ZeRO-Offload and ZeRO-Infinity run it)",
                         o.gradients != OffloadTarget::NONE ? "gradients" : "parameters",
                         o.gradients != OffloadTarget::NONE ? "gradients" : "parameters"));
  }
  if (o.parameters != OffloadTarget::NONE && p.zero_stage != 3) {
    diag.add(file, at + "parameters",
             fmt::format("offloading parameters needs parallelism.zero_stage 3 (DeepSpeed offload_param), found "
                         "zero_stage {}",
                         p.zero_stage));
  }
  if (!has_nvme) {
    for (const auto& [key, where] : {std::pair<const char*, OffloadTarget>{"optimizer_states", o.optimizer_states},
                                     {"master_weights", o.master_weights},
                                     {"gradients", o.gradients},
                                     {"parameters", o.parameters}}) {
      if (where != OffloadTarget::NVME) continue;
      diag.add(file, at + key,
               "\"nvme\" needs the nodes' NVMe drives described in cluster.nvme (read_bandwidth, write_bandwidth, "
               "optionally capacity)");
    }
  }
}

OffloadedStates& OffloadedStates::operator+=(const OffloadedStates& o) {
  optimizer_states += o.optimizer_states;
  master_weights += o.master_weights;
  gradients += o.gradients;
  weights += o.weights;
  return *this;
}

double master_weight_bytes_per_parameter(core::Precision p) {
  return activation_element_bytes(p) == 4 ? 0.0 : 4.0;
}

double moment_bytes_per_parameter() { return 8.0; }

StateSplit split_model_states(const ParameterCount& local, const TrainingConfig& t, const ParallelismConfig& p,
                              const OffloadConfig& o) {
  return split_model_states(model_state_memory(local, t, p), local, t, p, o);
}

StateSplit split_model_states(const MemoryBreakdown& states, const ParameterCount& local, const TrainingConfig& t,
                              const ParallelismConfig& p, const OffloadConfig& o) {
  StateSplit s;
  s.gpu = states;
  // The optimizer states' bytes split into moments and master weights (and size the fp32 gradient
  // partition) in proportion, so that a sparse storage of them (pruning) carries over.
  const double partition = states.optimizer_states.value() / optimizer_bytes_per_parameter(t.precision);
  const core::Bytes moments(partition * moment_bytes_per_parameter());
  const core::Bytes master(partition * master_weight_bytes_per_parameter(t.precision));
  if (o.optimizer_states != OffloadTarget::NONE) s.gpu.optimizer_states -= moments;
  if (o.master_weights != OffloadTarget::NONE) s.gpu.optimizer_states -= master;
  add(s.host, s.nvme, o.optimizer_states, &OffloadedStates::optimizer_states, moments);
  add(s.host, s.nvme, o.master_weights, &OffloadedStates::master_weights, master);
  if (o.gradients != OffloadTarget::NONE) {
    s.gpu.gradients =
        core::Bytes(std::min(local.total(), p.bucket_elements()) * activation_element_bytes(t.precision));
    add(s.host, s.nvme, o.gradients, &OffloadedStates::gradients, core::Bytes(partition * gradient_bytes_per_parameter()));
  }
  if (o.parameters != OffloadTarget::NONE) {
    add(s.host, s.nvme, o.parameters, &OffloadedStates::weights, s.gpu.weights);
    s.gpu.weights = core::Bytes(0);
  }
  return s;
}

bool gradients_per_step_on_gpu(const ParallelismConfig& p, const OffloadConfig& o) {
  return p.gradients_per_step && o.gradients == OffloadTarget::NONE;
}

std::vector<ParameterCount> stage_parameters(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  const std::vector<int> split = p.stage_layers.empty() ? balanced_split(m.layers, p.pipeline_chunks()) : p.stage_layers;
  std::vector<ParameterCount> out(static_cast<size_t>(p.pipeline));
  int first = 0;
  for (int pos = 0; pos < p.pipeline_chunks(); ++pos) {
    ParameterCount& stage = out[static_cast<size_t>(pos % p.pipeline)];
    for (int layer = first; layer < first + split[static_cast<size_t>(pos)]; ++layer) {
      stage += layer_parameters(m, p, m.layer_kind(layer));
    }
    first += split[static_cast<size_t>(pos)];
    if (pos == 0) stage += embedding_parameters(m, t, p);
    if (pos == p.pipeline_chunks() - 1) stage += head_parameters(m, p);
  }
  return out;
}

}  // namespace trainsim::models
