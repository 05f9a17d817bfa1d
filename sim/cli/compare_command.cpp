#include "sim/cli/compare_command.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <set>

#include "sim/plan/progress.hpp"
#include "sim/plan/report_figures.hpp"
#include "sim/plan/scenario_warnings.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/cli/validate_command.hpp"
#include "sim/cli/cli_options.hpp"
#include "sim/cli/report_charts.hpp"
#include "sim/report/bar_chart.hpp"
#include "sim/report/chart_file.hpp"
#include "sim/core/error.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

constexpr const char* REPORT_SCHEMA = "trainsim.report/1";
constexpr double HIGHLIGHT_PCT = 1.0;    // rows differing by more than this are highlighted
constexpr size_t MAX_CONFIGURATIONS = 256;  // beyond this a side-by-side table is unreadable

struct Configuration {
  std::string label;
  std::string source;                  // the file it came from
  std::string kind;                    // "report" | "scenario"
  std::vector<std::string> overrides;  // the --vary assignments that made it (--set not repeated)
  core::Json report;                   // null when it failed
  std::vector<core::InputProblem> problems;  // why it cannot run

  bool ok() const { return !report.is_null(); }
  std::string error() const { return core::InputError(problems).what(); }
};

struct Row {
  const ReportFigure* figure;
  std::vector<const core::Json*> values;      // per configuration; nullptr: absent or failed
  std::vector<std::optional<double>> diff_pct;  // vs the reference; nullopt: not a number or no reference
  std::vector<bool> differs;                  // per configuration, vs the reference
  bool any_differs = false;
};

// Splits on commas outside [], {} and "..." so that JSON values keep theirs.
std::vector<std::string> split_values(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '\\' && i + 1 < text.size()) {
        current += c;
        current += text[++i];
        continue;
      }
      if (c == '"') quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  out.push_back(current);
  return out;
}

bool is_report(const core::Json& doc) { return doc.is_object() && doc.contains("schema"); }

void check_report(const core::Json& doc, const std::string& path) {
  const core::Json& schema = doc["schema"];
  if (!schema.is_string() || schema.get<std::string>() != REPORT_SCHEMA) {
    throw core::InputError(path, "/schema",
                           fmt::format("expected \"{}\" (a report written by `trainsim run --format json` or "
                                       "--out) or no \"schema\" (a scenario), found {}",
                                       REPORT_SCHEMA, core::describe_json(schema)));
  }
  if (!doc.contains("iteration_time_s") || !doc["iteration_time_s"].is_number()) {
    throw core::InputError(path, "/iteration_time_s", "a report needs the iteration time (a number)");
  }
  // A report is trainsim's own output, but it may have been edited, truncated or written by another
  // version: every figure compare prints is checked like user input, so that a negative time is not
  // ranked first nor an MFU of 750% shown.
  core::Diagnostics diag;
  for (const char* section : {"breakdown_s", "memory", "simulation", "pipeline", "time_to_train"}) {
    if (doc.contains(section) && !doc[section].is_object()) {
      diag.add(path, core::append_pointer("", section),
               fmt::format("expected an object (a report of `trainsim run`), found {}", core::describe_json(doc[section])));
    }
  }
  // trainsim never writes null in a report (the null rule, docs/hardening.md): one is an edit, and
  // compare prints the report whole.
  const std::function<void(const core::Json&, const std::string&)> no_null = [&](const core::Json& j,
                                                                                  const std::string& pointer) {
    if (j.is_null()) {
      diag.add(path, pointer, "expected a value (a report of `trainsim run` holds no null), found null");
    } else if (j.is_object()) {
      for (const auto& [key, value] : j.items()) no_null(value, core::append_pointer(pointer, key));
    } else if (j.is_array()) {
      for (size_t i = 0; i < j.size(); ++i) no_null(j[i], core::append_pointer(pointer, i));
    }
  };
  no_null(doc, "");
  diag.throw_if_any();
  for (const ReportFigure& f : report_figures()) {
    const core::Json* v = figure_value(doc, f);
    if (v == nullptr) continue;
    const std::string name = f.name;
    std::string expected;
    if (name == "scenario" || name == "backend" || name == "pipeline_schedule") {
      if (!v->is_string()) expected = "a string";
    } else if (name == "fits") {
      if (!v->is_boolean()) expected = "true or false";
    } else if (name == "world_size" || name == "time_to_train_iterations") {
      const std::optional<int64_t> i = core::exact_integer(*v);
      const int64_t max = name == "world_size" ? int64_t{1} << 24 : int64_t{1} << 60;
      if (!i || *i < 1 || *i > max) expected = fmt::format("an integer from 1 to {}", max);
    } else {
      const bool fraction = name == "mfu" || name == "hfu" || name.ends_with("_fraction");
      const double max = fraction ? 1.0 : 1e30;
      const bool positive = name == "iteration_time_s";
      if (!v->is_number() || !(v->get<double>() >= 0 && v->get<double>() <= max) ||
          (positive && v->get<double>() == 0)) {
        expected = fraction   ? "a fraction in [0, 1]"
                   : positive ? "a positive number of seconds"
                              : "a finite number >= 0";
      }
    }
    if (!expected.empty()) {
      diag.add(path, f.pointer, fmt::format("expected {} (a report of `trainsim run`), found {}", expected, core::describe_json(*v)));
    }
  }
  diag.throw_if_any();
}

