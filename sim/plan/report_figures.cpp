#include "sim/plan/report_figures.hpp"

#include <fmt/format.h>

#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::plan {

const std::vector<ReportFigure>& report_figures() {
  static const std::vector<ReportFigure> figures = [] {
    std::vector<ReportFigure> f = {
        {"scenario", "/scenario", "scenario", 1, 0, Better::NEITHER},
        {"world_size", "/world_size", "GPUs", 1, 0, Better::NEITHER},
        {"backend", "/simulation/backend", "backend", 1, 0, Better::NEITHER},
        {"iteration_time_s", "/iteration_time_s", "iteration time (s)", 1, 4, Better::LOWER},
        {"samples_per_s", "/samples_per_s", "samples/s", 1, 2, Better::HIGHER},
        {"tokens_per_s", "/tokens_per_s", "tokens/s", 1, 0, Better::HIGHER},
        {"model_tflops_per_gpu", "/model_tflops_per_gpu", "TFLOP/s per GPU (model)", 1, 1, Better::HIGHER},
        {"hardware_tflops_per_gpu", "/hardware_tflops_per_gpu", "TFLOP/s per GPU (hardware)", 1, 1, Better::HIGHER},
        {"mfu", "/mfu", "MFU (%)", 100, 1, Better::HIGHER},
        {"hfu", "/hfu", "HFU (%)", 100, 1, Better::HIGHER},
        {"compute_s", "/breakdown_s/compute", "compute (s)", 1, 4, Better::LOWER},
        {"exposed_communication_s", "/breakdown_s/exposed_communication", "exposed communication (s)", 1, 4,
         Better::LOWER},
    };
    for (int a = 0; a < core::AXIS_COUNT; ++a) {
      const std::string axis(core::to_string(static_cast<core::Axis>(a)));
      f.push_back({"exposed_" + axis + "_s", "/breakdown_s/exposed_communication_by_axis/" + axis,
                   "  exposed " + axis + " comm (s)", 1, 4, Better::LOWER});
    }
    const std::vector<ReportFigure> rest = {
        {"pipeline_bubble_s", "/breakdown_s/pipeline_bubble", "pipeline bubble (s)", 1, 4, Better::LOWER},
        {"pipeline_schedule", "/pipeline/schedule", "pipeline schedule", 1, 0, Better::NEITHER},
        {"pipeline_bubble_fraction", "/pipeline/bubble_fraction", "pipeline bubble (fraction)", 1, 3, Better::LOWER},
        {"pipeline_ideal_bubble_fraction", "/pipeline/ideal_bubble_fraction", "  schedule alone (fraction)", 1, 3,
         Better::LOWER},
        {"other_s", "/breakdown_s/other", "other, optimizer included (s)", 1, 4, Better::LOWER},
        {"peak_bytes_per_gpu", "/memory/peak_bytes_per_gpu", "peak memory per GPU (GiB)", 1.0 / core::GiB, 2,
         Better::LOWER},
        {"capacity_bytes", "/memory/capacity_bytes", "GPU memory (GiB)", 1.0 / core::GiB, 2, Better::NEITHER},
        {"fits", "/memory/fits", "fits in memory", 1, 0, Better::NEITHER},
        {"time_to_train_iterations", "/time_to_train/iterations", "iterations to train", 1, 0, Better::LOWER},
        {"time_to_train_days", "/time_to_train/days", "time to train (days)", 1, 2, Better::LOWER},
        {"time_to_train_gpu_hours", "/time_to_train/gpu_hours", "GPU-hours", 1, 0, Better::LOWER},
        {"time_to_train_cost_usd", "/time_to_train/cost", "cost (USD)", 1, 0, Better::LOWER},
        // With training.checkpoint (resilience.hpp): the same with failures, checkpoint stalls and
        // restarts (Daly's model), the goodput behind them and the stall each iteration pays.
        {"time_to_train_with_failures_days", "/time_to_train/with_failures/days", "  with failures (days)", 1, 2,
         Better::LOWER},
        {"time_to_train_with_failures_gpu_hours", "/time_to_train/with_failures/gpu_hours", "  with failures (GPU-hours)",
         1, 0, Better::LOWER},
        {"time_to_train_with_failures_cost_usd", "/time_to_train/with_failures/cost", "  with failures (USD)", 1, 0,
         Better::LOWER},
        {"expected_failures", "/time_to_train/with_failures/failures", "  failures expected", 1, 0, Better::LOWER},
        {"goodput", "/goodput", "goodput (%)", 100, 1, Better::HIGHER},
        {"checkpoint_stall_s", "/checkpoint/amortized_s_per_iteration", "checkpoint stall per iteration (s)", 1, 4,
         Better::LOWER},
        // Energy (energy.hpp; a GPU whose power is known): per iteration, the site's power, and over
        // the run with training.tokens (its cost with cluster.power.price_per_kwh, its emissions with
        // cluster.power.grid_gco2_per_kwh).
        {"energy_per_iteration_j", "/energy/per_iteration_j", "energy per iteration (MJ)", 1e-6, 3, Better::LOWER},
        {"average_power_w", "/energy/average_power_w", "average power (kW)", 1e-3, 1, Better::NEITHER},
        {"peak_power_w", "/energy/peak_power_w", "peak power (kW)", 1e-3, 1, Better::LOWER},
        {"energy_to_train_mwh", "/energy/run_mwh", "energy to train (MWh)", 1, 1, Better::LOWER},
        {"energy_cost_usd", "/energy/cost", "  energy cost (USD)", 1, 0, Better::LOWER},
        {"tco2", "/energy/tco2", "  emissions (tCO2eq)", 1, 1, Better::LOWER},
        // How sure (uncertainty.hpp): the half-width of the 80% band of the time figures, and whether
        // every mechanism the prediction leans on has a validation case at a similar scale.
        {"time_band_pct", "/bands/time/percent", "80% error band (+/- %)", 1, 1, Better::NEITHER},
        {"inside_envelope", "/envelope/inside", "inside validated envelope", 1, 0, Better::NEITHER},
    };
    f.insert(f.end(), rest.begin(), rest.end());
    return f;
  }();
  return figures;
}

