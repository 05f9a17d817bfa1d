#include "sim/plan/sweep.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>

#include "sim/core/error.hpp"
#include "sim/plan/compare.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/progress.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {
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

}  // namespace

double SweepPoint::figure(const std::string& name) const { return report ? (*report)[name].get<double>() : NAN; }

int SweepPoint::gpus() const { return report ? (*report)["world_size"].get<int>() : 0; }

size_t SweepResult::ran() const {
  size_t n = 0;
  for (const SweepPoint& p : points) n += p.report ? 1 : 0;
  return n;
}

std::string SweepResult::throughput() const {
  for (const SweepPoint& p : points) {
    if (p.report) return p.figure("tokens_per_s") > 0 ? "tokens_per_s" : "samples_per_s";
  }
  return "tokens_per_s";
}

SweepRange parse_sweep_range(const std::string& assignment, uint64_t max_values) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == assignment.size()) {
    bad_range(assignment, "expected KEY=START:END:xFACTOR, KEY=START:END:+STEP or KEY=V1,V2,...");
  }
  SweepRange r;
  r.key = assignment.substr(0, eq);
  const std::string spec = assignment.substr(eq + 1);
  // A list, unless START:END:STEP; its values may be JSON objects or arrays (a GPU object), commas
  // and colons included.
  if (spec.find(':') == std::string::npos || spec.front() == '{' || spec.front() == '[' || spec.front() == '"') {
    for (const std::string& item : split_values(spec)) {
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

SweepResult sweep(const SweepOptions& args) {
  if (args.ranges.empty() && args.parsed_ranges.empty()) {
    throw core::InputError(FLAG, "", "give at least one --set-range KEY=RANGE");
  }
  SweepResult result;
  result.backend = args.backend;
  std::vector<SweepRange>& ranges = result.ranges;
  // Each range with the text its messages quote.
  std::vector<std::pair<std::string, SweepRange>> given;
  for (const std::string& text : args.ranges) given.emplace_back(text, parse_sweep_range(text));
  for (const SweepRange& r : args.parsed_ranges) {
    if (r.key.empty()) bad_range(r.key, "expected a key");
    if (r.values.empty()) bad_range(r.key, "expected at least one value");
    given.emplace_back(r.key, r);
  }
  double total = 1;
  for (auto& [text, range] : given) {
    for (const SweepRange& earlier : ranges) {
      if (earlier.key == range.key) bad_range(text, fmt::format("{} is already swept", range.key));
    }
    ranges.push_back(std::move(range));
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
  core::Json doc = args.document ? *args.document : core::load_scenario_file(args.scenario);
  for (const std::string& o : args.overrides) apply_override(doc, o);
  check_keys(doc, ranges, args.scenario);

  std::vector<SweepPoint>& points = result.points;
  std::vector<std::string> gpus;  // of the points that read (--price)
  std::vector<std::vector<std::string>> labels;  // each range's values as warnings name them
  for (const SweepRange& r : ranges) labels.push_back(value_labels(r.values));
  std::vector<size_t> index(ranges.size(), 0);
  const SweepPoint* first = nullptr;
  std::string& name = result.name;
  Progress bar("sweep", static_cast<uint64_t>(total), !args.quiet);
  for (size_t n = 0; n < static_cast<size_t>(total); ++n) {
    // Ctrl-C under a StopOnInterrupt (the Python module) stops between points.
    if (StopOnInterrupt::requested()) throw engine::Interrupted(engine::SimulationProgress{});
    bar.advance();
    SweepPoint p;
    for (size_t k = 0; k < ranges.size(); ++k) p.values.push_back(ranges[k].values[index[k]]);
    try {
      Scenario s = read_scenario(with_values(doc, ranges, p.values), args.scenario);
      apply_prices(s, args.prices, "--price");
      gpus.push_back(s.cluster.gpu);
      if (name.empty()) name = s.name;
      std::string label;
      for (size_t k = 0; k < ranges.size(); ++k) {
        label += fmt::format("{}{}={}", k ? " " : "", ranges[k].key, labels[k][index[k]]);
      }
      result.warnings.add(s.warnings, label);
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
  if (!gpus.empty()) args.prices.check_used(gpus, "--price");
  for (SweepPoint& p : points) {
    if (!p.report) continue;
    if (!first) first = &p;
    // Layer-graph models (docs/cnn.md) have no tokens: their scaling is in samples.
    const std::string throughput = first->figure("tokens_per_s") > 0 ? "tokens_per_s" : "samples_per_s";
    const double base = first->figure(throughput) / first->gpus();
    p.efficiency = (p.figure(throughput) / p.gpus()) / base;
  }
  if (name.empty()) name = std::filesystem::path(args.scenario).stem().string();
  return result;
}

}  // namespace trainsim::plan
