#include "sim/cli/calibrate_command.hpp"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "calibrate/profile_fit.hpp"
#include "calibrate/trace_set.hpp"
#include "network/collective_cost.hpp"
#include "sim/cli/scenario.hpp"
#include "sim/core/error.hpp"

namespace trainsim::cli {

TracedCluster load_traced_cluster(const std::string& scenario_file, const std::vector<std::string>& overrides,
                                  const std::string& device_name, int gpus_per_node, int nodes) {
  core::Json doc = scenario_file.empty() ? core::Json::object() : core::load_json_file(scenario_file);
  for (const std::string& o : overrides) apply_override(doc, o);
  const std::string origin = scenario_file.empty() ? "--set" : scenario_file;
  core::Json& cluster = doc["cluster"];
  if (cluster.is_null()) cluster = core::Json::object();
  if (cluster.is_object() && !cluster.contains("gpu")) {
    const core::GpuSpec* gpu = calibrate::catalog_gpu_for(device_name);
    if (gpu == nullptr) {
      throw core::InputError(origin, "/cluster/gpu",
                             fmt::format("the traces name the GPU \"{}\", which is not in the catalog (`trainsim "
                                         "describe gpus`): give a scenario whose cluster names the GPU",
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
    out.profile = core::Profile::from_json(pr);
  }
  diag.throw_if_any();
  return out;
}

int calibrate_command(const CalibrateArgs& args, std::ostream& out) {
  const calibrate::TraceSet traces = calibrate::TraceSet::load(args.paths);
  const TracedCluster traced = load_traced_cluster(args.scenario, args.overrides, traces.device_name());
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
  const calibrate::ProfileFit fit = calibrate::fit_profile(traces, options);
  const core::Json json = calibrate::profile_fit_json(fit);

  std::ofstream file(args.output);
  file << json.dump(2) << "\n";
  file.close();
  if (!file) throw core::InputError(args.output, "", "cannot write the profile file");
  if (args.format == Format::JSON) {
    out << json["fit"].dump(2) << "\n";
  } else {
    out << calibrate::format_fit_table(fit) << fmt::format("profile written to {}\n", args.output);
  }
  return 0;
}

CalibrateSubcommand::CalibrateSubcommand(CLI::App& app) {
  command_ = app.add_subcommand("calibrate", "Fit a device and network profile from the traces of a real run");
  command_->add_option("traces", args_.paths, "Trace files, or folders of *.trace files")->required();
  command_->add_option("-o,--output", args_.output, "The profile JSON to write")->required();
  command_->add_option("--scenario", args_.scenario, "Scenario whose cluster the traces ran on (nominal bandwidths)");
  command_->add_option("--set", args_.overrides, "Override a scenario value: key.path=value (repeatable)")
      ->type_name("KEY=VALUE");
  command_->add_option("--min-samples", args_.min_samples, "Fewer points: a category keeps the defaults")
      ->check(CLI::PositiveNumber)
      ->default_str("4");
  command_->add_option("--format", args_.format, "Fit report format: table or json")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Format>{{"table", Format::TABLE}, {"json", Format::JSON}},
                                          CLI::ignore_case))
      ->default_str("table");
}

std::optional<int> CalibrateSubcommand::run(std::ostream& out) const {
  if (!command_->parsed()) return std::nullopt;
  return calibrate_command(args_, out);
}

}  // namespace trainsim::cli
