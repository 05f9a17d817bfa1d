#include "sim/plan/scenario.hpp"

#include <array>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/workload_builder.hpp"
#include "network/feasibility.hpp"
#include "sim/plan/pool_placement.hpp"
#include "sim/core/variability.hpp"
#include "sim/plan/calibration_run.hpp"

namespace trainsim::plan {
namespace {

// The largest simulation.max_tasks (and max_flows) accepted: 2^40 tasks would need over 100 TB.
constexpr int64_t MAX_TASKS_LIMIT = int64_t{1} << 40;

const std::vector<std::string> BACKENDS = {"analytic", "simgrid"};
const std::vector<std::string> FIDELITIES = {"step", "flow", "analytic"};
const std::vector<std::string> ALGORITHMS = {"auto", "ring", "tree"};

network::Algorithm algorithm_from(const std::string& s) {
  if (s == "ring") return network::Algorithm::RING;
  if (s == "tree") return network::Algorithm::TREE;
  return network::Algorithm::AUTO;
}

SimulationConfig read_simulation(core::ObjectReader& r) {
  SimulationConfig s;
  s.backend = r.choice("backend", s.backend, BACKENDS);
  engine::parse_fidelity(r.choice("fidelity", std::string(engine::to_string(s.fidelity)), FIDELITIES), s.fidelity);
  s.profile = r.string("profile", "");
  s.symmetry = r.boolean("symmetry", s.symmetry);
  s.replay = r.boolean("replay", s.replay);
  engine::parse_node_symmetry(r.choice("node_symmetry", std::string(engine::to_string(s.node_symmetry)),
                                       {"off", "exact", "approximate"}),
                              s.node_symmetry);
  s.algorithm = algorithm_from(r.choice("algorithm", "auto", ALGORITHMS));
  s.max_tasks = r.integer("max_tasks", s.max_tasks, 1, MAX_TASKS_LIMIT);
  s.max_flows = r.integer("max_flows", s.max_flows, 1, MAX_TASKS_LIMIT);
  s.max_seconds = r.number("max_seconds", s.max_seconds, 0.001, 1e9);
  s.approximate_over_budget = r.choice("over_budget", "approximate", {"approximate", "refuse"}) == "approximate";
  r.finish();
  return s;
}

// optimizations.pruning (models/pruning.hpp); the GPU and precision checks come with the other
// cross-section checks.
void read_pruning(core::ObjectReader& optimizations, Scenario& s) {
  if (auto p = optimizations.object("pruning")) s.pruning = models::PruningConfig::from_json(*p);
}

// optimizations.offload (models/offload.hpp); its checks come with the other cross-section checks.
void read_offload(core::ObjectReader& optimizations, Scenario& s) {
  if (auto o = optimizations.object("offload")) s.offload = models::OffloadConfig::from_json(*o);
}

// optimizations.gradient_compression (models/compression.hpp); its checks against the strategy,
// pruning and the GPU come with the other cross-section checks.
void read_compression(core::ObjectReader& optimizations, Scenario& s) {
  if (auto c = optimizations.object("gradient_compression")) s.compression = models::CompressionConfig::from_json(*c);
}

// Gradient compression against the strategy and pruning (models::check_compression), and
// PowerSGD's fp32 products against the GPU.
void check_compression(const Scenario& s, core::Diagnostics& diag) {
  models::check_compression(s.compression, s.model, s.parallelism, s.pruning, s.file, diag);
  if (s.compression.method == models::CompressionMethod::POWERSGD &&
      s.cluster.gpu_spec.peak(core::Precision::FP32).value() <= 0) {
    diag.add(s.file, "/optimizations/gradient_compression/method",
             fmt::format("PowerSGD multiplies fp32 gradients, and {} has no fp32 rate (cluster.gpu.dense_peak)",
                         s.cluster.gpu));
  }
}

// training.checkpoint needs somewhere to write (cluster.storage.parallel_fs; multilevel also
// node_local).
void check_checkpoint(const Scenario& s, core::Diagnostics& diag) {
  if (!s.training.checkpoint) return;
  const models::CheckpointConfig& c = *s.training.checkpoint;
  if (!s.cluster.storage || !s.cluster.storage->parallel_fs) {
    diag.add(s.file, "/training/checkpoint",
             "needs cluster.storage.parallel_fs (write_bandwidth and read_bandwidth, aggregate): where checkpoints go");
    return;
  }
  if (c.mode == models::CheckpointMode::MULTILEVEL && !s.cluster.storage->node_local) {
    diag.add(s.file, "/training/checkpoint/mode",
             "\"multilevel\" needs cluster.storage.node_local (write_bandwidth and read_bandwidth per node)");
  }
}

// Offloaded model states must fit in each node's host memory and on its NVMe drives.
void check_offload_capacity(const Scenario& s, core::Diagnostics& diag) {
  if (!s.offload.active()) return;
  const OffloadFootprint f = offload_footprint(s);
  if (f.host_bytes_per_node > s.cluster.host_memory.value()) {
    diag.add(s.file, "/cluster/host_memory",
             fmt::format("OUT OF HOST MEMORY: the offloaded model states need {} per node, above cluster.host_memory "
                         "({}): offload less, spread the model over more nodes, or raise cluster.host_memory",
                         core::format_bytes(core::Bytes(f.host_bytes_per_node)), core::format_bytes(s.cluster.host_memory)));
  }
  if (s.cluster.nvme && s.cluster.nvme->capacity && f.nvme_bytes_per_node > s.cluster.nvme->capacity->value()) {
    diag.add(s.file, "/cluster/nvme/capacity",
             fmt::format("the model states offloaded to NVMe need {} per node, above the drives' capacity ({})",
                         core::format_bytes(core::Bytes(f.nvme_bytes_per_node)),
                         core::format_bytes(*s.cluster.nvme->capacity)));
  }
}

Expectation read_expectation(core::ObjectReader& r) {
  Expectation e;
  // A measurement is positive; mfu is a fraction of the peak, so at most 1 (45% is written 0.45).
  auto measured = [&](std::string_view key, std::optional<double> max) -> std::optional<double> {
    const core::Json* v = r.raw(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number() || !(v->get<double>() > 0)) {
      r.problem(key, fmt::format("expected a measured value (a positive number), found {}", core::describe_json(*v)));
      return std::nullopt;
    }
    if (max && v->get<double>() > *max) {
      r.problem(key, fmt::format("expected a fraction of the peak in (0, {:g}] (45% is 0.45), found {}", *max,
                                 core::describe_json(*v)));
      return std::nullopt;
    }
    return v->get<double>();
  };
  e.iteration_time_s = measured("iteration_time_s", std::nullopt);
  e.model_tflops_per_gpu = measured("model_tflops_per_gpu", std::nullopt);
  e.tokens_per_s = measured("tokens_per_s", std::nullopt);
  e.mfu = measured("mfu", 1.0);
  e.hardware_tflops_per_gpu = measured("hardware_tflops_per_gpu", std::nullopt);
  e.peak_memory_gib = measured("peak_memory_gib", std::nullopt);
  e.source = r.string("source", "");
  e.note = r.string("note", "");
  r.finish();
  return e;
}

// Reads the profile named by the scenario over `profile` (the GPU's built-in one); problems are reported against the profile
// file itself, plus one line at /simulation/profile if it cannot be opened.
void read_profile(const std::string& scenario_file, const std::string& profile_path, core::Profile& profile,
                  std::shared_ptr<const CalibrationRun>& calibration_run, core::Diagnostics& diag) {
  std::filesystem::path p(profile_path);
  if (p.is_relative() && !scenario_file.empty()) p = std::filesystem::path(scenario_file).parent_path() / p;
  core::Json doc;
  try {
    doc = core::load_json_file(p.string());
  } catch (const core::InputError& e) {
    diag.add(scenario_file, "/simulation/profile", e.problems().front().to_string());
    return;
  }
  core::ObjectReader r(doc, p.string(), "", diag);
  profile = core::Profile::from_json(r, profile);
  if (doc.is_object() && doc.contains("calibration_run")) {
    core::ObjectReader run(doc["calibration_run"], p.string(), "/calibration_run", diag);
    calibration_run = std::make_shared<const CalibrationRun>(CalibrationRun::from_json(run));
  }
}

// Where the profile that decides a mismatch came from, for its message: the scenario's embedded
// "profile" (with the source it was written from: `check --resolve-profile`, `run --out`), else the
// profile file (its path, as before).
std::string profile_origin(const Scenario& s) {
  if (s.inline_profile.is_null()) return s.profile.device.source;
  const core::Json* written_from = s.inline_profile.contains("source") && s.inline_profile["source"].is_string()
                                       ? &s.inline_profile["source"]
                                       : nullptr;
  return fmt::format("embedded in {} (\"profile\"{})", s.file,
                     written_from ? fmt::format(", from: {}", written_from->get<std::string>()) : "");
}

// What to do about a mismatch: an embedded profile is dropped for the GPU's own built-in one.
std::string mismatch_remedy(const Scenario& s) {
  const network::ClusterConfig& c = s.cluster;
  const std::string gpu = c.gpu_described && !c.gpu_base.empty() ? c.gpu_base : c.gpu;
  if (s.inline_profile.is_null()) return fmt::format("calibrate on {}", gpu);
  const bool catalog = core::find_gpu(gpu) != nullptr;
  return fmt::format("remove \"profile\" from the scenario to use {}, or calibrate on {}",
                     catalog ? fmt::format("the built-in profile of {} (GPU catalog)", gpu) : "the datasheet defaults",
                     gpu);
}

// Scenario::warnings and profile_mismatch: where the device profile does not describe the
// scenario's GPU. A described GPU's base counts as its GPU (its built-in profile is the base's).
// `own_profile`: the scenario names a profile file or has an inline one.
void check_profile_gpu(Scenario& s, bool own_profile) {
  const network::ClusterConfig& c = s.cluster;
  if (c.gpu_described && c.gpu_base.empty() && !own_profile) {
    s.warnings.push_back(fmt::format(
        "cluster.gpu describes \"{}\" without a \"base\": its compute efficiencies are the datasheet defaults "
        "(`trainsim describe profile`), not a GPU's built-in profile; give \"base\" (the catalog GPU it is "
        "closest to) or a calibrated simulation.profile",
        c.gpu));
  }
  const std::string& fitted = s.profile.device.fitted_on.gpu;
  if (fitted.empty() || fitted == c.gpu || (c.gpu_described && fitted == c.gpu_base)) return;
  const bool based = c.gpu_described && !c.gpu_base.empty();
  s.profile_mismatch = fmt::format(
      "the profile {} was fitted on {}, not on the scenario's {}{}: its efficiencies describe another GPU's kernels; {}",
      profile_origin(s), fitted, c.gpu, based ? fmt::format(" (base {})", c.gpu_base) : "", mismatch_remedy(s));
  s.warnings.push_back(s.profile_mismatch + " (`run --strict-profile` makes this an error)");
}

// parallelism.data "auto": replaces it in `section` by world / (tensor x pipeline x context x
// expert), expert left out when folded (expert_tensor given). Returns the problem when that does not
// divide, for the cross-section phase (the section itself is well-formed); a string other than
// "auto" is a malformed value and goes to `diag` at once. A malformed other degree leaves data at 1:
// its own reader reports it.
std::optional<core::InputProblem> resolve_auto_data(core::Json& section, int world, const std::string& file,
                                                    core::Diagnostics& diag) {
  if (!section.is_object() || !section.contains("data") || !section["data"].is_string()) return std::nullopt;
  const std::string pointer = "/parallelism/data";
  if (section["data"] != "auto") {
    diag.add(file, pointer,
             fmt::format("expected a positive integer or \"auto\" (the degree that fills the cluster), found {}",
                         core::describe_json(section["data"])));
    section.erase("data");
    return std::nullopt;
  }
  section["data"] = 1;
  const bool folded = section.contains("expert_tensor");
  std::vector<std::string> names = {"tensor", "pipeline", "context"};
  if (!folded) names.push_back("expert");
  if (section.contains("spatial")) names.push_back("spatial");  // layer-graph models (docs/cnn.md)
  std::vector<int64_t> sizes;
  double product = 1;  // a double: the degrees are not range-checked yet and could overflow
  for (const std::string& name : names) {
    int64_t v = 1;
    if (section.contains(name)) {
      const core::Json& j = section[name];
      if (!j.is_number_integer() || j.get<int64_t>() < 1) return std::nullopt;
      v = j.get<int64_t>();
    }
    sizes.push_back(v);
    product *= static_cast<double>(v);
  }
  if (product > world || world % static_cast<int64_t>(product) != 0) {
    return core::InputProblem{
        file, pointer,
        fmt::format("\"auto\" needs the cluster's {} GPUs to be a multiple of {} = {} = {:.0f}", world,
                    fmt::join(names, " x "), fmt::join(sizes, " x "), product)};
  }
  section["data"] = world / static_cast<int64_t>(product);
  return std::nullopt;
}

}  // namespace

std::vector<MeasuredFigure> Expectation::figures() const {
  std::vector<MeasuredFigure> out;
  auto add = [&out](const char* metric, const std::optional<double>& v) {
    if (v) out.push_back({metric, *v});
  };
  add("iteration_time_s", iteration_time_s);
  add("model_tflops_per_gpu", model_tflops_per_gpu);
  add("tokens_per_s", tokens_per_s);
  add("mfu", mfu);
  add("hardware_tflops_per_gpu", hardware_tflops_per_gpu);
  add("peak_memory_gib", peak_memory_gib);
  return out;
}

core::Json SimulationConfig::to_json() const {
  core::Json j;
  j["backend"] = backend;
  if (!profile.empty()) j["profile"] = profile;
  j["symmetry"] = symmetry;
  j["replay"] = replay;
  j["algorithm"] = network::to_string(algorithm);
  j["fidelity"] = std::string(engine::to_string(fidelity));
  j["max_tasks"] = max_tasks;
  j["max_flows"] = max_flows;
  if (max_seconds != DEFAULT_MAX_SECONDS) j["max_seconds"] = max_seconds;  // likewise (below)
  if (!approximate_over_budget) j["over_budget"] = "refuse";  // the default is left out: reports stay as they were
  if (node_symmetry != engine::NodeSymmetry::EXACT) j["node_symmetry"] = std::string(engine::to_string(node_symmetry));  // likewise
  return j;
}

core::Json Scenario::to_json(ProfileOut profile_out) const {
  core::Json j;
  j["name"] = name;
  j["cluster"] = cluster.to_json();
  j["cluster"]["power"] = power.to_json();
  if (cluster.gpu_described && cluster.pools.empty()) gpu_power_to_json(gpu_power, core::catalog_gpu_power(cluster.gpu_base), j["cluster"]["gpu"]);
  // The failure figures use the default reliability: show it where it is used.
  if (training.checkpoint && !cluster.reliability) j["cluster"]["reliability"] = network::to_json(network::ReliabilitySpec{});
  j["model"] = model.to_json();
  j["training"] = training.to_json();
  j["parallelism"] = parallelism.to_json();
  j["optimizations"] = core::Json::object();
  if (pruning.enabled()) j["optimizations"]["pruning"] = pruning.to_json();
  if (offload.active() || offload.preset != "none") j["optimizations"]["offload"] = offload.to_json();
  if (compression.enabled()) j["optimizations"]["gradient_compression"] = compression.to_json();
  j["simulation"] = simulation.to_json();
  // Several GPU types: each pool's GPU gets its built-in profile, which reading the scenario back
  // rebuilds; there is no one profile to embed.
  if (profile_out == ProfileOut::RESOLVED && cluster.pools.empty()) {
    j["profile"] = profile.to_json();
    j["profile"]["source"] = profile.device.source;  // read back as the embedded profile's origin
  } else if (!inline_profile.is_null()) {
    j["profile"] = inline_profile;
  }
  if (expect) {
    core::Json e = core::Json::object();
    for (const MeasuredFigure& f : expect->figures()) e[f.metric] = f.value;
    if (!expect->source.empty()) e["source"] = expect->source;
    if (!expect->note.empty()) e["note"] = expect->note;
    j["expect"] = e;
  }
  return j;
}

void apply_override(core::Json& doc, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw core::InputError("--set", "", fmt::format("expected key.path=value, found \"{}\"", assignment));
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  core::Json value;
  try {
    value = core::Json::parse(text);
  } catch (const core::Json::out_of_range&) {
    // Valid JSON syntax for a number beyond a double (1e309): a value no field accepts.
    throw core::InputError("--set", "", fmt::format("{}: expected a number within a double's range, found {}", path, text));
  } catch (const core::Json::parse_error&) {
    value = text;
  }
  std::vector<std::string> keys;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    keys.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  core::Json* node = &doc;
  std::string pointer;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].empty()) {
      throw core::InputError("--set", "", fmt::format("empty key in \"{}\"", path));
    }
    if (node->is_string() && (pointer == "/model" || pointer == "/cluster/gpu")) {
      // A catalog model or GPU name becomes {"base": name} so that single fields can be overridden.
      *node = core::Json{{"base", node->get<std::string>()}};
    }
    if (node->is_null()) *node = core::Json::object();
    if (!node->is_object()) {
      throw core::InputError("--set", pointer,
                             fmt::format("cannot set \"{}\": {} is {}, not an object", path, pointer,
                                         core::describe_json(*node)));
    }
    pointer = core::append_pointer(pointer, keys[i]);
    node = &(*node)[keys[i]];
  }
  *node = value;
}