std::vector<const ReportFigure*> planning_figures() {
  std::vector<const ReportFigure*> out;
  for (const ReportFigure& f : report_figures()) {
    if ((f.name.starts_with("time_to_train_") && f.name != "time_to_train_iterations") || f.name == "expected_failures" ||
        f.name == "goodput" || f.name == "checkpoint_stall_s" || f.name == "peak_power_w" ||
        f.name == "energy_to_train_mwh" || f.name == "energy_cost_usd" || f.name == "tco2") {
      out.push_back(&f);
    }
  }
  return out;
}

const core::Json* figure_value(const core::Json& report, const ReportFigure& figure) {
  const core::Json::json_pointer pointer(figure.pointer);
  if (!report.contains(pointer)) return nullptr;
  const core::Json& v = report.at(pointer);
  return v.is_null() ? nullptr : &v;
}

std::string figure_text(const ReportFigure& f, const core::Json* v) {
  if (v == nullptr) return "-";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_boolean()) return v->get<bool>() ? "yes" : "NO";
  if (!v->is_number()) return v->dump();
  return fmt::format("{:.{}f}", v->get<double>() * f.table_scale, f.table_digits);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string csv_value(const core::Json* v) {
  if (v == nullptr || v->is_null()) return "";
  if (v->is_string()) return csv_field(v->get<std::string>());
  if (v->is_boolean()) return v->get<bool>() ? "true" : "false";
  if (v->is_number_integer()) return fmt::format("{}", v->get<int64_t>());
  if (v->is_number_unsigned()) return fmt::format("{}", v->get<uint64_t>());
  if (v->is_number()) return fmt::format("{}", v->get<double>());
  return csv_field(v->dump());
}

std::string report_csv(const core::Json& report) {
  std::string header, row;
  for (const ReportFigure& f : report_figures()) {
    if (!header.empty()) {
      header += ",";
      row += ",";
    }
    header += f.name;
    row += csv_value(figure_value(report, f));
  }
  return header + "\n" + row + "\n";
}

}  // namespace trainsim::plan
