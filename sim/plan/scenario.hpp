#pragma once
// A scenario file: one JSON document (comments allowed) describing the cluster, the model, the
// training run, the parallelization strategy, optimizations, and how to simulate it. Each module
// reads its own section; this file only ties them together and owns the "simulation" section and
// the validation "expect" block.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "models/compression.hpp"
#include "models/offload.hpp"
#include "models/pruning.hpp"
#include "models/strategy.hpp"
#include "network/cluster.hpp"
#include "network/collective_cost.hpp"
#include "sim/core/device.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/power.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim::plan {

struct CalibrationRun;  // calibration_run.hpp

// Default of simulation.max_tasks: the most tasks the workload's programs (one per pipeline stage)
// may have. Memory grows by about TASK_BYTES per task (measured 120-170 bytes: the task and
// dependency records plus the executor's state; each further simulated rank adds about 16 bytes
// per task), so the default bounds a prediction to about 2 GB; the largest bundled scenario or
// validation case has 2.7 million tasks (docs/scenario.md).
inline constexpr int64_t DEFAULT_MAX_TASKS = 12'000'000;
inline constexpr double TASK_BYTES = 170;
// Default of simulation.max_flows: the most network flows (engine::flows_lower_bound) one SimGrid
// flow-fidelity simulation may run. SimGrid runs 0.05-0.5 million flows per CPU-second
// (../shared/SIMGRID-NOTES.md), so the default bounds a run to about 1-7 minutes; the largest bundled
// scenario or validation case that finishes in useful time needs 4.3 million (docs/scenario.md).
inline constexpr int64_t DEFAULT_MAX_FLOWS = 20'000'000;
// Default of simulation.max_seconds: the most SimGrid CPU seconds (engine::FlowEstimate::cpu_seconds,
// each call's flows at SimGrid's rate for that many in flight) one flow-fidelity simulation may be
// estimated to take. A planner waits seconds (issue 32); the largest bundled scenario or validation
// case is estimated at well under it (docs/network.md, "Over the flow budget").
inline constexpr double DEFAULT_MAX_SECONDS = 120;

// The "simulation" section.
struct SimulationConfig {
  std::string backend = "simgrid";       // simgrid (flow-level network, contention) | analytic (closed forms)
  std::string profile;                   // optional profile JSON; relative to the scenario's folder
  bool symmetry = true;                  // simulate one representative per class of symmetric ranks
  bool replay = true;                    // SimGrid: replay calls that run alone (SimulationOptions::replay_calls_alone)
  // SimGrid: fold mirror images' flows onto the representatives' nodes (SimulationOptions::node_symmetry).
  engine::NodeSymmetry node_symmetry = engine::NodeSymmetry::EXACT;
  network::Algorithm algorithm = network::Algorithm::AUTO;  // force a collective algorithm
  engine::Fidelity fidelity = engine::Fidelity::FLOW;       // simgrid: how collectives become flows
  int64_t max_tasks = DEFAULT_MAX_TASKS;  // budget of simulated tasks (check_task_budget)
  int64_t max_flows = DEFAULT_MAX_FLOWS;  // simgrid at flow fidelity: budget of flows
  double max_seconds = DEFAULT_MAX_SECONDS;  // simgrid at flow fidelity: budget of estimated CPU seconds
  // Above max_flows: price the most expensive classes of collectives in closed form until the rest
  // fits (true, the default), or refuse the run (false). simulation.over_budget "approximate" | "refuse".
  bool approximate_over_budget = true;

  core::Json to_json() const;
};

// One measured figure of a validation case, named like the report field it is compared with.
struct MeasuredFigure {
  std::string metric;  // "iteration_time_s", "model_tflops_per_gpu", ...
  double value = 0;
};

// The "expect" block of a validation case: measured values from a real run and their source. Each
// figure is optional and, when given, positive; each is compared with the report field of the same
// name (DESIGN.md, "trainsim.report/1"). `trainsim validate` needs at least one.
struct Expectation {
  std::optional<double> iteration_time_s;         // seconds per iteration (lower is faster)
  std::optional<double> model_tflops_per_gpu;     // model FLOPs (6N-style, no recompute) / time / GPUs / 1e12
  std::optional<double> tokens_per_s;             // tokens of the global batch / iteration time
  std::optional<double> mfu;                      // model TFLOP/s per GPU / the GPU's peak, a fraction in (0, 1]
  std::optional<double> hardware_tflops_per_gpu;  // FLOPs executed (recompute included) / time / GPUs / 1e12
  std::optional<double> peak_memory_gib;          // peak memory per GPU (GiB): the report's
                                                  // memory.peak_bytes_per_gpu / 2^30
  std::string source;
  std::string note;

  // The figures given, in the order that decides which one a case is judged on: iteration_time_s,
  // then model_tflops_per_gpu, tokens_per_s, mfu, hardware_tflops_per_gpu, peak_memory_gib. The first is judged; the
  // others are shown beside it. Empty when the block gives none.
  std::vector<MeasuredFigure> figures() const;
};

