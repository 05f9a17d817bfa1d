#pragma once
// How sure a prediction is: its error bands (bands.hpp) and its validated envelope (envelope.hpp),
// as the report's "bands" and "envelope" objects and the table's lines.
//
// Example:
//   const plan::Uncertainty u = plan::assess(scenario, plan::builtin_band_set());
//   report["bands"] = plan::bands_json(u, report);      // needs the report's headline figures
//   report["envelope"] = u.envelope.to_json();

#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/plan/bands.hpp"
#include "sim/plan/envelope.hpp"

namespace trainsim::plan {

struct Scenario;

struct Uncertainty {
  std::string source;   // the bands file
  std::string backend;  // the backend its cases were predicted with
  double coverage = BAND_COVERAGE;
  Band time;            // iteration time and every figure proportional to it or to its inverse
  Band memory;          // peak memory per GPU
  Envelope envelope;
};

Uncertainty assess(const Scenario& s, const BandSet& set);

// The report's "bands": {coverage, meaning, source, backend, time and memory (each {relative,
// percent, level, group, cases, case_names}; only {group, cases} without a finite band), then {low, high}
// for every headline figure the report has: iteration_time_s, samples_per_s, tokens_per_s,
// model_tflops_per_gpu, hardware_tflops_per_gpu, mfu, hfu, time_to_train_days, time_to_train_gpu_hours,
// time_to_train_cost, peak_bytes_per_gpu (with a memory band)}.
core::Json bands_json(const Uncertainty& u, const core::Json& report);

// "80% band 13.5-15.4" style text of a band of `coverage` (0.8) around `x`, printed with `digits`
// decimals and `unit` (after the numbers), or "" without a finite band.
std::string band_text(const Band& b, double coverage, double x, int digits, const std::string& unit = "");

// The table's lines below the figures: what the band means and where it comes from, then the
// envelope's summary and one line per mechanism.
std::vector<std::string> uncertainty_lines(const Uncertainty& u);

}  // namespace trainsim::plan
