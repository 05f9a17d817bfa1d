#include "sim/cli/sweep_command.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <optional>

#include "sim/cli/cli_options.hpp"
#include "sim/plan/compare.hpp"
#include "sim/plan/report_figures.hpp"
#include "sim/plan/results_json.hpp"
#include "sim/core/error.hpp"
#include "sim/report/chart_file.hpp"
#include "sim/report/line_chart.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

// A value as it appears in a CSV cell: strings without quotes, anything else as JSON.
std::string value_text(const core::Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Values as tables and plots show them: objects (a GPU) by their label or name (value_labels).
class ShortValues {
 public:
  explicit ShortValues(const std::vector<SweepRange>& ranges) : ranges_(ranges) {
    for (const SweepRange& r : ranges) labels_.push_back(value_labels(r.values));
  }
  // Range k's value v (REQUIRES: one of its values).
  const std::string& operator()(size_t k, const core::Json& v) const {
    const std::vector<core::Json>& values = ranges_[k].values;
    return labels_[k][static_cast<size_t>(std::find(values.begin(), values.end(), v) - values.begin())];
  }

 private:
  const std::vector<SweepRange>& ranges_;
  std::vector<std::vector<std::string>> labels_;
};

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

bool looks_geometric(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  if (xs.size() < 3 || xs.front() <= 0) return false;
  const double ratio = xs[1] / xs[0];
  if (ratio < 1.5) return false;
  for (size_t i = 2; i < xs.size(); ++i) {
    if (std::abs(xs[i] / xs[i - 1] - ratio) > 1e-9 * ratio) return false;
  }
  return true;
}

// "tokens/s" or "samples/s".
std::string throughput_label(const std::string& key) { return key.substr(0, key.find('_')) + "/s"; }

// The planning figures some point that ran has (time to train, cost, goodput, ...: planning_figures()).
std::vector<const ReportFigure*> planning_columns(const SweepResult& r, bool table) {
  std::vector<const ReportFigure*> out;
  for (const ReportFigure* f : planning_figures()) {
    // The table keeps to days, cost, the failure figures and the energy to train a reader compares;
    // CSV and JSON have all (GPU-hours, failure counts, the peak power every known GPU has).
    if (table && (f->name.ends_with("gpu_hours") || f->name == "expected_failures" || f->name == "peak_power_w")) {
      continue;
    }
    if (std::any_of(r.points.begin(), r.points.end(),
                    [&](const SweepPoint& p) { return p.report && figure_value(*p.report, *f) != nullptr; })) {
      out.push_back(f);
    }
  }
  return out;
}

// A planning column's header in the table: "days", "cost_usd", "days_with_failures", ...
std::string planning_header(const ReportFigure& f) {
  std::string name = f.name;
  if (name.starts_with("time_to_train_")) name = name.substr(std::string("time_to_train_").size());
  return name;
}

// A planning figure of a point as the table shows it ("-" where the point lacks it).
std::string planning_cell(const SweepPoint& p, const ReportFigure& f) {
  const core::Json* v = figure_value(*p.report, f);
  if (v == nullptr || !v->is_number()) return "-";
  return fmt::format("{:.{}f}{}", v->get<double>() * f.table_scale, f.table_digits, f.name == "goodput" ? "%" : "");
}

// Days to train (steady state and with failures) and cost over the sweep's x, one chart each, when
// the points have them (training.tokens; a price; training.checkpoint for the failures).
void add_planning_charts(std::vector<report::LineChart>& charts, const report::LineChart& axes, const std::string& name,
                         const std::vector<std::string>& series_names,
                         const std::map<std::string, std::vector<const SweepPoint*>>& series,
                         const std::function<double(const SweepPoint&)>& x_of) {
  struct Curve {
    const char* pointer;
    const char* label;
  };
  auto chart_of = [&](const std::string& title, const std::string& y_label, const std::vector<Curve>& curves) {
    report::LineChart c = axes;  // its x axis; the series are this chart's own
    c.series.clear();
    c.title = fmt::format("{}: {}", name, title);
    c.y_label = y_label;
    for (const std::string& label : series_names) {
      for (const Curve& curve : curves) {
        report::LineSeries s{label.empty() ? curve.label : fmt::format("{}, {}", curve.label, label), {}, {}};
        const core::Json::json_pointer pointer(curve.pointer);
        for (const SweepPoint* p : series.at(label)) {
          if (!p->report->contains(pointer) || !p->report->at(pointer).is_number()) continue;
          s.x.push_back(x_of(*p));
          s.y.push_back(p->report->at(pointer).get<double>());
        }
        if (!s.x.empty()) c.series.push_back(s);
      }
    }
    if (!c.series.empty()) charts.push_back(c);
  };
  chart_of("time to train", "days", {{"/time_to_train/days", "steady state"}, {"/time_to_train/with_failures/days", "with failures"}});
  chart_of("cost", "USD", {{"/time_to_train/cost", "steady state"}, {"/time_to_train/with_failures/cost", "with failures"}});
}

void write_plot(const std::string& path, const SweepResult& r) {
  const std::string& name = r.name;
  const std::vector<SweepRange>& ranges = r.ranges;
  const std::vector<SweepPoint>& points = r.points;
  const std::string throughput = r.throughput();
  std::vector<const SweepPoint*> ran;
  for (const SweepPoint& p : points) if (p.report) ran.push_back(&p);
  // x: the GPU count when it changes over the sweep, else the first swept key.
  bool gpus_vary = false;
  for (const SweepPoint* p : ran) gpus_vary |= p->gpus() != ran.front()->gpus();
  const bool numeric = std::all_of(ranges[0].values.begin(), ranges[0].values.end(), [](const core::Json& v) { return v.is_number(); });
  const ShortValues short_value(ranges);
  std::vector<std::string> categories;
  if (!gpus_vary && !numeric) {
    for (const core::Json& v : ranges[0].values) categories.push_back(short_value(0, v));
  }
  auto x_of = [&](const SweepPoint& p) -> double {
    if (gpus_vary) return p.gpus();
    if (numeric) return p.values[0].get<double>();
    return static_cast<double>(std::find(ranges[0].values.begin(), ranges[0].values.end(), p.values[0]) - ranges[0].values.begin());
  };
  std::vector<double> xs;
  for (const SweepPoint* p : ran) xs.push_back(x_of(*p));
  const bool log2 = categories.empty() && !xs.empty() && *std::min_element(xs.begin(), xs.end()) > 0 &&
                    ((!gpus_vary && ranges[0].geometric) || looks_geometric(xs));

  // One series per combination of the other keys' values, in sweep order.
  std::vector<std::string> series_names;
  std::map<std::string, std::vector<const SweepPoint*>> series;
  for (const SweepPoint* p : ran) {
    std::string label;
    for (size_t k = 1; k < ranges.size(); ++k) {
      label += fmt::format("{}{}={}", label.empty() ? "" : ", ", ranges[k].key, short_value(k, p->values[k]));
    }
    if (!series.count(label)) series_names.push_back(label);
    series[label].push_back(p);
  }
  if (gpus_vary && series_names.size() > 1 && series_names.size() == ran.size()) {
    // Every series is one point (the keys change together with the GPU count, e.g. nodes and the
    // data-parallel degree): one curve over all of them reads better.
    series.clear();
    series_names = {""};
    series[""] = ran;
  }

  report::LineChart tput, ratio;
  for (report::LineChart* c : {&tput, &ratio}) {
    c->x_label = gpus_vary ? "GPUs" : ranges[0].key;
    c->x_categories = categories;
    c->log2_x = log2;
  }
  tput.title = fmt::format("{}: throughput", name);
  tput.y_label = throughput_label(throughput);
  ratio.title = fmt::format("{}: MFU and scaling efficiency", name);
  ratio.y_label = "%";
  for (const std::string& label : series_names) {
    report::LineSeries t{label.empty() ? throughput_label(throughput) : label, {}, {}};
    report::LineSeries m{label.empty() ? "MFU" : "MFU, " + label, {}, {}};
    report::LineSeries e{label.empty() ? "scaling efficiency" : "efficiency, " + label, {}, {}};
    for (const SweepPoint* p : series[label]) {
      const double x = x_of(*p);
      t.x.push_back(x);
      t.y.push_back(p->figure(throughput));
      m.x.push_back(x);
      m.y.push_back(100 * p->figure("mfu"));
      e.x.push_back(x);
      e.y.push_back(100 * p->efficiency);
    }
    tput.series.push_back(t);
    ratio.series.push_back(m);
    ratio.series.push_back(e);
  }
  if (gpus_vary && series_names.size() == 1 && !ran.empty()) {
    // Linear scaling from the first point, for reference.
    report::LineSeries ideal{"ideal (linear from the first point)", {}, {}, true};
    const double per_gpu = ran.front()->figure(throughput) / ran.front()->gpus();
    for (const SweepPoint* p : ran) {
      ideal.x.push_back(p->gpus());
      ideal.y.push_back(per_gpu * p->gpus());
    }
    tput.series.push_back(ideal);
  }
  std::vector<report::LineChart> charts = {tput, ratio};
  add_planning_charts(charts, tput, name, series_names, series, x_of);
  report::write_chart_file(path, report::render_line_charts(charts), "--plot");
}

std::string format_table(const SweepResult& r) {
  const std::string& name = r.name;
  const std::string& backend = r.backend;
  const std::vector<SweepRange>& ranges = r.ranges;
  const std::vector<SweepPoint>& points = r.points;
  std::vector<std::vector<std::string>> rows;
  const std::string throughput = r.throughput();
  std::vector<std::string> header;
  for (const SweepRange& range : ranges) header.push_back(range.key);
  for (const std::string& h : {std::string("gpus"), std::string("iteration_time_s"), throughput,
                               std::string("tflops_per_gpu"), std::string("mfu"), std::string("efficiency")}) {
    header.push_back(h);
  }
  const std::vector<const ReportFigure*> planning = planning_columns(r, /*table=*/true);
  for (const ReportFigure* f : planning) header.push_back(planning_header(*f));
  rows.push_back(header);
  const ShortValues short_value(ranges);
  for (const SweepPoint& p : points) {
    std::vector<std::string> row;
    for (size_t k = 0; k < p.values.size(); ++k) row.push_back(short_value(k, p.values[k]));
    if (p.report) {
      row.push_back(std::to_string(p.gpus()));
      row.push_back(fmt::format("{:.4f}", p.figure("iteration_time_s")));
      row.push_back(fmt::format("{:.0f}", p.figure(throughput)));
      row.push_back(fmt::format("{:.1f}", p.figure("model_tflops_per_gpu")));
      row.push_back(fmt::format("{:.1f}%", 100 * p.figure("mfu")));
      row.push_back(fmt::format("{:.1f}%", 100 * p.efficiency));
      for (const ReportFigure* f : planning) row.push_back(planning_cell(p, *f));
    } else {
      row.push_back("error: " + p.error);
    }
    rows.push_back(row);
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& row : rows) {
    // An error row's message spans the figure columns: it does not widen them.
    const size_t n = row.size() == header.size() ? row.size() : row.size() - 1;
    for (size_t i = 0; i < n; ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out = fmt::format("sweep of {} ({} backend): {} points, {} ran\n\n", name, backend, points.size(), r.ran());
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      const bool last_error = row.size() != header.size() && i + 1 == row.size();
      line += i == 0 ? "" : "  ";
      line += last_error ? row[i] : (i < ranges.size() ? fmt::format("{:<{}}", row[i], width[i]) : fmt::format("{:>{}}", row[i], width[i]));
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string format_csv(const SweepResult& r) {
  const std::vector<SweepRange>& ranges = r.ranges;
  const std::vector<SweepPoint>& points = r.points;
  std::string out;
  for (const SweepRange& range : ranges) out += csv_cell(range.key) + ",";
  // samples_per_s, then the planning figures, last: the columns before them keep their places (they
  // came later: layer-graph models, then time to train and cost). Every planning column is there,
  // empty where a point lacks the figure, so that several sweeps' CSVs concatenate.
  out += "gpus,iteration_time_s,tokens_per_s,model_tflops_per_gpu,mfu,scaling_efficiency,error,samples_per_s";
  const std::vector<const ReportFigure*> planning = planning_figures();
  for (const ReportFigure* f : planning) out += fmt::format(",{}", f->name);
  out += "\n";
  for (const SweepPoint& p : points) {
    for (const core::Json& v : p.values) out += csv_cell(value_text(v)) + ",";
    if (p.report) {
      out += fmt::format("{},{},{},{},{},{},,{}", p.gpus(), p.figure("iteration_time_s"), p.figure("tokens_per_s"),
                         p.figure("model_tflops_per_gpu"), p.figure("mfu"), p.efficiency, p.figure("samples_per_s"));
      for (const ReportFigure* f : planning) out += fmt::format(",{}", csv_value(figure_value(*p.report, *f)));
    } else {
      out += fmt::format(",,,,,,{},{}", csv_cell(p.error), std::string(planning.size(), ','));
    }
    out += "\n";
  }
  return out;
}

}  // namespace

int sweep_command(const SweepArgs& args, std::ostream& out, std::ostream& err) {
  if (!args.plot.empty()) report::check_chart_path(args.plot, "--plot");
  const SweepResult r = sweep({.scenario = args.scenario,
                                .overrides = args.overrides,
                                .ranges = args.ranges,
                                .backend = args.backend,
                                .yes = args.yes,
                                .quiet = args.quiet,
                                .prices = parse_prices(args.prices, "--price")});
  r.warnings.print(err, r.points.size());
  switch (args.format) {
    case Format::JSON: out << sweep_json(r).dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n"; break;
    case Format::CSV: out << format_csv(r); break;
    case Format::TABLE: out << format_table(r); break;
  }
  if (r.ran() == 0) {
    throw core::InputError(args.scenario, "", fmt::format("none of the {} points of the sweep could run (see the errors above)", r.points.size()));
  }
  if (!args.plot.empty()) write_plot(args.plot, r);
  return 0;
}

SweepSubcommand::SweepSubcommand(CLI::App& app) {
  command_ = app.add_subcommand("sweep", "Run a scenario over ranges of values: a scaling curve (table, CSV, JSON, plot)");
  command_->add_option("scenario", args_.scenario, "Scenario JSON file")->required();
  command_->add_option("--set-range", args_.ranges,
                       "KEY=START:END:xFACTOR, KEY=START:END:+STEP or KEY=V1,V2,... (repeatable: cartesian product)")
      ->type_name("KEY=RANGE")
      ->required();
  add_overrides(command_, args_.overrides);
  add_backend(command_, args_.backend, "Simulation backend: analytic (default) or simgrid");
  add_format(command_, args_.format, /*csv=*/true);
  command_->add_option("--plot", args_.plot, "Also draw the scaling curve to FILE.svg or FILE.png");
  command_->add_flag("--quiet,-q", args_.quiet, "No progress bar on stderr");
  add_prices(command_, args_.prices);
  command_->add_flag("--yes", args_.yes, fmt::format("Allow more than {} points", SWEEP_POINTS_WITHOUT_YES));
}

std::optional<int> SweepSubcommand::run(std::ostream& out, std::ostream& err) const {
  if (!command_->parsed()) return std::nullopt;
  return sweep_command(args_, out, err);
}

}  // namespace trainsim::cli
