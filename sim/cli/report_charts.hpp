#pragma once
// Charts of trainsim reports ("trainsim.report/1" JSON, as report_json writes them), for `run
// --html` and for the commands that compare several reports (search, compare):
//
//   std::vector<LabeledReport> rows{{"TP8 PP8 DP16", report_a}, {"TP8 PP16 DP8", report_b}};
//   report::write_chart_file("ranked.svg", report::render_bar_chart(breakdown_bar_chart(rows, "ranked")), "--plot");

#include <string>
#include <utility>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/report/bar_chart.hpp"

namespace trainsim::cli {

struct LabeledReport {
  std::string label;  // the bar's label, e.g. the configuration
  core::Json report;  // a "trainsim.report/1" document
};

// The stacked parts of an iteration, in order; they add up to iteration_time_s: compute (forward,
// backward, recompute), exposed tensor / context / expert / data / pipeline communication, pipeline
// bubble, optimizer, other (compute stream waiting on host copies).
std::vector<std::string> breakdown_parts();
std::vector<double> breakdown_values(const core::Json& report);

// One ranked bar per report (fastest on top), its time breakdown stacked, in seconds.
report::BarChart breakdown_bar_chart(const std::vector<LabeledReport>& reports, const std::string& title);

// What a planning chart shows (`compare --plot-figure`): the whole run's days, GPU-hours or cost.
enum class PlanningFigure { DAYS, GPU_HOURS, COST };

// One bar per report in the order given, the steady-state figure (time_to_train.days, gpu_hours or
// cost) and, stacked after it, what failures, checkpoint stalls and restarts add
// (time_to_train.with_failures minus it; 0 without training.checkpoint). Throws InputError (file
// "--plot-figure") naming the first report that lacks the figure (no training.tokens; no price for
// the cost).
report::BarChart planning_bar_chart(const std::vector<LabeledReport>& reports, PlanningFigure figure,
                                    const std::string& title);

// One bar: the worst stage's memory per GPU (weights, gradients, optimizer states, activations,
// buffers) in GiB, labelled with the capacity.
report::BarChart memory_bar_chart(const core::Json& report);

}  // namespace trainsim::cli
