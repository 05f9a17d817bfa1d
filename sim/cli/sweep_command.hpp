#pragma once
// `trainsim sweep SCENARIO --set-range KEY=RANGE ...`: the options and printing of plan::sweep
// (sim/plan/sweep.hpp: the ranges, the points, the scaling efficiency), which runs the scenario at
// every point of the cartesian product of the ranges. Prints the scaling curve: per point the swept
// values, GPUs, iteration time, tokens/s, model TFLOP/s per GPU, MFU and the scaling efficiency; a
// point that cannot run is a row with its error. Exit 0 when some point ran, 2 when none did or the
// input is bad.
//
//   trainsim sweep scenarios/gpt3-175b-a100-1024.json --set-range parallelism.pipeline=4,8,16
//       --set-range training.micro_batch=1:4:x2 --format csv --plot scaling.svg     (one line)

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/commands.hpp"
#include "sim/plan/sweep.hpp"

namespace CLI {
class App;
}

namespace trainsim::cli {

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> overrides;  // --set, applied before the ranges
  std::vector<std::string> ranges;     // --set-range, at least one (plan::parse_sweep_range)
  std::string backend = "analytic";    // --backend analytic | simgrid
  Format format = Format::TABLE;       // table | json | csv
  std::string plot;                    // --plot FILE.svg | FILE.png: the scaling curve
  bool yes = false;                    // --yes: allow more than plan::SWEEP_POINTS_WITHOUT_YES points
  bool quiet = false;                  // --quiet: no progress bar (drawn only on a terminal anyway)
  std::vector<std::string> prices;     // --price NAME=USD,... (plan::parse_prices)
};
// The curve on `out`; on `err` the points' warnings (a profile fitted on another GPU, ...:
// scenario_warnings.hpp, each once with the points it concerns) and, on a terminal, a progress bar.
int sweep_command(const SweepArgs& args, std::ostream& out, std::ostream& err);

// `sweep`, registered on the application's CLI11 App (like CollectiveSubcommand): keep it in place
// until run(), which returns std::nullopt when `sweep` was not on the command line.
class SweepSubcommand {
 public:
  explicit SweepSubcommand(CLI::App& app);
  SweepSubcommand(const SweepSubcommand&) = delete;
  SweepSubcommand& operator=(const SweepSubcommand&) = delete;
  std::optional<int> run(std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* command_ = nullptr;
  SweepArgs args_;
};

}  // namespace trainsim::cli
