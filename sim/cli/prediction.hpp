#pragma once
// One prediction: scenario -> workload -> backend -> report. Shared by `run` and `validate`.

#include <string>
#include <vector>

#include "models/workload_builder.hpp"
#include "sim/cli/scenario.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim::cli {

struct Prediction {
  models::BuiltWorkload built;
  engine::SimulationResult result;
  std::string backend;
  double wall_s = 0;  // CPU wall time of building and simulating

  double iteration_time_s() const { return result.iteration_time.value(); }
};

// REQUIRES: `scenario` came from load_scenario (so its strategy is possible). `timeline_ranks` are
// recorded for --timeline.
Prediction predict(const Scenario& scenario, const std::string& backend_override = "",
                   const std::vector<int>& timeline_ranks = {});

// The report of DESIGN.md ("schema": "trainsim.report/1"), extended with the pipeline split, the
// breakdown by phase and axis, and the memory of the worst stage.
core::Json report_json(const Scenario& scenario, const Prediction& p);
// The same as a human-readable table.
std::string report_table(const Scenario& scenario, const Prediction& p);

}  // namespace trainsim::cli
