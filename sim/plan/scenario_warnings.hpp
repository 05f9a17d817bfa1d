#pragma once
// The warnings of the many scenarios one command runs (compare's configurations, sweep's points,
// search's cluster variants, validate's cases): Scenario::warnings (a profile fitted on another GPU,
// a described GPU without a base) must reach the user there as they do in `run`, but a warning that
// every point shares is printed once, not once per point.
//
// Example (sim/plan/sweep.cpp collects them, sim/cli/sweep_command.cpp prints them):
//   ScenarioWarnings warnings;
//   for (...) { const Scenario s = read_scenario(...); warnings.add(s.warnings, label); ... }
//   warnings.print(err, points.size());
//   // warning: the profile p.json was fitted on A100-SXM4-80GB, not on the scenario's H100-SXM5-80GB: ...
//   // warning: cluster.gpu describes "X" without a "base": ... (in: gpu=X)

#include <cstddef>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/json_reader.hpp"

namespace trainsim::plan {

class ScenarioWarnings {
 public:
  // Records `warnings` as concerning the run labelled `label`.
  void add(const std::vector<std::string>& warnings, const std::string& label);
  // The "warnings" array of a trainsim.report/1 report (absent: none).
  void add_report(const core::Json& report, const std::string& label);
  // One line per distinct warning, in the order first seen: "warning: TEXT", followed by
  // " (in: LABEL, ...)" unless all `runs` runs have it.
  void print(std::ostream& err, size_t runs) const;
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<std::pair<std::string, std::vector<std::string>>> entries_;
};

}  // namespace trainsim::plan
