#include "sim/cli/report_charts.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "sim/core/error.hpp"
#include "sim/core/units.hpp"

namespace trainsim::cli {
namespace {

constexpr const char* AXES[] = {"tensor", "context", "expert", "data", "pipeline"};
constexpr const char* MEMORY_PARTS[] = {"weights", "gradients", "optimizer_states", "activations", "buffers"};

double number_at(const core::Json& j, const core::Json::json_pointer& ptr) {
  return j.contains(ptr) && j.at(ptr).is_number() ? j.at(ptr).get<double>() : 0.0;
}

}  // namespace

std::vector<std::string> breakdown_parts() {
  std::vector<std::string> parts{"compute"};
  for (const char* axis : AXES) parts.push_back(fmt::format("exposed {} comm", axis));
  parts.insert(parts.end(), {"pipeline bubble", "optimizer", "other (host copies)"});
  return parts;
}

std::vector<double> breakdown_values(const core::Json& r) {
  using P = core::Json::json_pointer;
  std::vector<double> v{number_at(r, P("/breakdown_s/compute"))};
  for (const char* axis : AXES) v.push_back(number_at(r, P(fmt::format("/breakdown_s/exposed_communication_by_axis/{}", axis))));
  const double optimizer = number_at(r, P("/breakdown_s/optimizer"));
  v.push_back(number_at(r, P("/breakdown_s/pipeline_bubble")));
  v.push_back(optimizer);
  // "other" in the report includes the optimizer step (the contract's four parts add up).
  v.push_back(std::max(number_at(r, P("/breakdown_s/other")) - optimizer, 0.0));
  return v;
}

report::BarChart breakdown_bar_chart(const std::vector<LabeledReport>& reports, const std::string& title) {
  report::BarChart chart;
  chart.title = title;
  chart.value_label = "time per iteration (s)";
  chart.unit_suffix = " s";
  chart.parts = breakdown_parts();
  for (const LabeledReport& r : reports) chart.bars.push_back({r.label, breakdown_values(r.report)});
  return chart;
}

report::BarChart planning_bar_chart(const std::vector<LabeledReport>& reports, PlanningFigure figure,
                                    const std::string& title) {
  struct Shown {
    const char* field;  // in time_to_train and time_to_train.with_failures
    const char* axis;
    const char* unit;
    const char* needs;  // what a report without it lacks
  };
  const Shown shown = figure == PlanningFigure::DAYS        ? Shown{"days", "time to train (days)", " days", "training.tokens"}
                      : figure == PlanningFigure::GPU_HOURS ? Shown{"gpu_hours", "GPU-hours", " GPU-h", "training.tokens"}
                                                            : Shown{"cost", "cost (USD)", " USD", "training.tokens and a price"};
  report::BarChart chart;
  chart.title = title;
  chart.value_label = shown.axis;
  chart.unit_suffix = shown.unit;
  chart.ranked = false;  // in the order given, like compare's columns
  chart.parts = {"steady state", "failures, checkpoint stalls and restarts"};
  const core::Json::json_pointer steady(std::string("/time_to_train/") + shown.field),
      with_failures(std::string("/time_to_train/with_failures/") + shown.field);
  for (const LabeledReport& r : reports) {
    if (!r.report.contains(steady) || !r.report.at(steady).is_number()) {
      throw core::InputError("--plot-figure", "",
                             fmt::format("{} needs {} in every configuration; \"{}\" has no {}", shown.field, shown.needs,
                                         r.label, shown.field == std::string("cost") ? "cost" : "time to train"));
    }
    const double base = r.report.at(steady).get<double>();
    const double extra = number_at(r.report, with_failures) > 0 ? std::max(number_at(r.report, with_failures) - base, 0.0) : 0.0;
    chart.bars.push_back({r.label, {base, extra}});
  }
  return chart;
}

report::BarChart memory_bar_chart(const core::Json& r) {
  using P = core::Json::json_pointer;
  report::BarChart chart;
  const double capacity = number_at(r, P("/memory/capacity_bytes")) / core::GiB;
  chart.title = fmt::format("peak memory per GPU (stage {}), capacity {:.1f} GiB",
                            static_cast<int>(number_at(r, P("/memory/stage"))), capacity);
  chart.value_label = "memory per GPU (GiB)";
  chart.unit_suffix = " GiB";
  chart.ranked = false;
  std::vector<double> values;
  for (const char* part : MEMORY_PARTS) {
    std::string name = part;
    std::replace(name.begin(), name.end(), '_', ' ');
    chart.parts.push_back(name);
    values.push_back(number_at(r, P(fmt::format("/memory/breakdown_bytes/{}", part))) / core::GiB);
  }
  chart.bars.push_back({"peak", values});
  return chart;
}

}  // namespace trainsim::cli