namespace {

// The GPU object's power keys (core::read_gpu_power), read here rather than by core::read_gpu.
constexpr std::array<const char*, 3> GPU_POWER_KEYS = {"tdp", "idle_power", "power_cap"};

// Takes the power keys out of `doc`'s cluster section: "power" (read into s.power now) and the GPU
// object's GPU_POWER_KEYS (returned, read by read_gpu_power once the GPU is known). What is left is
// the cluster section network::ClusterConfig reads.
core::Json take_power_keys(core::Json& doc, const std::string& file, Scenario& s, core::Diagnostics& diag) {
  core::Json gpu_keys = core::Json::object();
  if (!doc.is_object() || !doc.contains("cluster") || !doc["cluster"].is_object()) return gpu_keys;
  core::Json& cluster = doc["cluster"];
  if (cluster.contains("power")) {
    core::ObjectReader parent(cluster, file, "/cluster", diag);
    if (auto power = parent.object("power")) s.power = core::ClusterPower::from_json(*power);
    cluster.erase("power");
  }
  if (cluster.contains("gpu") && cluster["gpu"].is_object()) {
    for (const char* key : GPU_POWER_KEYS) {
      if (!cluster["gpu"].contains(key)) continue;
      gpu_keys[key] = cluster["gpu"][key];
      cluster["gpu"].erase(key);
    }
  }
  return gpu_keys;
}

// The GPU's power: its catalog figures (a described GPU's base's; none from scratch), then the
// object's power keys.
void read_gpu_power_keys(const core::Json& gpu_keys, const std::string& file, Scenario& s, core::Diagnostics& diag) {
  s.gpu_power = core::catalog_gpu_power(s.cluster.profile_gpu());
  core::ObjectReader r(gpu_keys, file, "/cluster/gpu", diag);
  core::read_gpu_power(r, s.gpu_power);
}

}  // namespace

