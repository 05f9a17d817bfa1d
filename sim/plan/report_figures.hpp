#pragma once
// The main figures of a report ("schema": "trainsim.report/1"), in one list shared by the commands
// that print reports side by side or as CSV: `run --format csv` (one column each) and `compare`
// (one row each). A figure is read from the report JSON by its pointer, so a report read back from a
// file and one just predicted are shown the same way.

#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"

namespace trainsim::plan {

// Which way a figure improves, for highlighting differences (NEITHER: a label, a count).
enum class Better { LOWER, HIGHER, NEITHER };

struct ReportFigure {
  std::string name;     // CSV column / compare metric name with its unit: "iteration_time_s"
  std::string pointer;  // JSON pointer in the report: "/breakdown_s/compute"
  std::string label;    // table row label with its unit: "iteration time (s)"
  double table_scale;   // table value = report value x table_scale (MFU in %, bytes in GiB)
  int table_digits;     // decimals in tables
  Better better;
};

// In report order: scenario, world_size, backend, iteration_time_s, samples_per_s, tokens_per_s,
// model_tflops_per_gpu, hardware_tflops_per_gpu, mfu, hfu, compute_s, exposed_communication_s,
// exposed_<axis>_s for tensor, context, expert, data, pipeline, pipeline_bubble_s, other_s,
// peak_bytes_per_gpu, capacity_bytes, fits, time_to_train_iterations, time_to_train_days,
// time_to_train_gpu_hours, time_to_train_cost_usd, time_to_train_with_failures_days,
// time_to_train_with_failures_gpu_hours, time_to_train_with_failures_cost_usd, expected_failures,
// goodput, checkpoint_stall_s, energy_per_iteration_j, average_power_w, peak_power_w,
// energy_to_train_mwh, energy_cost_usd, tco2, time_band_pct, inside_envelope.
const std::vector<ReportFigure>& report_figures();

// The planning figures of report_figures(), in its order: time to train (days, GPU-hours, cost), the
// same with failures, expected failures, goodput, the checkpoint stall per iteration, the site's peak
// power, and the energy to train with its cost and emissions; the views that list several runs (sweep's table, CSV and
// JSON) show these beside their own columns.
std::vector<const ReportFigure*> planning_figures();

// The value of `figure` in `report`, or nullptr when the report lacks it (time_to_train without
// training.tokens, cost without a price).
const core::Json* figure_value(const core::Json& report, const ReportFigure& figure);

// A figure's value as a table cell: "-" when absent, a string as itself, yes/NO, a number x
// table_scale with table_digits decimals ("30.2" for an MFU of 0.302).
std::string figure_text(const ReportFigure& figure, const core::Json* value);

// RFC 4180: a field with a comma, a quote or a line break is quoted, its quotes doubled.
std::string csv_field(const std::string& s);
// A JSON value as a CSV field: numbers in the shortest form that reads back exactly, true/false,
// strings quoted as needed, null or nullptr as an empty field.
std::string csv_value(const core::Json* v);

// `run --format csv`: a header row with every figure's name, then the report's row (empty fields
// for figures it lacks), so that rows from several runs concatenate under one header.
std::string report_csv(const core::Json& report);

}  // namespace trainsim::plan
