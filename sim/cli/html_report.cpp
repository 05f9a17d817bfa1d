#include "sim/cli/html_report.hpp"

#include <cmath>
#include <fmt/format.h>
#include <functional>

#include "sim/cli/report_charts.hpp"
#include "sim/core/power.hpp"
#include "sim/core/units.hpp"
#include "sim/plan/ranking_accuracy.hpp"
#include "sim/report/svg.hpp"

namespace trainsim::cli {
namespace {

using report::xml_escape;

constexpr const char* STYLE = R"(
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 900px; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.subtitle { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.6em 0; }
td, th { padding: 0.25em 0.8em; border-bottom: 1px solid #eee; text-align: right; }
td:first-child, th:first-child { text-align: left; }
table.headline td.value { font-size: 1.25em; font-weight: bold; }
.oom { color: #c00; font-weight: bold; }
.inside { color: #070; }
td.band { color: #555; }
svg { max-width: 100%; height: auto; }
footer { margin-top: 2em; color: #777; font-size: 0.85em; }
)";

double num(const core::Json& j, const char* pointer) {
  const core::Json::json_pointer p(pointer);
  return j.contains(p) && j.at(p).is_number() ? j.at(p).get<double>() : 0.0;
}

std::string text(const core::Json& j, const char* pointer) {
  const core::Json::json_pointer p(pointer);
  if (!j.contains(p)) return "";
  return j.at(p).is_string() ? j.at(p).get<std::string>() : j.at(p).dump();
}

std::string row(const std::string& name, const std::string& value, const std::string& cls = "") {
  return fmt::format("<tr><td>{}</td><td{}>{}</td></tr>\n", xml_escape(name),
                     cls.empty() ? "" : fmt::format(" class=\"{}\"", cls), xml_escape(value));
}

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / core::GiB); }

// A headline row with its 80% band (the report's bands.FIELD {low, high}) in a third cell.
std::string banded_row(const std::string& name, const std::string& value, const core::Json& r, const std::string& field,
                       const std::function<std::string(double)>& format, const std::string& cls = "value") {
  const core::Json::json_pointer low("/bands/" + field + "/low"), high("/bands/" + field + "/high");
  const std::string band = r.contains(low) && r.contains(high) && r.at(low).is_number() && r.at(high).is_number()
                               ? format(r.at(low).get<double>()) + " - " + format(r.at(high).get<double>())
                               : "no band";
  return fmt::format("<tr><td>{}</td><td class=\"{}\">{}</td><td class=\"band\">{}</td></tr>\n", xml_escape(name), cls,
                     xml_escape(value), xml_escape(band));
}

// "How sure": the bands' meaning and groups, then the envelope's mechanisms.
std::string uncertainty_html(const core::Json& r) {
  if (!r.contains("bands") || !r.contains("envelope")) return "";
  std::string h = "<h2>How sure</h2>\n";
  h += fmt::format("<p>{} (from {}, {} backend).</p>\n<table class=\"bands\">\n<tr><th>band</th><th>+/-</th><th>from</th></tr>\n",
                   xml_escape(text(r, "/bands/meaning")), xml_escape(text(r, "/bands/source")), xml_escape(text(r, "/bands/backend")));
  for (const char* kind : {"time", "memory"}) {
    const std::string base = std::string("/bands/") + kind;
    const core::Json::json_pointer pct(base + "/percent");
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{} cases: {}</td></tr>\n", kind,
                     r.contains(pct) && r.at(pct).is_number() ? fmt::format("{:.1f}%", r.at(pct).get<double>()) : "-",
                     static_cast<long>(num(r, (base + "/cases").c_str())), xml_escape(text(r, (base + "/group").c_str())));
  }
  h += "</table>\n";
  h += fmt::format("<p class=\"{}\">{}</p>\n<table class=\"envelope\">\n<tr><th>mechanism</th><th>validation</th></tr>\n",
                   r["envelope"].value("inside", false) ? "inside" : "oom", xml_escape(text(r, "/envelope/summary")));
  if (r["envelope"].contains("mechanisms") && r["envelope"]["mechanisms"].is_array()) {
    for (const core::Json& m : r["envelope"]["mechanisms"]) {
      if (!m.is_object()) continue;
      h += row(text(m, "/description"), text(m, "/verdict"));
    }
  }
  return h + "</table>\n";
}

// A number with thousands separators ("8,860,953"), for the large totals of a whole run.
std::string grouped(double v) {
  const std::string digits = fmt::format("{:.0f}", std::abs(v));
  std::string out = v < 0 && digits != "0" ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

// "Time to train and cost": the whole run at the predicted iteration time, with failures where the
// scenario has training.checkpoint, and the checkpoint's stall; nothing without training.tokens.
std::string planning_html(const core::Json& r) {
  if (!r.contains("time_to_train") || !r["time_to_train"].is_object()) return "";
  const auto has = [&](const char* pointer) { return r.contains(core::Json::json_pointer(pointer)); };
  std::string h = "<h2>Time to train and cost</h2>\n<table class=\"planning\">\n";
  h += "<tr><th></th><th></th><th>80% error band</th></tr>\n";
  h += banded_row("time to train", fmt::format("{:.2f} days ({} iterations for {:.3g} tokens)", num(r, "/time_to_train/days"),
                                                grouped(num(r, "/time_to_train/iterations")), num(r, "/time_to_train/tokens")),
                  r, "time_to_train_days", [](double v) { return fmt::format("{:.2f} days", v); });
  h += banded_row("GPU-hours", grouped(num(r, "/time_to_train/gpu_hours")), r, "time_to_train_gpu_hours", grouped, "");
  if (has("/time_to_train/cost")) {
    h += banded_row("cost", fmt::format("${}", grouped(num(r, "/time_to_train/cost"))), r, "time_to_train_cost",
                    [](double v) { return fmt::format("${}", grouped(v)); });
  }
  if (has("/time_to_train/with_failures")) {
    h += row("with failures", fmt::format("{:.2f} days, {} GPU-hours{}", num(r, "/time_to_train/with_failures/days"),
                                          grouped(num(r, "/time_to_train/with_failures/gpu_hours")),
                                          has("/time_to_train/with_failures/cost")
                                              ? fmt::format(", ${}", grouped(num(r, "/time_to_train/with_failures/cost")))
                                              : ""));
    h += row("failures expected", fmt::format("{:.0f}", num(r, "/time_to_train/with_failures/failures")));
    h += row("goodput", fmt::format("{:.1f}%", 100 * num(r, "/time_to_train/with_failures/goodput")));
  }
  if (has("/time_to_train/simulated_failures")) {
    h += row(fmt::format("{} simulated runs", static_cast<long>(num(r, "/time_to_train/simulated_failures/runs"))),
             fmt::format("p5 {:.2f}, p50 {:.2f}, p95 {:.2f} days", num(r, "/time_to_train/simulated_failures/days/p5"),
                         num(r, "/time_to_train/simulated_failures/days/p50"),
                         num(r, "/time_to_train/simulated_failures/days/p95")));
  }
  if (has("/checkpoint/amortized_s_per_iteration")) {
    h += row("checkpoint stall", fmt::format("{:.4f} s per iteration ({}, every {:.1f} s)", num(r, "/checkpoint/amortized_s_per_iteration"),
                                             text(r, "/checkpoint/mode"), num(r, "/checkpoint/interval_s")));
  }
  return h + "</table>\n";
}

// "Energy and power": the report's energy object (absent: the GPU's power is not known).
std::string energy_html(const core::Json& r) {
  if (!r.contains("energy") || !r["energy"].is_object()) return "";
  std::string h = "<h2>Energy and power</h2>\n<table class=\"energy\">\n";
  h += row("energy per iteration", fmt::format("{:.4g} MJ (facility, PUE {:g})", num(r, "/energy/per_iteration_j") / 1e6,
                                               num(r, "/energy/pue")));
  h += row("average power", core::format_watts(num(r, "/energy/average_power_w")));
  h += row("peak power", core::format_watts(num(r, "/energy/peak_power_w")));
  for (const char* activity : {"gemm_bound", "memory_bound", "communication", "waiting"}) {
    const std::string base = std::string("/energy/gpu/");
    h += row(fmt::format("GPUs {}", activity),
             fmt::format("{:.4g} MJ over {:.4g} GPU-seconds", num(r, (base + "j/" + activity).c_str()) / 1e6,
                         num(r, (base + "s/" + activity).c_str())));
  }
  h += row("hosts, NICs, switches", fmt::format("{:.4g} MJ", num(r, "/energy/non_gpu_j") / 1e6));
  if (r["energy"].contains("run_mwh")) {
    h += row("energy to train", fmt::format("{:.4g} MWh", num(r, "/energy/run_mwh")));
    if (r["energy"].contains("with_failures_mwh")) {
      h += row("  with failures", fmt::format("{:.4g} MWh", num(r, "/energy/with_failures_mwh")));
    }
    if (r["energy"].contains("cost")) h += row("energy cost", fmt::format("${:.0f}", num(r, "/energy/cost")));
    if (r["energy"].contains("tco2")) h += row("emissions", fmt::format("{:.4g} tCO2eq", num(r, "/energy/tco2")));
  }
  return h + "</table>\n";
}

}  // namespace

std::string html_compare(const plan::CompareResult& result, const std::string& title,
                         const std::vector<report::BarChart>& charts) {
  const std::vector<plan::Configuration>& cs = result.configurations;
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += fmt::format("<title>trainsim compare: {}</title>\n<style>{}{}</style>\n</head>\n<body>\n", xml_escape(title), STYLE,
                   "td.sub { padding-left: 2em; }\ntd.differs { font-weight: bold; }\ntd.better { color: #070; }\ntd.worse { color: #c00; }\n");
  h += fmt::format("<h1>{}</h1>\n", xml_escape(title));
  if (result.reference) {
    h += fmt::format("<p class=\"subtitle\">{} configurations; differences vs \"{}\"; bold where one differs by more than "
                     "{:g}% (green: better, red: worse)</p>\n",
                     cs.size(), xml_escape(cs[*result.reference].label), plan::HIGHLIGHT_PCT);
  }
  h += "<table class=\"compare\">\n<tr><th></th>";
  for (const plan::Configuration& c : cs) h += fmt::format("<th>{}</th>", xml_escape(c.label));
  h += "</tr>\n";
  for (const plan::CompareRow& r : result.rows) {
    if (plan::is_unused_axis(r)) continue;
    // A label indented in the text table ("  with failures (days)") is a sub-row: indented by CSS.
    const std::string& label = r.figure->label;
    const size_t indent = label.find_first_not_of(' ');
    h += fmt::format("<tr><td{}>{}</td>", indent > 0 ? " class=\"sub\"" : "", xml_escape(label.substr(indent)));
    for (size_t i = 0; i < cs.size(); ++i) {
      if (!cs[i].ok()) {
        h += "<td>cannot run</td>";
        continue;
      }
      std::string cell = plan::figure_text(*r.figure, r.values[i]);
      const bool ranked = r.figure->better != plan::Better::NEITHER;
      if (r.diff_pct[i] && result.reference && i != *result.reference && ranked) cell += fmt::format(" ({:+.1f}%)", *r.diff_pct[i]);
      std::string cls;
      if (r.differs[i]) {
        const bool lower = r.figure->better == plan::Better::LOWER;
        cls = "differs";
        if (ranked && r.diff_pct[i]) cls += (lower == (*r.diff_pct[i] < 0)) ? " better" : " worse";
      }
      h += fmt::format("<td{}>{}</td>", cls.empty() ? "" : fmt::format(" class=\"{}\"", cls), xml_escape(cell));
    }
    h += "</tr>\n";
  }
  h += "</table>\n";
  if (const std::vector<std::string> accuracy = plan::compare_accuracy(result).lines(); !accuracy.empty()) {
    h += "<h2>How sure</h2>\n<ul>\n";
    for (const std::string& l : accuracy) h += fmt::format("<li>{}</li>\n", xml_escape(l));
    h += "</ul>\n";
  }
  for (const plan::Configuration& c : cs) {
    if (c.ok()) continue;
    h += fmt::format("<h2>{} cannot run</h2>\n<ul>\n", xml_escape(c.label));
    for (const core::InputProblem& p : c.problems) h += fmt::format("<li>{}</li>\n", xml_escape(p.to_string()));
    h += "</ul>\n";
  }
  for (const report::BarChart& chart : charts) h += report::render_bar_chart(chart).str();
  h += "<footer>trainsim compare</footer>\n</body>\n</html>\n";
  return h;
}

std::string html_report(const core::Json& r, const std::string& timeline_file) {
  const std::string name = text(r, "/scenario");
  const double time_s = num(r, "/iteration_time_s");
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += fmt::format("<title>trainsim: {}</title>\n<style>{}</style>\n</head>\n<body>\n", xml_escape(name), STYLE);
  h += fmt::format("<h1>{}</h1>\n<p class=\"subtitle\">{} GPUs, {} micro-batches ({} schedule), simulated by the {} backend</p>\n",
                   xml_escape(name), static_cast<long>(num(r, "/world_size")), static_cast<long>(num(r, "/pipeline/micro_batches")),
                   xml_escape(text(r, "/pipeline/schedule")), xml_escape(text(r, "/simulation/backend")));

  h += "<table class=\"headline\">\n";
  h += "<tr><th></th><th></th><th>80% error band</th></tr>\n";
  h += banded_row("iteration time", fmt::format("{:.4f} s", time_s), r, "iteration_time_s",
                  [](double v) { return fmt::format("{:.4f} s", v); });
  h += banded_row("throughput", fmt::format("{:.0f} tokens/s ({:.2f} samples/s)", num(r, "/tokens_per_s"), num(r, "/samples_per_s")),
                  r, "tokens_per_s", [](double v) { return fmt::format("{:.0f} tokens/s", v); });
  h += banded_row("model TFLOP/s per GPU", fmt::format("{:.1f} (hardware {:.1f})", num(r, "/model_tflops_per_gpu"),
                                                       num(r, "/hardware_tflops_per_gpu")),
                  r, "model_tflops_per_gpu", [](double v) { return fmt::format("{:.1f}", v); });
  h += banded_row("MFU", fmt::format("{:.1f}% (HFU {:.1f}%)", 100 * num(r, "/mfu"), 100 * num(r, "/hfu")), r, "mfu",
                  [](double v) { return fmt::format("{:.1f}%", 100 * v); });
  const bool fits = r.contains("memory") && r["memory"].value("fits", true);
  h += banded_row("peak memory per GPU", fmt::format("{} of {}: {}", gib(num(r, "/memory/peak_bytes_per_gpu")),
                                                     gib(num(r, "/memory/capacity_bytes")), fits ? "fits" : "OUT OF MEMORY"),
                  r, "peak_bytes_per_gpu", gib, fits ? "value" : "value oom");
  h += "</table>\n";
  h += planning_html(r);
  h += uncertainty_html(r);

  h += "<h2>Where the time goes</h2>\n";
  h += report::render_bar_chart(breakdown_bar_chart({{name, r}}, "time breakdown of the critical rank")).str();
  h += "<table class=\"breakdown\">\n<tr><th>part</th><th>time (s)</th><th>share</th></tr>\n";
  const std::vector<std::string> parts = breakdown_parts();
  const std::vector<double> values = breakdown_values(r);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (values[i] <= 0) continue;
    h += fmt::format("<tr><td>{}</td><td>{:.4f}</td><td>{:.1f}%</td></tr>\n", xml_escape(parts[i]), values[i],
                     time_s > 0 ? 100 * values[i] / time_s : 0.0);
  }
  h += "</table>\n";

  h += energy_html(r);

  h += "<h2>Memory per GPU</h2>\n";
  h += report::render_bar_chart(memory_bar_chart(r)).str();
  h += "<table class=\"memory\">\n<tr><th>part</th><th>bytes</th></tr>\n";
  if (r.contains("memory") && r["memory"].contains("breakdown_bytes")) {
    for (const auto& [part, bytes] : r["memory"]["breakdown_bytes"].items()) {
      h += row(part, gib(bytes.get<double>()));
    }
  }
  h += "</table>\n";

  if (r.contains("network") && r["network"].contains("top_links")) {
    h += "<h2>Most utilized links</h2>\n<table class=\"links\">\n<tr><th>link</th><th>bytes</th><th>utilization</th></tr>\n";
    for (const core::Json& l : r["network"]["top_links"]) {
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.1f}%</td></tr>\n", xml_escape(l.value("link", "")),
                       gib(l.value("bytes", 0.0)), 100 * l.value("utilization", 0.0));
    }
    h += "</table>\n";
  }
  if (!timeline_file.empty()) {
    h += fmt::format("<h2>Timeline</h2>\n<p>Written to <a href=\"{0}\"><code>{0}</code></a>: open it in "
                     "ui.perfetto.dev or chrome://tracing.</p>\n",
                     xml_escape(timeline_file));
  }
  h += fmt::format("<footer>trainsim report ({}), simulated in {:.3f} s, profile: {}</footer>\n</body>\n</html>\n",
                   xml_escape(text(r, "/schema")), num(r, "/simulation/wall_s"), xml_escape(text(r, "/simulation/profile")));
  return h;
}

}  // namespace trainsim::cli