struct Scenario {
  std::string file;  // where it was read from ("" for built-in)
  std::string name;
  network::ClusterConfig cluster;
  models::ModelSpec model;
  models::TrainingConfig training;
  models::ParallelismConfig parallelism;
  models::OffloadConfig offload;    // optimizations.offload
  models::PruningConfig pruning;    // optimizations.pruning (method "none" when absent)
  models::CompressionConfig compression;  // optimizations.gradient_compression (method "none" when absent)
  SimulationConfig simulation;
  core::Profile profile;            // the GPU's built-in profile, the stack's costs, then simulation.profile,
                                    // then the inline one
  core::DeviceProfile unstacked_device;  // the GPU's built-in device profile before the stack's costs
  bool profile_given = false;       // simulation.profile or an inline profile amends the built-in one
  core::Json inline_profile;        // the scenario's own "profile" object as written; null when none
  // The simulation.profile file's "calibration_run" (`calibrate --scenario` of a full scenario:
  // calibration_run.hpp); nullptr when it has none. It sets the error band of predictions like it.
  std::shared_ptr<const CalibrationRun> calibration_run;
  std::optional<Expectation> expect;
  // What does not stop a prediction but makes it less certain (`run` and `check` print each on
  // stderr, `run` also in the report's "warnings"): a GPU described without a base gets the
  // datasheet-default efficiencies; a profile fitted on another GPU than the scenario's.
  std::vector<std::string> warnings;
  // The profile's fitted_on.gpu is not the scenario's GPU (nor a described GPU's base): what is
  // wrong, for `run --strict-profile` to refuse; "" when it matches or is not known.
  std::string profile_mismatch;
  // Power (sim/core/power.hpp, docs/energy.md): the GPU's (a catalog GPU's datasheet TDP; the GPU
  // object's "tdp", "idle_power", "power_cap" over its base's) and the rest of the cluster's
  // ("cluster.power"). Read here, beside the cluster section, which leaves those keys to it.
  core::GpuPower gpu_power;
  core::ClusterPower power;

  // The fully resolved scenario: every default filled in, quantities as unit strings. RESOLVED (the
  // default; `run --out`'s scenario.resolved.json, `check --resolve-profile`) also embeds the device
  // and network profile the prediction used under "profile", with its "source"; AS_GIVEN (`check`)
  // keeps the scenario a scenario: the GPU by name (or object) and only the profile it was given
  // (simulation.profile, the inline "profile" as written), so that a what-if on another GPU gets that
  // GPU's built-in profile.
  enum class ProfileOut { RESOLVED, AS_GIVEN };
  core::Json to_json(ProfileOut profile_out = ProfileOut::RESOLVED) const;
};

// The device profile the scenario's job would have under `stack`: the built-in profile with that
// stack's costs (core::apply_stack), or, when the scenario gives a profile of its own (a user's
// calibrated run, which describes the stack it was measured on), that profile unchanged.
core::DeviceProfile device_for_stack(const Scenario& s, core::Stack stack);

// Thrown by load_scenario / read_scenario when every section is well-formed but the combination
// cannot run: models::check_strategy's problems, a precision the GPU lacks, parallelism.data "auto"
// not dividing the cluster. Commands that try many configurations (compare, search) report it per
// configuration; any other InputError means the input itself is malformed (exit 2).
class ImpossibleScenario : public core::InputError {
 public:
  using core::InputError::InputError;
};

// Throws ImpossibleScenario at /simulation/max_tasks, naming the estimate, its memory and the
// budget, when models::estimate_task_count (the tasks of the pipeline stages' programs, estimated
// from the sizes before anything is built) exceeds s.simulation.max_tasks: such a workload would
// run for minutes and grow to gigabytes, or run out of memory, instead of predicting.
void check_task_budget(const Scenario& s);
// Whether a layout's workload stays within `max_tasks` (the test check_task_budget applies; search
// uses it on layouts it has not made into scenarios).
bool within_task_budget(const models::ModelSpec& m, const models::TrainingConfig& t, const models::ParallelismConfig& p,
                        int64_t max_tasks, const models::OffloadConfig& offload = {},
                        const models::CompressionConfig& compression = {});

// Applies "--set key.path=value" overrides to a scenario document before it is read. The value is
// parsed as JSON when it is valid JSON (numbers, true/false, objects), otherwise taken as a string.
// Setting a key inside a model or a cluster.gpu given by catalog name turns it into
// {"base": name, key: value} (`--set cluster.gpu.hbm_bandwidth="6.7 TB/s"`).
// Throws InputError (file "--set") for a malformed override.
void apply_override(core::Json& doc, const std::string& assignment);

// Host memory and NVMe bytes of each node under the scenario's offload: per node, the sum over its
// GPUs of the model states their ranks keep there (models::split_model_states; activations offloaded
// at run time come on top, see the report).
struct OffloadFootprint {
  double host_bytes_per_node = 0;  // the fullest node
  double nvme_bytes_per_node = 0;
};
// REQUIRES: the scenario's strategy passed check_strategy.
OffloadFootprint offload_footprint(const Scenario& s);
OffloadFootprint offload_footprint(const models::ModelSpec& m, const models::TrainingConfig& t,
                                   const models::ParallelismConfig& p, const network::ClusterConfig& c,
                                   const models::OffloadConfig& o);

// Reads, overrides and checks a scenario. Throws InputError listing every problem found: malformed
// values, unknown keys; once the sections are well-formed, ImpossibleScenario for impossible
// configurations (models::check_strategy, models::check_offload, hardware the cluster does not have:
// network::check_feasibility), a world size that does not match
// the cluster, a precision the GPU cannot run, offloaded model states above cluster.host_memory or
// the NVMe capacity of a node. parallelism.data "auto" is resolved here to the cluster's GPUs / (tensor x
// pipeline x context x expert) (expert left out with expert_tensor), so the resolved scenario and
// everything downstream see a number.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
// Same, from a document already in memory; `file` names it in messages and anchors relative paths.
// StrategyCheck::SKIP leaves out models::check_strategy (`trainsim search` replaces the layout) and
// network::check_feasibility (search rejects an infeasible GPU type's layouts with its reason).
enum class StrategyCheck { CHECK, SKIP };
Scenario read_scenario(const core::Json& doc, const std::string& file, StrategyCheck strategy = StrategyCheck::CHECK);

}  // namespace trainsim::plan
