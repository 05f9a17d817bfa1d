#include "sim/cli/compare_command.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <iostream>

#include "sim/cli/cli_options.hpp"
#include "sim/cli/html_report.hpp"
#include "sim/cli/report_charts.hpp"
#include "sim/plan/ranking_accuracy.hpp"
#include "sim/plan/results_json.hpp"
#include "sim/report/bar_chart.hpp"
#include "sim/report/chart_file.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

void write_table(const CompareResult& result, bool color, std::ostream& out) {
  const std::vector<Configuration>& cs = result.configurations;
  const std::vector<CompareRow>& rows = result.rows;
  const std::optional<size_t> ref = result.reference;
  // Cell texts first, to size the columns.
  const size_t n = cs.size();
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> labels;
  std::vector<const CompareRow*> shown;
  for (const CompareRow& r : rows) {
    if (is_unused_axis(r)) continue;
    std::vector<std::string> line;
    for (size_t i = 0; i < n; ++i) {
      if (!cs[i].ok()) {
        line.push_back(r.figure->name == "scenario" ? "FAILED (below)" : "");
        continue;
      }
      std::string text = figure_text(*r.figure, r.values[i]);
      if (r.diff_pct[i] && ref && i != *ref && r.figure->better != Better::NEITHER) text += fmt::format(" ({:+.1f}%)", *r.diff_pct[i]);
      line.push_back(text);
    }
    shown.push_back(&r);
    labels.push_back(r.figure->label);
    cells.push_back(std::move(line));
  }
  size_t label_width = 6;
  for (const std::string& l : labels) label_width = std::max(label_width, l.size());
  std::vector<size_t> width(n);
  for (size_t i = 0; i < n; ++i) {
    width[i] = cs[i].label.size();
    for (const auto& line : cells) width[i] = std::max(width[i], line[i].size());
  }

  if (ref) {
    out << fmt::format("differences vs \"{}\"; * marks rows where a configuration differs by more than {:g}%\n",
                       cs[*ref].label, HIGHLIGHT_PCT);
  }
  out << fmt::format("  {:<{}}", "", label_width);
  for (size_t i = 0; i < n; ++i) out << fmt::format("  {:>{}}", cs[i].label, width[i]);
  out << "\n";
  for (size_t k = 0; k < shown.size(); ++k) {
    const CompareRow& r = *shown[k];
    out << (r.any_differs ? "* " : "  ") << fmt::format("{:<{}}", labels[k], label_width);
    for (size_t i = 0; i < n; ++i) {
      const std::string padded = fmt::format("{:>{}}", cells[k][i], width[i]);
      if (color && r.differs[i]) {
        // Green when better, red when worse, bold alone where neither applies (labels, fits).
        const bool lower = r.figure->better == Better::LOWER, higher = r.figure->better == Better::HIGHER;
        const bool better = r.diff_pct[i] && ((lower && *r.diff_pct[i] < 0) || (higher && *r.diff_pct[i] > 0));
        const char* code = (lower || higher) && r.diff_pct[i] ? (better ? "\033[1;32m" : "\033[1;31m") : "\033[1m";
        out << "  " << code << padded << "\033[0m";
      } else {
        out << "  " << padded;
      }
    }
    out << "\n";
  }
  if (const std::vector<std::string> accuracy = compare_accuracy(result).lines(); !accuracy.empty()) {
    out << "\naccuracy (iteration time, fastest first):\n";
    for (const std::string& l : accuracy) out << "  " << l << "\n";
  }
  for (const Configuration& c : cs) {
    if (c.stack_defaults.empty()) continue;
    out << fmt::format("\n{}: the stack's defaults instead of the scenario's {}\n", c.label, fmt::join(c.stack_defaults, ", "));
  }
  for (const Configuration& c : cs) {
    if (c.ok()) continue;
    out << fmt::format("\n{} cannot run:\n", c.label);
    for (const core::InputProblem& p : c.problems) out << "  " << p.to_string() << "\n";
  }
}

void write_csv(const std::vector<Configuration>& cs, const std::vector<CompareRow>& rows, std::ostream& out) {
  out << "metric";
  for (const Configuration& c : cs) out << "," << csv_field(c.label);
  for (const Configuration& c : cs) out << "," << csv_field(c.label + " diff_pct");
  out << "\n";
  for (const CompareRow& r : rows) {
    out << r.figure->name;
    for (const core::Json* v : r.values) out << "," << csv_value(v);
    for (const std::optional<double>& d : r.diff_pct) out << "," << (d ? fmt::format("{:.4f}", *d) : "");
    out << "\n";
  }
  out << "error";
  for (const Configuration& c : cs) out << "," << (c.ok() ? "" : csv_field(c.error()));
  for (size_t i = 0; i < cs.size(); ++i) out << ",";
  out << "\n";
}

// The chart's title: what it shows and what is compared ("cost by cluster.gpu", "iteration time:
// a vs b vs c").
std::string chart_title(const std::string& what, const CompareArgs& args, const std::vector<LabeledReport>& bars) {
  std::string subject;
  if (!args.vary.empty()) {
    for (const std::string& v : args.vary) subject += fmt::format("{}{}", subject.empty() ? " by " : " and ", v.substr(0, v.find('=')));
    return what + subject;
  }
  constexpr size_t NAMED = 4;
  for (size_t i = 0; i < bars.size() && i < NAMED; ++i) subject += fmt::format("{}{}", i == 0 ? ": " : " vs ", bars[i].label);
  if (bars.size() > NAMED) subject += fmt::format(" and {} more", bars.size() - NAMED);
  return what + subject;
}