// Predicts one scenario document; an impossible configuration becomes the column's error, any other
// InputError (malformed, unknown key) propagates: it is the user's input that is wrong.
Configuration predict_configuration(const core::Json& doc, const std::string& path,
                                    const std::vector<std::string>& overrides, const std::string& backend) {
  Configuration c;
  c.source = path;
  c.kind = "scenario";
  core::Json resolved = doc;
  for (const std::string& o : overrides) apply_override(resolved, o);
  try {
    // validate's predictor: SimGrid 3.32 builds one platform per process, so each SimGrid
    // configuration runs in a child process (configurations may differ in cluster).
    c.report = predict_report(read_scenario(resolved, path), backend);
  } catch (const ImpossibleScenario& e) {
    c.problems = e.problems();
  }
  return c;
}

std::string stem_of(const std::string& path) { return std::filesystem::path(path).stem().string(); }

std::vector<Configuration> configurations_of(const CompareArgs& args) {
  std::vector<Configuration> out;
  // Each scenario is a whole prediction (seconds with SimGrid): a bar on a terminal.
  const bool show_progress = !args.quiet;
  if (!args.vary.empty()) {
    if (args.inputs.size() != 1) {
      throw core::InputError("--vary", "",
                             fmt::format("compares variations of one scenario, found {} inputs", args.inputs.size()));
    }
    const std::string& path = args.inputs.front();
    const core::Json doc = core::load_scenario_file(path);
    if (is_report(doc)) {
      throw core::InputError("--vary", "", fmt::format("needs a scenario; {} is a report (its figures are fixed)", path));
    }
    std::vector<std::vector<std::string>> axes;
    std::vector<std::string> keys;
    for (const std::string& v : args.vary) {
      axes.push_back(vary_assignments(v));
      const std::string key = v.substr(0, v.find('='));
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
        throw core::InputError("--vary", "", fmt::format("\"{}\" is varied twice; give all its values in one --vary", key));
      }
      keys.push_back(key);
    }
    size_t total = 1;
    for (const auto& a : axes) {
      total *= a.size();
      if (total > MAX_CONFIGURATIONS) {
        throw core::InputError("--vary", "",
                               fmt::format("more than {} combinations; a side-by-side table of that many is unreadable "
                                           "(use fewer values)",
                                           MAX_CONFIGURATIONS));
      }
    }
    // Labels use the last key component ("pipeline=8") unless two varied keys share it.
    std::set<std::string> lasts;
    bool short_labels = true;
    for (const std::string& k : keys) short_labels &= lasts.insert(k.substr(k.rfind('.') + 1)).second;
    Progress bar("compare", total, show_progress);
    for (size_t n = 0; n < total; ++n) {
      bar.advance();
      std::vector<std::string> assignments;
      std::string label;
      size_t rest = n;
      std::vector<size_t> index(axes.size());
      for (size_t a = axes.size(); a-- > 0;) {  // the last --vary changes fastest
        index[a] = rest % axes[a].size();
        rest /= axes[a].size();
      }
      for (size_t a = 0; a < axes.size(); ++a) {
        const std::string& assignment = axes[a][index[a]];
        assignments.push_back(assignment);
        if (!label.empty()) label += " ";
        label += short_labels ? assignment.substr(assignment.rfind('.', assignment.find('=')) + 1) : assignment;
      }
      std::vector<std::string> overrides = args.overrides;
      overrides.insert(overrides.end(), assignments.begin(), assignments.end());
      Configuration c = predict_configuration(doc, path, overrides, args.backend);
      c.label = label;
      c.overrides = assignments;
      out.push_back(std::move(c));
    }
    return out;
  }

  std::map<std::string, int> stems;
  for (const std::string& path : args.inputs) ++stems[stem_of(path)];
  Progress bar("compare", args.inputs.size(), show_progress);
  for (const std::string& path : args.inputs) {
    bar.advance();
    const core::Json doc = core::load_scenario_file(path);
    Configuration c;
    if (is_report(doc)) {
      check_report(doc, path);
      if (!args.overrides.empty()) {
        throw core::InputError("--set", "", fmt::format("applies to scenarios; {} is a report (its figures are fixed)", path));
      }
      c.source = path;
      c.kind = "report";
      c.report = doc;
    } else {
      c = predict_configuration(doc, path, args.overrides, args.backend);
    }
    c.label = stems[stem_of(path)] > 1 ? path : stem_of(path);  // report.json from two --out folders
    out.push_back(std::move(c));
  }
  if (out.size() > MAX_CONFIGURATIONS) {
    throw core::InputError("compare", "", fmt::format("more than {} inputs", MAX_CONFIGURATIONS));
  }
  return out;
}

