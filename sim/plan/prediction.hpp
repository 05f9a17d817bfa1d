#pragma once
// One prediction: scenario -> workload -> backend -> report. Shared by `run`, `validate`, `compare`,
// `sweep` and search's re-check (through predict_report).

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "models/workload_builder.hpp"
#include "sim/plan/energy.hpp"
#include "sim/plan/resilience.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim::plan {

struct BandSet;  // bands.hpp

// The iterations before optimizations.pruning.start_iteration: the same job without pruning.
struct DensePhase {
  double iteration_time_s = 0;
  double peak_bytes_per_gpu = 0;  // of its worst stage
  bool fits = true;               // within the GPU's memory
};

// The iterations before optimizations.gradient_compression.warmup_steps: the same job with
// uncompressed gradient reductions.
struct WarmupPhase {
  double iteration_time_s = 0;
};

// A class of collectives that a SimGrid run priced in closed form because simulating its flows
// would have exceeded simulation.max_flows (simulation.over_budget "approximate").
struct ClosedFormClass {
  std::string group;  // core::GroupKind::name: "data", "expert", ...
  double flows = 0;   // the flows its calls would have needed (engine::FlowEstimate::by_group)
  double seconds = 0;  // their estimated SimGrid CPU seconds (engine::FlowEstimate::by_group_seconds)
};

struct Prediction {
  models::BuiltWorkload built;
  engine::SimulationResult result;
  std::string backend;
  double wall_s = 0;  // CPU wall time of building and simulating
  std::optional<DensePhase> dense_phase;  // pruning with start_iteration > 0
  std::optional<ResilienceFigures> resilience;  // training.checkpoint given
  std::optional<SimulatedRuns> simulated_failures;  // `run --simulate-failures N`
  std::optional<WarmupPhase> warmup_phase;  // gradient compression with warmup_steps > 0
  std::vector<ClosedFormClass> closed_form;  // SimGrid over its flow budget: what was not simulated
  // Energy and power of the iteration (energy.hpp), from the timeline of one rank per program; absent
  // when the GPU's power is not known (a GPU described without "tdp").
  std::optional<EnergyFigures> energy;
  // The validation residuals behind the report's error bands and envelope (uncertainty.hpp);
  // nullptr: the built-in validation/bands.json.
  std::shared_ptr<const BandSet> bands;

  double iteration_time_s() const { return result.iteration_time.value(); }
};

// REQUIRES: `scenario` came from load_scenario (so its strategy is possible). `timeline_ranks` are
// recorded for --timeline. The prediction is of the steady-state iteration; with pruning that starts
// at iteration n > 0, the dense iterations before it are predicted too (dense_phase: a second
// simulation of the scenario without pruning), and time to train counts n of them. With
// training.checkpoint, the iteration that checkpoints is simulated too (one or two more simulations:
// docs/resilience.md) and `resilience` filled; throws InputError at /training/checkpoint/interval for
// an interval shorter than the predicted iteration. With gradient compression the prediction is of
// the compressed (steady-state) iteration; warmup_steps > 0 adds warmup_phase, a simulation without
// compression (reported, not counted in time to train).
Prediction predict(const Scenario& scenario, const std::string& backend_override = "",
                   const std::vector<int>& timeline_ranks = {});

// While one exists (one at a time), predict()'s SimGrid runs print where they are on `out` every
// PROGRESS_PERIOD_S of wall time, the first after that long, whether or not `out` is a terminal
// ("simgrid: LABEL: simulated 1.2 s, 40% of the tasks, 412,345 flows, 160 calls replayed, 20 s"), and
// stop on Ctrl-C when a StopOnInterrupt is installed (they throw engine::Interrupted with that
// progress). `run` and `validate` watch theirs; search, compare and sweep keep their own progress.
class WatchSimulations {
 public:
  static constexpr double PROGRESS_PERIOD_S = 10;
  WatchSimulations(std::ostream& out, std::string label);
  ~WatchSimulations();
  WatchSimulations(const WatchSimulations&) = delete;
  WatchSimulations& operator=(const WatchSimulations&) = delete;
  // One line for `progress` ("simulated 1.2 s, 40% of the tasks (...), ...").
  static std::string describe(const engine::SimulationProgress& progress);
};

// The report of DESIGN.md ("schema": "trainsim.report/1"), extended with the pipeline split, the
// breakdown by phase and axis, and the memory of the worst stage; "bands" and "envelope" (how sure
// the figures are: uncertainty.hpp, from p.bands); with pruning, a "pruning" object
// (docs/scenario.md: what it changed against the same job dense); with gradient compression a
// "gradient_compression" object and memory.breakdown_bytes.error_feedback.
core::Json report_json(const Scenario& scenario, const Prediction& p);
// Fills p.simulated_failures: `runs` training runs with failures (resilience.hpp, simulate_failures).
// Throws InputError (flag --simulate-failures) without training.checkpoint or training.tokens.
void simulate_failures(const Scenario& scenario, Prediction& p, int runs, uint64_t seed);
// The same as a human-readable table.
std::string report_table(const Scenario& scenario, const Prediction& p);

// Whether the power of every GPU of the scenario is known, so that energy figures can be given: the
// cluster's GPU's "tdp", or with cluster.pools every pool's.
bool gpu_power_known(const Scenario& s);

// predict() then report_json(), for commands that run many scenarios (validate, compare, sweep and
// search's SimGrid re-check): with the SimGrid backend (`backend`, or the scenario's own when "") the
// prediction runs in a child process of its own, because SimGrid 3.32 builds one platform per process
// and the scenarios' clusters differ. The child's InputError and InternalError are thrown again here
// as the same kind; a child ended by Ctrl-C throws engine::Interrupted. REQUIRES: as predict().
core::Json predict_report(const Scenario& scenario, const std::string& backend);

}  // namespace trainsim::plan