core::DeviceProfile device_for_stack(const Scenario& s, core::Stack stack) {
  if (s.profile_given) return s.profile.device;
  core::DeviceProfile d = s.unstacked_device;
  core::apply_stack(d, stack, s.training.compile, s.cluster.profile_gpu());
  d.straggler_slowdown = s.profile.device.straggler_slowdown;
  return d;
}

Scenario read_scenario(const core::Json& given, const std::string& file, StrategyCheck strategy) {
  core::Diagnostics diag;
  Scenario s;
  core::Json doc = given;  // less the power keys, which are read here (take_power_keys)
  const core::Json gpu_power_keys = take_power_keys(doc, file, s, diag);
  core::ObjectReader root(doc, file, "", diag);
  s.file = file;
  s.name = root.string("name", file.empty() ? "scenario" : std::filesystem::path(file).stem().string());

  if (auto c = root.object("cluster")) {
    s.cluster = network::ClusterConfig::from_json(*c);
    read_gpu_power_keys(gpu_power_keys, file, s, diag);
  } else {
    root.problem("cluster", "missing required object (gpu, nodes, gpus_per_node, network)");
  }
  if (const core::Json* m = root.raw("model")) {
    s.model = models::ModelSpec::from_json(*m, file, "/model", diag);
  } else {
    root.problem("model", "missing required model (a catalog name such as \"gpt3-175b\", or a spec object)");
  }
  if (auto t = root.object("training")) {
    s.training = models::TrainingConfig::from_json(*t);
  } else {
    root.problem("training", "missing required object (sequence_length, global_batch, micro_batch, precision)");
  }
  std::optional<core::InputProblem> auto_data_problem;
  if (const core::Json* p = root.raw("parallelism")) {
    core::Json section = *p;  // a copy: "data": "auto" is replaced by the degree it resolves to
    auto_data_problem = resolve_auto_data(section, s.cluster.world_size(), file, diag);
    core::ObjectReader reader(section, file, "/parallelism", diag);
    s.parallelism = models::ParallelismConfig::from_json(reader, s.training.stack);
  }
  if (auto o = root.object("optimizations")) {
    read_pruning(*o, s);
    read_offload(*o, s);
    read_compression(*o, s);
    o->finish();
  }
  if (auto sim = root.object("simulation")) s.simulation = read_simulation(*sim);
  if (auto e = root.object("expect")) s.expect = read_expectation(*e);
  std::optional<core::ObjectReader> inline_profile = root.object("profile");
  root.finish();

  s.profile.device = core::DeviceProfile::defaults_for(s.cluster.profile_gpu());
  s.unstacked_device = s.profile.device;
  s.profile_given = !s.simulation.profile.empty() || inline_profile.has_value();
  // The stack's kernel costs amend the built-in profile; a profile file (a user's own calibrated
  // run) then overrides what it measured.
  core::apply_stack(s.profile.device, models::resolved_stack(s.training, s.parallelism), s.training.compile,
                    s.cluster.profile_gpu());
  if (!s.simulation.profile.empty()) read_profile(file, s.simulation.profile, s.profile, s.calibration_run, diag);
  if (inline_profile) {
    s.inline_profile = doc.at("profile");
    s.profile = core::Profile::from_json(*inline_profile, s.profile);
    // A profile written by `check --resolve-profile` or `run --out` says where it came from.
    if (s.inline_profile.contains("source") && s.inline_profile["source"].is_string()) {
      s.profile.device.source = s.profile.network.source = s.inline_profile["source"].get<std::string>();
    }
  }

  s.profile.device.straggler_slowdown = core::straggler_slowdown(s.cluster.gpu_speed_spread, s.cluster.world_size());
  diag.throw_if_any();
  check_profile_gpu(s, s.profile_given);

  // Cross-section checks only make sense once every section parsed.
  core::Diagnostics impossible;
  const bool pools_ok = check_pools(s, impossible);
  if (auto_data_problem) {
    impossible.add(*auto_data_problem);  // the strategy's world size is meaningless without a data degree
  } else if (strategy == StrategyCheck::CHECK) {
    models::check_strategy(s.model, strategy_training(s), s.parallelism, s.cluster.world_size(), file, impossible);
  }
  if (strategy == StrategyCheck::CHECK) {
    network::check_feasibility(s.cluster, file, "/cluster", impossible);
    models::check_offload(s.offload, s.parallelism, s.cluster.nvme.has_value(), file, impossible);
    if (impossible.empty()) check_offload_capacity(s, impossible);
    check_compression(s, impossible);
  }
  if (s.cluster.pools.empty() && s.cluster.gpu_spec.peak(s.training.precision).value() <= 0) {
    impossible.add(file, "/training/precision",
                   fmt::format("{} has no {} tensor-core rate {}", s.cluster.gpu,
                               core::to_string(s.training.precision),
                               s.cluster.gpu_described ? "(cluster.gpu.dense_peak)"
                                                       : "in the GPU catalog (see `trainsim describe gpus`)"));
  }
  models::check_pruning(s.pruning, s.cluster.gpu_spec, s.training.precision, file, impossible);
  if (s.model.is_layer_graph()) {
    // What the layer-graph builder does not model (docs/cnn.md): each an error, not a silent no-op.
    if (s.pruning.enabled()) impossible.add(file, "/optimizations/pruning", "pruning is not modelled for layer-graph models");
    if (s.offload.active()) {
      impossible.add(file, "/optimizations/offload", "offloading is not modelled for layer-graph models");
    }
    if (s.compression.enabled()) {
      impossible.add(file, "/optimizations/gradient_compression", "gradient compression is not modelled for layer-graph models");
    }
    if (s.training.checkpoint) impossible.add(file, "/training/checkpoint", "checkpointing is not modelled for layer-graph models");
    if (s.training.tokens) {
      impossible.add(file, "/training/tokens",
                     "a layer-graph model trains on samples, not tokens: time to train by tokens does not apply");
    }
  }
  if (impossible.empty()) check_checkpoint(s, impossible);
  if (!impossible.empty()) throw ImpossibleScenario(impossible.problems());
  models::resolve_defaults(s.model, s.parallelism);
  if (pools_ok && !s.cluster.pools.empty()) {
    // The balanced splits build a workload of the resolved layout (pool_placement.hpp).
    resolve_pools(s, impossible, strategy == StrategyCheck::CHECK);
    if (!impossible.empty()) throw ImpossibleScenario(impossible.problems());
  }
  for (std::string& w : models::compression_warnings(s.compression, s.training, s.parallelism)) {
    s.warnings.push_back(std::move(w));
  }
  if (strategy == StrategyCheck::CHECK) check_task_budget(s);
  return s;
}