std::optional<size_t> reference_of(const std::vector<Configuration>& cs) {
  for (size_t i = 0; i < cs.size(); ++i) {
    if (cs[i].ok()) return i;
  }
  return std::nullopt;
}

std::vector<Row> rows_of(const std::vector<Configuration>& cs, std::optional<size_t> ref) {
  std::vector<Row> rows;
  for (const ReportFigure& f : report_figures()) {
    Row r;
    r.figure = &f;
    bool any = false;
    for (const Configuration& c : cs) {
      r.values.push_back(c.ok() ? figure_value(c.report, f) : nullptr);
      any |= r.values.back() != nullptr;
    }
    if (!any) continue;
    const core::Json* base = ref ? r.values[*ref] : nullptr;
    for (size_t i = 0; i < cs.size(); ++i) {
      const core::Json* v = r.values[i];
      std::optional<double> pct;
      bool differs = false;
      if (base != nullptr && v != nullptr && i != *ref) {
        if (base->is_number() && v->is_number() && !base->is_boolean()) {
          const double b = base->get<double>(), x = v->get<double>();
          if (b != 0) {
            pct = (x - b) / std::abs(b) * 100;
          } else if (x == 0) {
            pct = 0.0;
          }
          differs = pct ? std::abs(*pct) > HIGHLIGHT_PCT : true;
        } else {
          differs = *base != *v;
        }
      } else if (base != nullptr && v == nullptr && cs[i].ok()) {
        differs = true;  // a figure one report has and the other lacks (e.g. time_to_train)
      } else if (i == ref) {
        pct = 0.0;
      }
      r.diff_pct.push_back(pct);
      r.differs.push_back(differs);
      r.any_differs |= differs;
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string cell_text(const ReportFigure& f, const core::Json* v) {
  if (v == nullptr) return "-";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_boolean()) return v->get<bool>() ? "yes" : "NO";
  if (!v->is_number()) return v->dump();
  return fmt::format("{:.{}f}", v->get<double>() * f.table_scale, f.table_digits);
}

void write_table(const std::vector<Configuration>& cs, const std::vector<Row>& rows, std::optional<size_t> ref,
                 bool color, std::ostream& out) {
  // Cell texts first, to size the columns.
  const size_t n = cs.size();
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> labels;
  std::vector<const Row*> shown;
  for (const Row& r : rows) {
    // Exposed communication on an axis no configuration uses is noise in a table (JSON/CSV keep it).
    const bool axis_row = r.figure->name.starts_with("exposed_") && r.figure->name != "exposed_communication_s";
    if (axis_row && std::none_of(r.values.begin(), r.values.end(),
                                 [](const core::Json* v) { return v != nullptr && v->is_number() && v->get<double>() != 0; })) {
      continue;
    }
    std::vector<std::string> line;
    for (size_t i = 0; i < n; ++i) {
      if (!cs[i].ok()) {
        line.push_back(r.figure->name == "scenario" ? "FAILED (below)" : "");
        continue;
      }
      std::string text = cell_text(*r.figure, r.values[i]);
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
    const Row& r = *shown[k];
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
  for (const Configuration& c : cs) {
    if (c.ok()) continue;
    out << fmt::format("\n{} cannot run:\n", c.label);
    for (const core::InputProblem& p : c.problems) out << "  " << p.to_string() << "\n";
  }
}

core::Json json_of(const std::vector<Configuration>& cs, const std::vector<Row>& rows, std::optional<size_t> ref) {
  core::Json j;
  j["schema"] = "trainsim.compare/1";
  j["reference"] = ref ? core::Json(*ref) : core::Json(nullptr);
  j["highlight_pct"] = HIGHLIGHT_PCT;
  core::Json configs = core::Json::array();
  for (const Configuration& c : cs) {
    core::Json cj;
    cj["label"] = c.label;
    cj["source"] = c.source;
    cj["kind"] = c.kind;
    if (!c.overrides.empty()) cj["vary"] = c.overrides;
    if (c.ok()) {
      cj["report"] = c.report;
    } else {
      cj["error"] = c.error();
      core::Json problems = core::Json::array();
      for (const core::InputProblem& p : c.problems) {
        problems.push_back({{"file", p.file}, {"pointer", p.pointer}, {"message", p.message}});
      }
      cj["problems"] = problems;
    }
    configs.push_back(cj);
  }
  j["configurations"] = configs;
  core::Json rj = core::Json::array();
  for (const Row& r : rows) {
    core::Json values = core::Json::array(), diffs = core::Json::array();
    for (size_t i = 0; i < cs.size(); ++i) {
      values.push_back(r.values[i] ? *r.values[i] : core::Json(nullptr));
      diffs.push_back(r.diff_pct[i] ? core::Json(*r.diff_pct[i]) : core::Json(nullptr));
    }
    rj.push_back({{"metric", r.figure->name}, {"values", values}, {"diff_pct", diffs}, {"differs", r.any_differs}});
  }
  j["rows"] = rj;
  return j;
}

void write_csv(const std::vector<Configuration>& cs, const std::vector<Row>& rows, std::ostream& out) {
  out << "metric";
  for (const Configuration& c : cs) out << "," << csv_field(c.label);
  for (const Configuration& c : cs) out << "," << csv_field(c.label + " diff_pct");
  out << "\n";
  for (const Row& r : rows) {
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

}  // namespace

std::vector<std::string> vary_assignments(const std::string& vary) {
  const size_t eq = vary.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw core::InputError("--vary", "", fmt::format("expected key.path=value1,value2,..., found \"{}\"", vary));
  }
  const std::string key = vary.substr(0, eq);
  std::vector<std::string> out;
  for (const std::string& value : split_values(vary.substr(eq + 1))) {
    if (value.empty()) {
      throw core::InputError("--vary", "", fmt::format("empty value in \"{}\" (values are separated by commas)", vary));
    }
    out.push_back(key + "=" + value);
  }
  return out;
}

int compare_command(const CompareArgs& args, std::ostream& out, std::ostream& err) {
  if (!args.plot.empty()) report::check_chart_path(args.plot, "--plot");
  const std::vector<Configuration> cs = configurations_of(args);
  ScenarioWarnings warnings;
  for (const Configuration& c : cs) warnings.add_report(c.report, c.label);
  warnings.print(err, cs.size());
  const std::optional<size_t> ref = reference_of(cs);
  const std::vector<Row> rows = rows_of(cs, ref);
  switch (args.format) {
    case Format::JSON: out << json_of(cs, rows, ref).dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n"; break;
    case Format::CSV: write_csv(cs, rows, out); break;
    case Format::TABLE: write_table(cs, rows, ref, args.color, out); break;
  }
  if (!args.plot.empty()) {
    std::vector<LabeledReport> bars;
    for (const Configuration& c : cs) {
      if (c.ok()) bars.push_back({c.label, c.report});
    }
    report::BarChart chart = breakdown_bar_chart(bars, "compare");
    chart.ranked = false;  // in the order given, like the table's columns
    report::write_chart_file(args.plot, report::render_bar_chart(chart), "--plot");
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
  command_->add_option("--plot", args_.plot, "Also draw the configurations' time breakdowns as bars to FILE.svg or FILE.png");
  command_->add_flag("--quiet,-q", args_.quiet, "No progress bar on stderr");
}

std::optional<int> CompareSubcommand::run(std::ostream& out, std::ostream& err) const {
  if (!command_->parsed()) return std::nullopt;
  CompareArgs args = args_;
  args.color = &out == &std::cout && isatty(STDOUT_FILENO) != 0 && std::getenv("NO_COLOR") == nullptr;
  return compare_command(args, out, err);
}

}  // namespace trainsim::cli
