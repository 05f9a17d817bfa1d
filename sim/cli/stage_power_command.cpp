#include "sim/cli/stage_power_command.hpp"

#include <CLI/CLI.hpp>

#include "sim/cli/cli_options.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/plan/stage_power.hpp"
#include "sim/report/chart_file.hpp"
#include "sim/report/line_chart.hpp"

namespace trainsim::cli {

void add_stage_power_options(CLI::App* cmd, StagePowerArgs& args) {
  cmd->add_option("scenario", args.scenario, "Scenario JSON file")->required();
  add_overrides(cmd, args.overrides);
  cmd->add_option("--tolerance", args.tolerance,
                  "How much longer the planned iteration may be than the baseline, a fraction (default 0.01)")
      ->check(CLI::Range(0.0, 0.5));
  cmd->add_option("--plot", args.plot, "Also draw the energy/time trade-off curve to FILE (.svg or .png)");
}

namespace {

// Energy per iteration against iteration time, from full clocks to the planned ones.
report::LineChart tradeoff_chart(const plan::StagePowerPlan& plan) {
  report::LineChart chart;
  chart.title = "per-stage power caps: energy against iteration time";
  chart.x_label = "iteration time (s)";
  chart.y_label = "energy per iteration (MJ)";
  chart.y_from_zero = false;
  report::LineSeries facility{"facility", {}, {}}, gpus{"GPUs", {}, {}};
  for (const plan::TradeoffPoint& p : plan.curve) {
    facility.x.push_back(p.time_s);
    facility.y.push_back(p.facility_j / 1e6);
    gpus.x.push_back(p.time_s);
    gpus.y.push_back(p.gpu_j / 1e6);
  }
  chart.series = {facility, gpus};
  return chart;
}

}  // namespace

int stage_power_command(const StagePowerArgs& args, std::ostream& out) {
  const plan::Scenario s = plan::load_scenario(args.scenario, args.overrides);
  if (!args.plot.empty()) report::check_chart_path(args.plot, "--plot");
  const plan::StagePowerPlan plan = plan::plan_stage_power(s, args.tolerance, args.plot.empty() ? 0 : CURVE_POINTS);
  out << plan::stage_power_table(plan);
  if (!args.plot.empty()) report::write_chart_file(args.plot, report::render_line_charts({tradeoff_chart(plan)}), "--plot");
  return 0;
}

}  // namespace trainsim::cli
