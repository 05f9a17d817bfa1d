#include "sim/cli/calibrate_command.hpp"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <algorithm>
#include <fmt/ranges.h>
#include <iostream>
#include <map>

#include "calibrate/accuracy.hpp"
#include "calibrate/iteration_marks.hpp"
#include "calibrate/measured_on.hpp"
#include "calibrate/nccl_tests_import.hpp"
#include "calibrate/profile_fit.hpp"
#include "calibrate/trace_set.hpp"
#include "network/collective_cost.hpp"
#include "network/feasibility.hpp"
#include "sim/cli/cli_options.hpp"
#include "sim/plan/calibration_run.hpp"
#include "sim/plan/stack_fit.hpp"
#include "calibrate/traced_work.hpp"
#include "sim/plan/report_figures.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;

TracedCluster load_traced_cluster(const std::string& scenario_file, const std::vector<std::string>& overrides,
                                  const std::string& device_name, int gpus_per_node, int nodes) {
  core::Json doc = scenario_file.empty() ? core::Json::object() : core::load_scenario_file(scenario_file);
  for (const std::string& o : overrides) apply_override(doc, o);
  // Without a scenario, the cluster comes from the traces and --set: an error names the option that
  // gives the missing value.
  const std::string origin = !scenario_file.empty() ? scenario_file : overrides.empty() ? "--scenario" : "--set";
  core::Json& cluster = doc["cluster"];
  if (cluster.is_null()) cluster = core::Json::object();
  if (cluster.is_object() && !cluster.contains("gpu")) {
    const core::GpuSpec* gpu = calibrate::catalog_gpu_for(device_name);
    if (gpu == nullptr) {
      throw core::InputError(origin, "/cluster/gpu",
                             device_name.empty()
                                 ? std::string("the traces name no GPU: give a scenario whose cluster names the GPU, or "
                                               "--set cluster.gpu=NAME")
                                 : fmt::format("the measurements name the GPU \"{}\", which is not in the catalog "
                                               "(`trainsim describe gpus`): give a scenario whose cluster names the "
                                               "GPU, or --set cluster.gpu=NAME",
                                               device_name));
    }
    cluster["gpu"] = gpu->name;
  }
  if (cluster.is_object() && gpus_per_node > 0) cluster["gpus_per_node"] = gpus_per_node;
  if (cluster.is_object() && nodes > 0) cluster["nodes"] = nodes;

  TracedCluster out;
  core::Diagnostics diag;
  core::ObjectReader r(cluster, origin, "/cluster", diag);
  out.cluster = network::ClusterConfig::from_json(r);
  network::check_feasibility(out.cluster, origin, "/cluster", diag);
  out.profile.device = core::DeviceProfile::defaults_for(out.cluster.profile_gpu());
  const core::Json* profile = doc.contains("simulation") && doc["simulation"].is_object() &&
                                      doc["simulation"].contains("profile")
                                  ? &doc["simulation"]["profile"]
                                  : nullptr;
  if (profile != nullptr && !profile->is_string()) {
    diag.add(origin, "/simulation/profile", fmt::format("expected a file name, found {}", core::describe_json(*profile)));
  } else if (profile != nullptr) {
    std::filesystem::path p(profile->get<std::string>());
    if (p.is_relative() && !scenario_file.empty()) p = std::filesystem::path(scenario_file).parent_path() / p;
    const core::Json profile_doc = core::load_json_file(p.string());
    core::ObjectReader pr(profile_doc, p.string(), "", diag);
    out.profile = core::Profile::from_json(pr, out.profile);
  }
  diag.throw_if_any();
  return out;
}

