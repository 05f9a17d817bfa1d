#include "sim/plan/uncertainty.hpp"

#include <fmt/format.h>

#include "sim/plan/calibration_run.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {
namespace {

core::Json band_json(const Band& b) {
  // No null in a report (docs/hardening.md): a missing band has no "relative".
  if (!b.finite()) return {{"group", "none: fewer than 4 validation cases with this residual"}, {"cases", b.cases.size()}};
  return {{"relative", b.relative}, {"percent", b.percent()}, {"level", b.level},
          {"group", b.group},       {"cases", b.cases.size()}, {"case_names", b.cases}};
}

void add_interval(core::Json& out, const std::string& name, const Band& b, const core::Json& report,
                  const std::string& pointer) {
  const core::Json::json_pointer ptr(pointer);
  if (!b.finite() || !report.contains(ptr) || !report.at(ptr).is_number()) return;
  const double x = report.at(ptr).get<double>();
  out[name] = {{"low", b.low(x)}, {"high", b.high(x)}};
}

std::string band_line(const char* what, const Band& b) {
  if (!b.finite()) return fmt::format("  {} band: none (fewer than 4 validation cases measure it)", what);
  if (b.level == 0) return fmt::format("  {} band: +/-{:.1f}% from {}", what, b.percent(), b.group);
  return fmt::format("  {} band: +/-{:.1f}% from {} validation cases ({})", what, b.percent(), b.cases.size(), b.group);
}

}  // namespace

Uncertainty assess(const Scenario& s, const BandSet& set) {
  const CaseTraits t = traits_of(s);
  if (!s.calibration_run) {
    return {set.source, set.backend, set.coverage, band_for(set, t, Residual::TIME), band_for(set, t, Residual::MEMORY),
            envelope_of(set, t)};
  }
  // A calibrated profile's run is one more case everywhere, and the band itself near its job
  // (calibration_run.hpp).
  const CalibrationRun& run = *s.calibration_run;
  BandSet with_run = merge_band_sets(set, BandSet{s.profile.device.source, set.backend, set.coverage, {as_band_case(run)}});
  with_run.source = fmt::format("{} and the calibrated run in {}", set.source, s.profile.device.source);
  Uncertainty u{with_run.source,
                with_run.backend,
                with_run.coverage,
                band_for(with_run, t, Residual::TIME),
                band_for(with_run, t, Residual::MEMORY),
                envelope_of(with_run, t)};
  if (std::optional<Band> own = calibrated_time_band(run, s, set.coverage)) u.time = std::move(*own);
  return u;
}

core::Json bands_json(const Uncertainty& u, const core::Json& report) {
  core::Json j;
  j["coverage"] = u.coverage;
  j["meaning"] =
      u.time.finite() && u.time.level == 0
          ? fmt::format("the time band holds {:g}% of the measured iterations of the run the profile was calibrated on "
                        "(split-conformal over their residuals against this profile's prediction; docs/validation.md, "
                        "Error bands of a calibrated profile)",
                        100 * u.coverage)
          : fmt::format("{:g}% of the validation cases like this one were measured inside such a band around their "
                        "prediction (split-conformal over their residuals; docs/validation.md, Error bands)",
                        100 * u.coverage);
  j["source"] = u.source;
  j["backend"] = u.backend;
  j["time"] = band_json(u.time);
  j["memory"] = band_json(u.memory);
  for (const char* f : {"iteration_time_s", "samples_per_s", "tokens_per_s", "model_tflops_per_gpu",
                        "hardware_tflops_per_gpu", "mfu", "hfu"}) {
    add_interval(j, f, u.time, report, std::string("/") + f);
  }
  add_interval(j, "time_to_train_days", u.time, report, "/time_to_train/days");
  add_interval(j, "time_to_train_gpu_hours", u.time, report, "/time_to_train/gpu_hours");
  add_interval(j, "time_to_train_cost", u.time, report, "/time_to_train/cost");
  add_interval(j, "peak_bytes_per_gpu", u.memory, report, "/memory/peak_bytes_per_gpu");
  return j;
}

std::string band_text(const Band& b, double coverage, double x, int digits, const std::string& unit) {
  if (!b.finite()) return "";
  return fmt::format("{:g}% band {:.{}f}-{:.{}f}{}", 100 * coverage, b.low(x), digits, b.high(x), digits, unit);
}

std::vector<std::string> uncertainty_lines(const Uncertainty& u) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("error bands ({:g}% of validation cases like this one fall inside; {} backend, {}):",
                              100 * u.coverage, u.backend, u.source));
  lines.push_back(band_line("time", u.time));
  lines.push_back(band_line("memory", u.memory));
  lines.push_back("envelope: " + u.envelope.summary());
  for (const EnvelopeLine& l : u.envelope.lines) {
    lines.push_back(fmt::format("  {:<58} {}", l.use.description, l.verdict()));
  }
  return lines;
}

}  // namespace trainsim::plan
