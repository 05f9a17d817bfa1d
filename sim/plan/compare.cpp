#include "sim/plan/compare.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <set>

#include "models/strategy.hpp"
#include "sim/core/stack.hpp"
#include "sim/plan/bands.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/progress.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/plan/uncertainty.hpp"

namespace trainsim::plan {
namespace {

constexpr const char* REPORT_SCHEMA = "trainsim.report/1";

// Predicts one scenario document; an impossible configuration becomes the column's error, any other
// InputError (malformed, unknown key) propagates: it is the user's input that is wrong.
// `gpus` collects the configurations' GPU names (--price must price one of them).
// `bands`: the user's bands over the built-in ones (--bands), or nullptr.
Configuration predict_configuration(const core::Json& doc, const std::string& path,
                                    const std::vector<std::string>& overrides, const CompareOptions& args,
                                    std::vector<std::string>& gpus, const BandSet* bands) {
  Configuration c;
  c.source = path;
  c.kind = "scenario";
  core::Json resolved = doc;
  for (const std::string& o : overrides) apply_override(resolved, o);
  try {
    // predict_report: SimGrid 3.32 builds one platform per process, so each SimGrid
    // configuration runs in a child process (configurations may differ in cluster).
    Scenario s = read_scenario(resolved, path);
    apply_prices(s, args.prices, "--price");
    gpus.push_back(s.cluster.gpu);
    c.report = predict_report(s, args.backend);
    if (bands != nullptr) {
      // The report's bands and envelope judged again with the user's cases (uncertainty.hpp).
      const Uncertainty u = assess(s, *bands);
      c.report["bands"] = bands_json(u, c.report);
      c.report["envelope"] = u.envelope.to_json();
    }
  } catch (const ImpossibleScenario& e) {
    c.problems = e.problems();
  }
  return c;
}

// --vary training.stack=...: the scenario's keys that the varied stack would refuse are dropped, so
// that it runs the layout with its own defaults for them: a ZeRO implementation other than the one
// the stack defaults to at the scenario's stage (models::default_zero_impl) and FSDP1's
// backward_prefetch with it, DeepSpeed's section outside
// DeepSpeed, parallelism.prefetch under DeepSpeed, shard_group (HSDP) and reduce_dtype where no FSDP
// runs, recompute_early_stop and torch.compile under Megatron, gradient_buffers under Megatron and
// DeepSpeed (their buffers are allocated once). Keys the stack accepts stay as the
// user chose them (a PURE run's reduce_dtype "bf16"), and so does any key the user varies or sets.
// Returns the keys dropped.
std::vector<std::string> drop_stack_owned_keys(core::Json& doc, const std::string& stack,
                                               const std::vector<std::string>& given) {
  std::vector<std::string> refused;
  const core::Json* par = doc.contains("parallelism") && doc["parallelism"].is_object() ? &doc["parallelism"] : nullptr;
  const std::optional<core::Stack> target = core::stack_named(stack);
  if (target && par != nullptr && par->contains("zero_impl") && (*par)["zero_impl"].is_string()) {
    const core::Json* stage = par->contains("zero_stage") ? &(*par)["zero_stage"] : nullptr;
    if (stage != nullptr && stage->is_number_integer() &&
        (*par)["zero_impl"].get<std::string>() != models::to_string(models::default_zero_impl(stage->get<int>(), target))) {
      refused.insert(refused.end(), {"parallelism.zero_impl", "parallelism.backward_prefetch"});
    }
  }
  if (stack == "deepspeed") {
    refused.insert(refused.end(), {"parallelism.prefetch", "parallelism.shard_group", "parallelism.gradient_buffers"});
  }
  if (stack == "megatron") {
    refused.insert(refused.end(), {"parallelism.shard_group", "parallelism.reduce_dtype",
                                   "parallelism.recompute_early_stop", "parallelism.gradient_buffers", "training.compile"});
  }
  if (stack != "deepspeed") refused.emplace_back("training.deepspeed");
  std::vector<std::string> dropped;
  for (const std::string& path : refused) {
    const std::string section = path.substr(0, path.find('.')), key = path.substr(path.find('.') + 1);
    const bool user_given = std::any_of(given.begin(), given.end(), [&](const std::string& g) {
      return g.rfind(path + "=", 0) == 0 || g.rfind(path + ".", 0) == 0;
    });
    if (user_given || !doc.contains(section) || !doc[section].is_object() || !doc[section].contains(key)) continue;
    if (std::find(dropped.begin(), dropped.end(), path) != dropped.end()) continue;
    doc[section].erase(key);
    dropped.push_back(path);
  }
  return dropped;
}

// The value of "key=value" to label: an object as apply_override reads it, anything else as written
// ("1e3", "\"full\"" stay as the user typed them).
core::Json assigned_value(const std::string& assignment) {
  const std::string text = assignment.substr(assignment.find('=') + 1);
  try {
    core::Json v = core::Json::parse(text);
    if (v.is_object()) return v;
  } catch (const core::Json::exception&) {
  }
  return text;
}

// One value's label before duplicates are told apart (value_labels).
std::string value_label(const core::Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object()) {
    for (const char* key : {"label", "name"}) {
      if (v.contains(key) && v[key].is_string() && !v[key].get<std::string>().empty()) return v[key].get<std::string>();
    }
    if (v.contains("base") && v["base"].is_string()) return v["base"].get<std::string>() + " (custom)";
  }
  return v.dump();
}

std::string stem_of(const std::string& path) { return std::filesystem::path(path).stem().string(); }

bool in_memory(const CompareOptions& args, size_t i) { return i < args.documents.size() && !args.documents[i].is_null(); }

// Input i's document: the one in memory (CompareOptions::documents), else its file's.
core::Json document_of(const CompareOptions& args, size_t i) {
  return in_memory(args, i) ? args.documents[i] : core::load_scenario_file(args.inputs[i]);
}

// Input i's label: its file's stem, or a document's name whole (it is no path: "<gpt3-6.7b>").
std::string short_label(const CompareOptions& args, size_t i) {
  return in_memory(args, i) ? args.inputs[i] : stem_of(args.inputs[i]);
}

// Ctrl-C under a StopOnInterrupt (the Python module) stops between configurations.
void stop_if_interrupted() {
  if (StopOnInterrupt::requested()) throw engine::Interrupted(engine::SimulationProgress{});
}

std::vector<Configuration> configurations_of(const CompareOptions& args) {
  std::vector<Configuration> out;
  std::vector<std::string> gpus;  // of the scenarios that ran (--price)
  const std::optional<BandSet> user_bands =
      args.bands.empty() ? std::nullopt : std::optional<BandSet>(band_set_with(args.bands));
  const BandSet* bands = user_bands ? &*user_bands : nullptr;
  // Each scenario is a whole prediction (seconds with SimGrid): a bar on a terminal.
  const bool show_progress = !args.quiet;
  TRAINSIM_CHECK(args.documents.empty() || args.documents.size() == args.inputs.size(),
                 fmt::format("compare: {} documents for {} inputs", args.documents.size(), args.inputs.size()));
  if (!args.vary.empty()) {
    if (args.inputs.size() != 1) {
      throw core::InputError("--vary", "",
                             fmt::format("compares variations of one scenario, found {} inputs", args.inputs.size()));
    }
    const std::string& path = args.inputs.front();
    const core::Json doc = document_of(args, 0);
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
    // Labels use the last key component ("pipeline=8") unless two varied keys share it, and each
    // value's short label (a GPU object's label or name, not its every figure).
    std::set<std::string> lasts;
    bool short_labels = true;
    for (const std::string& k : keys) short_labels &= lasts.insert(k.substr(k.rfind('.') + 1)).second;
    std::vector<std::vector<std::string>> axis_labels;
    for (size_t a = 0; a < axes.size(); ++a) {
      std::vector<core::Json> values;
      for (const std::string& assignment : axes[a]) values.push_back(assigned_value(assignment));
      const std::string shown_key = short_labels ? keys[a].substr(keys[a].rfind('.') + 1) : keys[a];
      axis_labels.emplace_back();
      for (const std::string& v : value_labels(values)) axis_labels.back().push_back(shown_key + "=" + v);
    }
    Progress bar("compare", total, show_progress);
    for (size_t n = 0; n < total; ++n) {
      stop_if_interrupted();
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
        label += axis_labels[a][index[a]];
      }
      std::vector<std::string> overrides = args.overrides;
      overrides.insert(overrides.end(), assignments.begin(), assignments.end());
      core::Json varied = doc;
      std::vector<std::string> dropped;
      for (const std::string& a : assignments) {
        if (a.rfind("training.stack=", 0) != 0) continue;
        core::Json value = assigned_value(a);
        if (value.is_string()) dropped = drop_stack_owned_keys(varied, value.get<std::string>(), overrides);
      }
      Configuration c = predict_configuration(varied, path, overrides, args, gpus, bands);
      c.label = label;
      c.overrides = assignments;
      c.stack_defaults = dropped;
      out.push_back(std::move(c));
    }
    if (!gpus.empty()) args.prices.check_used(gpus, "--price");
    return out;
  }