namespace {

// The device the measurements name (the traces', else the first nccl-tests run's); throws when two
// of them are different catalog GPUs: one profile describes one GPU type.
std::string measured_device(const std::optional<calibrate::TraceSet>& traces,
                            const std::vector<calibrate::NcclTestsRun>& runs) {
  std::vector<std::pair<std::string, std::string>> named;  // (where, device)
  if (traces && !traces->device_name().empty()) named.emplace_back(traces->files().front().path, traces->device_name());
  for (const calibrate::NcclTestsRun& r : runs) {
    if (!r.gpu().empty()) named.emplace_back(r.where(), r.gpu());
  }
  if (named.empty()) return "";
  const core::GpuSpec* first = calibrate::catalog_gpu_for(named.front().second);
  for (const auto& [where, device] : named) {
    const core::GpuSpec* gpu = calibrate::catalog_gpu_for(device);
    if (first != nullptr && gpu != nullptr && gpu != first) {
      throw core::InputError(where, "",
                             fmt::format("measured on {} ({}), but {} was measured on {} ({}): calibrate one GPU "
                                         "type at a time",
                                         device, gpu->name, named.front().first, named.front().second, first->name));
    }
  }
  return named.front().second;
}

// One row per category: name, samples, fitted, in_profile, r_squared, rms and max relative residual
// (empty when not fitted), parameters as "name=value;..." and the note.
std::string fit_csv(const calibrate::ProfileFit& fit) {
  std::string s = "category,samples,fitted,in_profile,r_squared,rms_relative_residual,max_relative_residual,parameters,note\n";
  for (const calibrate::FitCategory& c : fit.categories) {
    std::vector<std::string> params;
    for (const auto& [name, value] : c.parameters) params.push_back(fmt::format("{}={:.6g}", name, value));
    s += fmt::format("{},{},{},{},{},{},{},{},{}\n", csv_field(c.name), c.samples, c.fitted, c.in_profile,
                     c.fitted ? fmt::format("{:.6g}", c.r_squared) : "", c.fitted ? fmt::format("{:.6g}", c.rms_relative_residual) : "",
                     c.fitted ? fmt::format("{:.6g}", c.max_relative_residual) : "", csv_field(fmt::format("{}", fmt::join(params, ";"))),
                     csv_field(c.note));
  }
  return s;
}

void write_profile(const std::string& path, const core::Json& json) {
  core::write_output_file(path, json.dump(2, ' ', false, core::Json::error_handler_t::replace) + "\n", "-o");
}

// What checking the profile on the traced job gives: the stack fit that closed the gap, and the
// run's prediction with the fitted profile beside each measured iteration.
struct TracedJobCheck {
  StackFit stack;
  CalibrationRun run;
  Scenario job;  // with the fitted profile
};

// With a full scenario of the traced job (it has a "model") and traces that mark their iterations:
// fits the user's stack on the job (sim/plan/stack_fit.hpp: `fit`'s device profile amended, the
// profile at args.output rewritten), then predicts the job with it and sets the prediction beside each
// measured iteration (sim/plan/calibration_run.hpp). nullopt otherwise, with a note on `err` when
// only the markers are missing.
std::optional<TracedJobCheck> check_on_traced_run(const CalibrateArgs& args, const calibrate::TraceSet& traces,
                                                  calibrate::ProfileFit& fit, core::Json& json, std::ostream& err) {
  if (args.scenario.empty()) return std::nullopt;
  const core::Json doc = core::load_scenario_file(args.scenario);
  if (!doc.is_object() || !doc.contains("model")) return std::nullopt;
  const std::vector<calibrate::MeasuredIteration> iterations = calibrate::measured_iterations(traces);
  if (iterations.empty()) {
    err << fmt::format(
        "calibrate: the traces mark no iteration (ProfilerStep#N), so the profile was not checked against the traced "
        "job of {} (trace with `trainsim trace --nvtx` around a loop that names its steps, or torch.profiler)\n",
        args.scenario);
    return std::nullopt;
  }
  std::vector<std::string> overrides = args.overrides;
  overrides.push_back("simulation.profile=" + std::filesystem::absolute(args.output).string());
  std::vector<double> measured;
  for (const calibrate::MeasuredIteration& it : iterations) measured.push_back(it.time.value());
  const double median = calibrate::median(measured);

  const Scenario kernel_fit_job = load_scenario(args.scenario, overrides);
  const bool fused = kernel_fit_job.training.attention == models::Attention::FLASH;
  StackFit stack = fit_stack(kernel_fit_job, calibrate::traced_work(traces, fused), median, kernel_fit_job.name);
  fit.profile.device = stack.device;
  json = calibrate::profile_fit_json(fit);
  json["stack_fit"] = stack.to_json();
  json["fit"]["stack_fit"] = json["stack_fit"];
  write_profile(args.output, json);
  Scenario job = load_scenario(args.scenario, overrides);
  CalibrationRun run = make_calibration_run(job, args.scenario, args.paths, measured);
  return TracedJobCheck{std::move(stack), std::move(run), std::move(job)};
}

// "traced run: ..." lines of the table.
std::string calibration_run_text(const CalibrationRun& run, const Scenario& job) {
  const auto [lo, hi] = std::minmax_element(run.measured_s.begin(), run.measured_s.end());
  const double median = run.median_measured_s();
  std::string s = fmt::format(
      "traced run {}: {} iterations measured, median {:.4g} s ({:.4g}-{:.4g}); predicted with this profile {:.4g} s "
      "({:+.1f}%, analytic)\n",
      run.name, run.measured_s.size(), median, *lo, *hi, run.predicted_s, 100 * (run.predicted_s / median - 1));
  const std::optional<Band> band = calibrated_time_band(run, job, BAND_COVERAGE);
  s += band ? fmt::format("  predictions of this job that use this profile get an {:g}% time band of +/-{:.1f}% (its "
                          "residuals on these iterations); other jobs with it keep the validation cases' band, the run "
                          "one more case (docs/validation.md)\n",
                          100 * BAND_COVERAGE, band->percent())
            : fmt::format("  too few iterations for an {:g}% band of its own (at least 4): predictions with this profile "
                          "count the run as one validation case\n",
                          100 * BAND_COVERAGE);
  return s;
}

}  // namespace

