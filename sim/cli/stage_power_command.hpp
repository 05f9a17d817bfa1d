#pragma once
// `trainsim stage-power`: per-stage GPU power caps that cut a pipeline's energy without lengthening
// its iteration (Perseus-style): the options and printing of plan::plan_stage_power
// (sim/plan/stage_power.hpp), which does the work.
//
//   trainsim stage-power SCENARIO [--set key=value]... [--tolerance 0.01] [--plot FILE.svg|.png]
//       Prints each stage's compute, clock and power cap, and the iteration time and energy per
//       iteration before and after (analytic backend). --tolerance: how much longer the planned
//       iteration may be, a fraction from 0 to 0.5 (default 0.01). --plot: the energy/time trade-off
//       (CURVE_POINTS simulations from full clocks to the planned ones), also printed as a table.

#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace trainsim::cli {

struct StagePowerArgs {
  std::string scenario;
  std::vector<std::string> overrides;
  double tolerance = 0.01;
  std::string plot;  // --plot FILE.svg|.png
};

// Points of the --plot trade-off curve.
inline constexpr int CURVE_POINTS = 5;

// Registers the subcommand's options on `cmd`, filling `args`.
void add_stage_power_options(CLI::App* cmd, StagePowerArgs& args);
int stage_power_command(const StagePowerArgs& args, std::ostream& out);

}  // namespace trainsim::cli