bool within_task_budget(const models::ModelSpec& m, const models::TrainingConfig& t, const models::ParallelismConfig& p,
                        int64_t max_tasks, const models::OffloadConfig& offload,
                        const models::CompressionConfig& compression) {
  return models::estimate_task_count(m, t, p, offload, compression) <= static_cast<double>(max_tasks);
}

OffloadFootprint offload_footprint(const Scenario& s) {
  return offload_footprint(s.model, s.training, s.parallelism, s.cluster, s.offload);
}

OffloadFootprint offload_footprint(const models::ModelSpec& m, const models::TrainingConfig& t,
                                   const models::ParallelismConfig& p, const network::ClusterConfig& c,
                                   const models::OffloadConfig& o) {
  OffloadFootprint f;
  const std::vector<models::ParameterCount> stages = models::stage_parameters(m, t, p);
  std::vector<double> host, nvme;
  for (const models::ParameterCount& local : stages) {
    const models::StateSplit split = models::split_model_states(local, t, p, o);
    host.push_back(split.host.total().value());
    nvme.push_back(split.nvme.total().value());
  }
  // Ranks are laid out pipeline-slowest (Megatron's order): rank r runs stage r / (world / pipeline).
  const int per_stage = c.world_size() / p.pipeline;
  for (int node = 0; node < c.nodes; ++node) {
    double h = 0, n = 0;
    for (int g = 0; g < c.gpus_per_node; ++g) {
      const size_t stage = static_cast<size_t>((node * c.gpus_per_node + g) / per_stage);
      h += host[stage];
      n += nvme[stage];
    }
    f.host_bytes_per_node = std::max(f.host_bytes_per_node, h);
    f.nvme_bytes_per_node = std::max(f.nvme_bytes_per_node, n);
  }
  return f;
}

void check_task_budget(const Scenario& s) {
  // A batch split over GPU types: the uniform job whose replicas all run the most micro-batches.
  const models::TrainingConfig training = strategy_training(s);
  if (within_task_budget(s.model, training, s.parallelism, s.simulation.max_tasks, s.offload, s.compression)) return;
  const double tasks = models::estimate_task_count(s.model, training, s.parallelism, s.offload, s.compression);
  throw ImpossibleScenario(
      s.file, "/simulation/max_tasks",
      fmt::format("the workload would have about {:.3g} tasks ({} micro-batches of {} layers; about {:.3g} GB of "
                  "memory), above the budget of {} tasks (simulation.max_tasks): raise training.micro_batch, "
                  "lower training.global_batch, or raise simulation.max_tasks",
                  tasks, models::micro_batch_count(training, s.parallelism), s.model.layers,
                  tasks * TASK_BYTES / 1e9, s.simulation.max_tasks));
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  core::Json doc = core::load_scenario_file(path);
  for (const std::string& o : overrides) apply_override(doc, o);
  return read_scenario(doc, path);
}

}  // namespace trainsim::plan