  std::map<std::string, int> stems;
  for (size_t i = 0; i < args.inputs.size(); ++i) ++stems[short_label(args, i)];
  Progress bar("compare", args.inputs.size(), show_progress);
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    stop_if_interrupted();
    const std::string& path = args.inputs[i];
    bar.advance();
    const core::Json doc = document_of(args, i);
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
      c = predict_configuration(doc, path, args.overrides, args, gpus, bands);
    }
    c.label = stems[short_label(args, i)] > 1 ? path : short_label(args, i);  // report.json from two --out folders
    out.push_back(std::move(c));
  }
  if (out.size() > MAX_CONFIGURATIONS) {
    throw core::InputError("compare", "", fmt::format("more than {} inputs", MAX_CONFIGURATIONS));
  }
  if (!gpus.empty()) args.prices.check_used(gpus, "--price");
  return out;
}

std::optional<size_t> reference_of(const std::vector<Configuration>& cs) {
  for (size_t i = 0; i < cs.size(); ++i) {
    if (cs[i].ok()) return i;
  }
  return std::nullopt;
}

std::vector<CompareRow> rows_of(const std::vector<Configuration>& cs, std::optional<size_t> ref) {
  std::vector<CompareRow> rows;
  for (const ReportFigure& f : report_figures()) {
    CompareRow r;
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
          // Below half the table's last digit a value is zero: a 1e-17 s "bubble" left by floating
          // sums of task times is no base for a percentage.
          const double tiny = 0.5 * std::pow(10.0, -f.table_digits) / f.table_scale;
          double b = base->get<double>(), x = v->get<double>();
          if (std::abs(b) < tiny) b = 0;
          if (std::abs(x) < tiny) x = 0;
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

}  // namespace

bool is_unused_axis(const CompareRow& row) {
  const std::string& name = row.figure->name;
  const bool axis_row = name.starts_with("exposed_") && name != "exposed_communication_s";
  return axis_row && std::none_of(row.values.begin(), row.values.end(), [](const core::Json* v) {
           return v != nullptr && v->is_number() && v->get<double>() != 0;
         });
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
    } else if (name == "fits" || name == "inside_envelope") {
      if (!v->is_boolean()) expected = "true or false";
    } else if (name == "world_size" || name == "time_to_train_iterations") {
      const std::optional<int64_t> i = core::exact_integer(*v);
      const int64_t max = name == "world_size" ? int64_t{1} << 24 : int64_t{1} << 60;
      if (!i || *i < 1 || *i > max) expected = fmt::format("an integer from 1 to {}", max);
    } else {
      const bool fraction = name == "mfu" || name == "hfu" || name == "goodput" || name.ends_with("_fraction");
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

std::vector<std::string> value_labels(const std::vector<core::Json>& values) {
  std::vector<std::string> labels;
  std::map<std::string, int> uses;
  for (const core::Json& v : values) ++uses[labels.emplace_back(value_label(v))];
  for (size_t i = 0; i < labels.size(); ++i) {
    if (uses[labels[i]] > 1) labels[i] += fmt::format(" #{}", i + 1);
  }
  return labels;
}

CompareResult compare(const CompareOptions& options) {
  CompareResult r;
  r.configurations = configurations_of(options);
  for (const Configuration& c : r.configurations) r.warnings.add_report(c.report, c.label);
  r.reference = reference_of(r.configurations);
  r.rows = rows_of(r.configurations, r.reference);
  return r;
}

}  // namespace trainsim::plan