std::vector<LabeledReport> bars_of(const std::vector<Configuration>& cs) {
  std::vector<LabeledReport> bars;
  for (const Configuration& c : cs) {
    if (c.ok()) bars.push_back({c.label, c.report});
  }
  return bars;
}

// One bar per configuration of `figure` (--plot-figure's names): "time", the iteration's breakdown;
// "days", "gpu_hours" or "cost", the whole run (planning_bar_chart: an input error naming a
// configuration without it). Titled with what it shows and what is compared.
report::BarChart figure_chart(const CompareArgs& args, const std::vector<LabeledReport>& bars, const std::string& figure) {
  if (figure == "time") {
    report::BarChart chart = breakdown_bar_chart(bars, chart_title("iteration time", args, bars));
    chart.ranked = false;  // in the order given, like the table's columns
    return chart;
  }
  const PlanningFigure which = figure == "days"        ? PlanningFigure::DAYS
                               : figure == "gpu_hours" ? PlanningFigure::GPU_HOURS
                                                       : PlanningFigure::COST;
  const std::string what = figure == "days" ? "time to train" : figure == "gpu_hours" ? "GPU-hours" : "cost";
  return planning_bar_chart(bars, which, chart_title(what, args, bars));
}

// --html's charts: the iteration's breakdown, and the whole run's days and cost where every
// configuration that ran has them.
std::vector<report::BarChart> page_charts(const CompareArgs& args, const std::vector<LabeledReport>& bars) {
  std::vector<report::BarChart> charts{figure_chart(args, bars, "time")};
  const auto all_have = [&](const char* pointer) {
    return std::all_of(bars.begin(), bars.end(), [&](const LabeledReport& b) { return b.report.contains(core::Json::json_pointer(pointer)); });
  };
  if (all_have("/time_to_train/days")) charts.push_back(figure_chart(args, bars, "days"));
  if (all_have("/time_to_train/cost")) charts.push_back(figure_chart(args, bars, "cost"));
  return charts;
}

}  // namespace

int compare_command(const CompareArgs& args, std::ostream& out, std::ostream& err) {
  if (!args.plot.empty()) report::check_chart_path(args.plot, "--plot");
  const CompareResult result = compare({.inputs = args.inputs,
                                        .vary = args.vary,
                                        .overrides = args.overrides,
                                        .backend = args.backend,
                                        .quiet = args.quiet,
                                        .prices = parse_prices(args.prices, "--price"),
                                        .bands = args.bands});
  const std::vector<Configuration>& cs = result.configurations;
  result.warnings.print(err, cs.size());
  const std::vector<CompareRow>& rows = result.rows;
  // The pictures' bars, and the --plot chart built before anything is printed: a configuration
  // without the figure asked for is an input error, not a half-written output.
  const std::vector<LabeledReport> bars = args.plot.empty() && args.html.empty() ? std::vector<LabeledReport>{} : bars_of(cs);
  std::optional<report::BarChart> chart;
  if (!args.plot.empty()) chart = figure_chart(args, bars, args.plot_figure);
  switch (args.format) {
    case Format::JSON: out << compare_json(result).dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n"; break;
    case Format::CSV: write_csv(cs, rows, out); break;
    case Format::TABLE: write_table(result, args.color, out); break;
  }
  if (chart) report::write_chart_file(args.plot, report::render_bar_chart(*chart), "--plot");
  if (!args.html.empty()) {
    core::write_output_file(args.html, html_compare(result, chart_title("compare", args, bars), page_charts(args, bars)), "--html");
  }
  return 0;
}

CompareSubcommand::CompareSubcommand(CLI::App& app) {
  command_ = app.add_subcommand("compare", "Compare reports or scenarios side by side, differences highlighted");
  command_->add_option("inputs", args_.inputs, "Reports (run --format json / --out) or scenarios; one scenario with --vary")
      ->required();
  command_->add_option("--vary", args_.vary, "Vary a scenario value: key.path=V1,V2,... (repeatable: cartesian product)")
      ->type_name("KEY=V1,V2");
  add_overrides(command_, args_.overrides);
  add_backend(command_, args_.backend, "Backend for scenarios: analytic (default) or simgrid");
  add_format(command_, args_.format, /*csv=*/true);
  command_->add_option("--plot", args_.plot, "Also draw the configurations side by side as bars to FILE.svg or FILE.png");
  command_->add_option("--plot-figure", args_.plot_figure,
                       "What --plot draws: time (the iteration's breakdown, default), days, gpu_hours or cost (the whole run)")
      ->check(CLI::IsMember({"time", "days", "gpu_hours", "cost"}));
  command_->add_option("--html", args_.html, "Also write the table and the charts (time, days, cost) as one HTML page to FILE");
  command_->add_flag("--quiet,-q", args_.quiet, "No progress bar on stderr");
  add_prices(command_, args_.prices);
  add_bands(command_, args_.bands);
}

std::optional<int> CompareSubcommand::run(std::ostream& out, std::ostream& err) const {
  if (!command_->parsed()) return std::nullopt;
  CompareArgs args = args_;
  args.color = &out == &std::cout && isatty(STDOUT_FILENO) != 0 && std::getenv("NO_COLOR") == nullptr;
  return compare_command(args, out, err);
}

}  // namespace trainsim::cli
