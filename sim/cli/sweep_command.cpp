#include "sim/cli/sweep_command.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>

#include "sim/cli/cli_options.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/progress.hpp"
#include "sim/plan/scenario_warnings.hpp"
#include "sim/cli/validate_command.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/report/chart_file.hpp"
#include "sim/report/line_chart.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

constexpr const char* FLAG = "--set-range";

[[noreturn]] void bad_range(const std::string& assignment, const std::string& why) {
  throw core::InputError(FLAG, "", fmt::format("\"{}\": {}", assignment, why));
}

std::optional<double> parse_number(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool is_integer(double v) { return v == std::floor(v) && std::abs(v) < 9e15; }

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

core::Json number_json(double v, bool integers) {
  return integers ? core::Json(static_cast<int64_t>(std::llround(v))) : core::Json(v);
}

// A value as it appears in a table, a CSV cell or a series name: strings without quotes.
std::string value_text(const core::Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

struct Point {
  std::vector<core::Json> values;  // one per range
  std::optional<core::Json> report;
  std::string error;
  double efficiency = 0;

  double figure(const std::string& name) const { return report ? (*report)[name].get<double>() : NAN; }
  int gpus() const { return report ? (*report)["world_size"].get<int>() : 0; }
};

// Applies one point's values to the scenario document.
core::Json with_values(core::Json doc, const std::vector<SweepRange>& ranges, const std::vector<core::Json>& values) {
  for (size_t k = 0; k < ranges.size(); ++k) apply_override(doc, ranges[k].key + "=" + values[k].dump());
  return doc;
}

// An unknown key fails every point: report it once, as bad input, instead of as N error rows.
void check_keys(const core::Json& doc, const std::vector<SweepRange>& ranges, const std::string& file) {
  std::vector<core::InputProblem> unknown;
  for (const SweepRange& r : ranges) {
    core::Json d = doc;
    apply_override(d, r.key + "=" + r.values.front().dump());
    try {
      read_scenario(d, file);
    } catch (const core::InputError& e) {
      for (const core::InputProblem& p : e.problems()) {
        if (p.message.rfind("unknown key", 0) == 0) unknown.push_back({FLAG, p.pointer, p.message});
      }
    }
  }
  if (!unknown.empty()) throw core::InputError(unknown);
}

std::string error_text(const core::InputError& e) {
  std::string text;
  for (const core::InputProblem& p : e.problems()) {
    if (!text.empty()) text += "; ";
    text += p.pointer.empty() ? p.message : p.pointer + ": " + p.message;
  }
  return text;
}

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

// The throughput of the sweep's model: tokens/s, or samples/s for a layer-graph model (docs/cnn.md),
// which has no tokens.
std::string throughput_of(const std::vector<Point>& points) {
  for (const Point& p : points) {
    if (p.report) return p.figure("tokens_per_s") > 0 ? "tokens_per_s" : "samples_per_s";
  }
  return "tokens_per_s";
}

// "tokens/s" or "samples/s".
std::string throughput_label(const std::string& key) { return key.substr(0, key.find('_')) + "/s"; }

void write_plot(const std::string& path, const std::string& name, const std::vector<SweepRange>& ranges,
                const std::vector<Point>& points) {
  const std::string throughput = throughput_of(points);
  std::vector<const Point*> ran;
  for (const Point& p : points) if (p.report) ran.push_back(&p);
  // x: the GPU count when it changes over the sweep, else the first swept key.
  bool gpus_vary = false;
  for (const Point* p : ran) gpus_vary |= p->gpus() != ran.front()->gpus();
  const bool numeric = std::all_of(ranges[0].values.begin(), ranges[0].values.end(), [](const core::Json& v) { return v.is_number(); });
  std::vector<std::string> categories;
  if (!gpus_vary && !numeric) {
    for (const core::Json& v : ranges[0].values) categories.push_back(value_text(v));
  }
  auto x_of = [&](const Point& p) -> double {
    if (gpus_vary) return p.gpus();
    if (numeric) return p.values[0].get<double>();
    return static_cast<double>(std::find(ranges[0].values.begin(), ranges[0].values.end(), p.values[0]) - ranges[0].values.begin());
  };
  std::vector<double> xs;
  for (const Point* p : ran) xs.push_back(x_of(*p));
  const bool log2 = categories.empty() && !xs.empty() && *std::min_element(xs.begin(), xs.end()) > 0 &&
                    ((!gpus_vary && ranges[0].geometric) || looks_geometric(xs));

  // One series per combination of the other keys' values, in sweep order.
  std::vector<std::string> series_names;
  std::map<std::string, std::vector<const Point*>> series;
  for (const Point* p : ran) {
    std::string label;
    for (size_t k = 1; k < ranges.size(); ++k) {
      label += fmt::format("{}{}={}", label.empty() ? "" : ", ", ranges[k].key, value_text(p->values[k]));
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
    for (const Point* p : series[label]) {
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
    for (const Point* p : ran) {
      ideal.x.push_back(p->gpus());
      ideal.y.push_back(per_gpu * p->gpus());
    }
    tput.series.push_back(ideal);
  }
  report::write_chart_file(path, report::render_line_charts({tput, ratio}), "--plot");
}

std::string format_table(const std::string& name, const std::string& backend, const std::vector<SweepRange>& ranges,
                         const std::vector<Point>& points) {
  std::vector<std::vector<std::string>> rows;
  const std::string throughput = throughput_of(points);
  std::vector<std::string> header;
  for (const SweepRange& r : ranges) header.push_back(r.key);
  for (const std::string& h : {std::string("gpus"), std::string("iteration_time_s"), throughput,
                               std::string("tflops_per_gpu"), std::string("mfu"), std::string("efficiency")}) {
    header.push_back(h);
  }
  rows.push_back(header);
  for (const Point& p : points) {
    std::vector<std::string> row;
    for (const core::Json& v : p.values) row.push_back(value_text(v));
    if (p.report) {
      row.push_back(std::to_string(p.gpus()));
      row.push_back(fmt::format("{:.4f}", p.figure("iteration_time_s")));
      row.push_back(fmt::format("{:.0f}", p.figure(throughput)));
      row.push_back(fmt::format("{:.1f}", p.figure("model_tflops_per_gpu")));
      row.push_back(fmt::format("{:.1f}%", 100 * p.figure("mfu")));
      row.push_back(fmt::format("{:.1f}%", 100 * p.efficiency));
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
  size_t ran = 0;
  for (const Point& p : points) ran += p.report ? 1 : 0;
  std::string out = fmt::format("sweep of {} ({} backend): {} points, {} ran\n\n", name, backend, points.size(), ran);
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

std::string format_csv(const std::vector<SweepRange>& ranges, const std::vector<Point>& points) {
  std::string out;
  for (const SweepRange& r : ranges) out += csv_cell(r.key) + ",";
  // samples_per_s last: the columns before it keep their places (it came with layer-graph models).
  out += "gpus,iteration_time_s,tokens_per_s,model_tflops_per_gpu,mfu,scaling_efficiency,error,samples_per_s\n";
  for (const Point& p : points) {
    for (const core::Json& v : p.values) out += csv_cell(value_text(v)) + ",";
    if (p.report) {
      out += fmt::format("{},{},{},{},{},{},,{}\n", p.gpus(), p.figure("iteration_time_s"), p.figure("tokens_per_s"),
                         p.figure("model_tflops_per_gpu"), p.figure("mfu"), p.efficiency, p.figure("samples_per_s"));
    } else {
      out += ",,,,,," + csv_cell(p.error) + ",\n";
    }
  }
  return out;
}

core::Json format_json(const std::string& name, const std::string& backend, const std::vector<SweepRange>& ranges,
                       const std::vector<Point>& points) {
  core::Json keys = core::Json::array();
  for (const SweepRange& r : ranges) keys.push_back(r.key);
  core::Json rows = core::Json::array();
  for (const Point& p : points) {
    core::Json values;
    for (size_t k = 0; k < ranges.size(); ++k) values[ranges[k].key] = p.values[k];
    core::Json row{{"values", values}};
    if (p.report) {
      row["world_size"] = p.gpus();
      for (const char* f : {"iteration_time_s", "tokens_per_s", "samples_per_s", "model_tflops_per_gpu", "mfu"}) {
        row[f] = p.figure(f);
      }
      row["scaling_efficiency"] = p.efficiency;
    } else {
      row["error"] = p.error;
    }
    rows.push_back(row);
  }
  return {{"schema", "trainsim.sweep/1"}, {"scenario", name}, {"backend", backend}, {"keys", keys}, {"points", rows}};
}

}  // namespace

SweepRange parse_sweep_range(const std::string& assignment, uint64_t max_values) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == assignment.size()) {
    bad_range(assignment, "expected KEY=START:END:xFACTOR, KEY=START:END:+STEP or KEY=V1,V2,...");
  }
  SweepRange r;
  r.key = assignment.substr(0, eq);
  const std::string spec = assignment.substr(eq + 1);
  if (spec.find(':') == std::string::npos) {
    for (const std::string& item : split(spec, ',')) {
      if (item.empty()) bad_range(assignment, "empty value in the list");
      try {
        r.values.push_back(core::Json::parse(item));
      } catch (const core::Json::out_of_range&) {
        bad_range(assignment, fmt::format("{} is beyond a double's range", item));
      } catch (const core::Json::parse_error&) {
        r.values.push_back(item);
      }
    }
    if (r.values.size() > max_values) bad_range(assignment, fmt::format("more than {} values", max_values));
    return r;
  }
  const std::vector<std::string> parts = split(spec, ':');
  if (parts.size() != 3 || parts[2].size() < 2 || (parts[2][0] != 'x' && parts[2][0] != '+')) {
    bad_range(assignment, "expected START:END:xFACTOR (geometric, e.g. 16:512:x2) or START:END:+STEP (arithmetic, e.g. 16:512:+16)");
  }
  const std::optional<double> start = parse_number(parts[0]), end = parse_number(parts[1]),
                              step = parse_number(parts[2].substr(1));
  if (!start || !end || !step) bad_range(assignment, "START, END and the factor or step must be numbers");
  if (*end < *start) bad_range(assignment, fmt::format("END ({}) is below START ({})", parts[1], parts[0]));
  r.geometric = parts[2][0] == 'x';
  const bool integers = is_integer(*start) && is_integer(*end) && is_integer(*step);
  // Counted before anything is built, so that 1:1e15:+1 is refused instead of exhausting memory.
  const double slack = 1e-9 * std::max(std::abs(*end), 1.0);
  double count = 0;
  if (r.geometric) {
    if (*step <= 1) bad_range(assignment, "the factor after 'x' must be greater than 1");
    if (*start <= 0) bad_range(assignment, "a geometric range needs START > 0");
    count = std::floor(std::log(*end / *start) / std::log(*step) + 1e-9) + 1;
  } else {
    if (*step <= 0) bad_range(assignment, "the step after '+' must be positive");
    count = std::floor((*end - *start + slack) / *step) + 1;
  }
  if (!(count <= static_cast<double>(max_values))) {  // an infinite count (a factor too close to 1) too
    bad_range(assignment, std::isfinite(count) ? fmt::format("{:.0f} values, more than the {} a sweep can hold", count, max_values)
                                               : fmt::format("more values than the {} a sweep can hold", max_values));
  }
  for (uint64_t i = 0; i < static_cast<uint64_t>(count); ++i) {
    const double v = r.geometric ? *start * std::pow(*step, static_cast<double>(i)) : *start + *step * static_cast<double>(i);
    if (v > *end + slack) break;
    r.values.push_back(number_json(v, integers));
  }
  return r;
}

int sweep_command(const SweepArgs& args, std::ostream& out, std::ostream& err) {
  if (args.ranges.empty()) throw core::InputError(FLAG, "", "give at least one --set-range KEY=RANGE");
  if (!args.plot.empty()) report::check_chart_path(args.plot, "--plot");
  std::vector<SweepRange> ranges;
  double total = 1;
  for (const std::string& text : args.ranges) {
    ranges.push_back(parse_sweep_range(text));
    for (size_t k = 0; k + 1 < ranges.size(); ++k) {
      if (ranges[k].key == ranges.back().key) bad_range(text, fmt::format("{} is already swept", ranges[k].key));
    }
    total *= static_cast<double>(ranges.back().values.size());
  }
  if (total > static_cast<double>(MAX_SWEEP_POINTS)) {
    throw core::InputError(FLAG, "", fmt::format("the ranges make {:.3g} points, more than the {} a sweep can run (even "
                                                 "with --yes): narrow them",
                                                 total, MAX_SWEEP_POINTS));
  }
  if (total > static_cast<double>(SWEEP_POINTS_WITHOUT_YES) && !args.yes) {
    throw core::InputError(FLAG, "", fmt::format("the ranges make {:.0f} points, more than {}: narrow them or pass --yes",
                                                 total, SWEEP_POINTS_WITHOUT_YES));
  }
  core::Json doc = core::load_scenario_file(args.scenario);
  for (const std::string& o : args.overrides) apply_override(doc, o);
  check_keys(doc, ranges, args.scenario);

  std::vector<Point> points;
  std::vector<size_t> index(ranges.size(), 0);
  const Point* first = nullptr;
  std::string name;
  ScenarioWarnings warnings;
  Progress bar("sweep", static_cast<uint64_t>(total), !args.quiet);
  for (size_t n = 0; n < static_cast<size_t>(total); ++n) {
    bar.advance();
    Point p;
    for (size_t k = 0; k < ranges.size(); ++k) p.values.push_back(ranges[k].values[index[k]]);
    try {
      const Scenario s = read_scenario(with_values(doc, ranges, p.values), args.scenario);
      if (name.empty()) name = s.name;
      std::string label;
      for (size_t k = 0; k < ranges.size(); ++k) {
        label += fmt::format("{}{}={}", k ? " " : "", ranges[k].key, p.values[k].dump());
      }
      warnings.add(s.warnings, label);
      p.report = predict_report(s, args.backend);  // SimGrid in a child process: one platform per process
    } catch (const core::InputError& e) {
      p.error = error_text(e);
    }
    points.push_back(std::move(p));
    // Odometer: the last range varies fastest.
    for (size_t k = ranges.size(); k-- > 0;) {
      if (++index[k] < ranges[k].values.size()) break;
      index[k] = 0;
    }
  }
  bar.finish();
  warnings.print(err, points.size());
  for (Point& p : points) {
    if (!p.report) continue;
    if (!first) first = &p;
    // Layer-graph models (docs/cnn.md) have no tokens: their scaling is in samples.
    const std::string throughput = first->figure("tokens_per_s") > 0 ? "tokens_per_s" : "samples_per_s";
    const double base = first->figure(throughput) / first->gpus();
    p.efficiency = (p.figure(throughput) / p.gpus()) / base;
  }
  if (name.empty()) name = std::filesystem::path(args.scenario).stem().string();

  switch (args.format) {
    case Format::JSON: out << format_json(name, args.backend, ranges, points).dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n"; break;
    case Format::CSV: out << format_csv(ranges, points); break;
    case Format::TABLE: out << format_table(name, args.backend, ranges, points); break;
  }
  if (!first) {
    throw core::InputError(args.scenario, "", fmt::format("none of the {} points of the sweep could run (see the errors above)", points.size()));
  }
  if (!args.plot.empty()) write_plot(args.plot, name, ranges, points);
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
  command_->add_flag("--yes", args_.yes, fmt::format("Allow more than {} points", SWEEP_POINTS_WITHOUT_YES));
}

std::optional<int> SweepSubcommand::run(std::ostream& out, std::ostream& err) const {
  if (!command_->parsed()) return std::nullopt;
  return sweep_command(args_, out, err);
}

}  // namespace trainsim::cli