int calibrate_command(const CalibrateArgs& args, std::ostream& out) {
  if (args.paths.empty() && args.nccl_tests.empty()) {
    throw core::InputError("", "",
                           "calibrate needs measurements: trace files or folders (TRACES...), --nccl-tests FILE, or "
                           "both");
  }
  std::optional<calibrate::TraceSet> traces;
  if (!args.paths.empty()) {
    traces.emplace(calibrate::TraceSet::load(args.paths));
    for (const std::string& w : traces->warnings()) std::cerr << w << "\n";
  }
  std::vector<calibrate::NcclTestsRun> runs;
  for (const std::string& file : args.nccl_tests) {
    for (calibrate::NcclTestsRun& r : calibrate::load_nccl_tests(file, args.op)) runs.push_back(std::move(r));
  }
  const TracedCluster traced = load_traced_cluster(args.scenario, args.overrides, measured_device(traces, runs));
  // Nominal figures: the scopes of the cost model with a profile of perfect efficiency and no
  // software latency, so that the fitted profile plugs back into the same model.
  const core::NetworkProfile nominal;
  const network::LinkScope intra = network::intra_node_scope(traced.cluster, nominal);
  const network::LinkScope inter = network::inter_node_scope(traced.cluster, nominal);
  calibrate::FitOptions options;
  options.gpu = traced.cluster.gpu_spec;
  options.links = {intra.bandwidth, intra.latency, inter.bandwidth, inter.latency};
  options.min_samples = args.min_samples;
  options.base = traced.profile;
  calibrate::FitInputs inputs;
  inputs.traces = traces ? &*traces : nullptr;
  for (const calibrate::NcclTestsRun& r : runs) {
    const std::vector<calibrate::CollectiveSample> samples = calibrate::collective_samples(r);
    inputs.collectives.insert(inputs.collectives.end(), samples.begin(), samples.end());
  }
  inputs.nccl_tests = args.nccl_tests;
  calibrate::ProfileFit fit = calibrate::fit_profile(inputs, options);
  fit.profile.device.fitted_on = calibrate::measured_on(fit.gpu, traces ? &*traces : nullptr, runs);
  core::Json json = calibrate::profile_fit_json(fit);
  const bool fitted = std::any_of(fit.categories.begin(), fit.categories.end(),
                                  [](const calibrate::FitCategory& c) { return c.in_profile; });

  std::optional<TracedJobCheck> check;
  const std::string kernel_table = calibrate::format_fit_table(fit);
  if (fitted) {
    write_profile(args.output, json);
    if (traces) check = check_on_traced_run(args, *traces, fit, json, std::cerr);
  }
  if (check) {
    json["calibration_run"] = check->run.to_json();
    json["fit"]["calibration_run"] = json["calibration_run"];
    write_profile(args.output, json);
  }
  if (args.format == Format::JSON) {
    out << json["fit"].dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n";
  } else if (args.format == Format::CSV) {
    out << fit_csv(fit);
  } else {
    out << kernel_table << (check ? check->stack.text() + calibration_run_text(check->run, check->job) : std::string())
        << (fitted ? fmt::format("profile written to {}\n", args.output) : std::string());
  }
  if (fitted) return 0;
  // Nothing fitted: say why (each category's note) and leave no profile that would only repeat the base.
  std::cerr << fmt::format("calibrate: nothing was fitted, so {} was not written:\n", args.output);
  for (const calibrate::FitCategory& c : fit.categories) {
    std::cerr << fmt::format("  {} ({} samples): {}\n", c.name, c.samples, c.note);
  }
  return EXIT_NOTHING_FITTED;
}

CalibrateSubcommand::CalibrateSubcommand(CLI::App& app) {
  command_ = app.add_subcommand("calibrate",
                                 "Fit a device and network profile from the traces of a real run, or the network "
                                 "from nccl-tests outputs");
  command_->add_option("traces", args_.paths, "Trace files, or folders of *.trace files (or give --nccl-tests)");
  command_->add_option("--nccl-tests", args_.nccl_tests,
                       "Standard output of an nccl-tests *_perf binary (repeatable); its rows are fitted as collective "
                       "samples")
      ->type_name("FILE")
      ->allow_extra_args(false);
  std::vector<std::string> ops;
  for (int o = 0; o < core::COLLECTIVE_OP_COUNT; ++o) {
    ops.emplace_back(core::to_string(static_cast<core::CollectiveOp>(o)));
  }
  command_->add_option("--op", op_,
                       "The collective of nccl-tests outputs that do not name their program (older nccl-tests)")
      ->check(CLI::IsMember(ops))
      ->type_name("OP");
  command_->add_option("-o,--output", args_.output, "The profile JSON to write")->required();
  command_->add_option("--scenario", args_.scenario,
                       "Scenario whose cluster the measurements ran on (nominal bandwidths)");
  command_->add_option("--set", args_.overrides, "Override a scenario value: key.path=value (repeatable)")
      ->type_name("KEY=VALUE");
  command_->add_option("--min-samples", args_.min_samples, "Fewer points: a category keeps the defaults")
      ->check(CLI::PositiveNumber)
      ->default_str("4");
  add_format(command_, args_.format, /*csv=*/true);
}

std::optional<int> CalibrateSubcommand::run(std::ostream& out) const {
  if (!command_->parsed()) return std::nullopt;
  CalibrateArgs args = args_;
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;
  if (core::parse_collective_op(op_, op)) args.op = op;  // --op was checked against the names
  return calibrate_command(args, out);
}

}  // namespace trainsim::cli
