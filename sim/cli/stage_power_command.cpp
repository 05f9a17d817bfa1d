#include "sim/cli/stage_power_command.hpp"

#include <CLI/CLI.hpp>

#include "sim/cli/cli_options.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/plan/stage_power.hpp"

namespace trainsim::cli {

void add_stage_power_options(CLI::App* cmd, StagePowerArgs& args) {
  cmd->add_option("scenario", args.scenario, "Scenario JSON file")->required();
  add_overrides(cmd, args.overrides);
  cmd->add_option("--tolerance", args.tolerance,
                  "How much longer the planned iteration may be than the baseline, a fraction (default 0.01)")
      ->check(CLI::Range(0.0, 0.5));
}

int stage_power_command(const StagePowerArgs& args, std::ostream& out) {
  const plan::Scenario s = plan::load_scenario(args.scenario, args.overrides);
  out << plan::stage_power_table(plan::plan_stage_power(s, args.tolerance));
  return 0;
}

}  // namespace trainsim::cli
