#pragma once
// `trainsim calibrate`: fit a device and network profile from the traces of a real run, from
// nccl-tests outputs, or from both.
//
//   trainsim calibrate [TRACE_DIR...] [--nccl-tests FILE]... -o profile.json [--op OP]
//                      [--scenario FILE] [--set key=value]... [--min-samples N] [--format table|json|csv]
//       Reads every rank's trace (folders of *.trace files, or files) and the standard output of
//       nccl-tests' *_perf binaries (calibrate/nccl_tests_import.hpp; --op names the collective of
//       outputs that do not: all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all),
//       at least one of the two; fits the profile (calibrate/profile_fit.hpp: nccl-tests rows are
//       collective samples like the traced calls; without traces only the network is fitted), writes
//       it to the -o file ("schema": "trainsim.profile/1", with a "fit" object of quality figures)
//       and prints the fit quality per category. When no category set anything, nothing is written,
//       stderr gives each category's reason and the exit code is 3 (EXIT_NOTHING_FITTED). The nominal bandwidths and latencies that
//       efficiencies are relative to come from the scenario's cluster section (after --set), or from
//       the defaults of network/cluster.hpp with the measured GPU (the traces' device, else the
//       nccl-tests ranks' device; intra-node: its NVLink bandwidth). A scenario then names the
//       profile in simulation.profile.
//
// Each command returns the exit code and lets core::InputError propagate (exit 2 in main).

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "network/cluster.hpp"
#include "sim/cli/commands.hpp"
#include "sim/core/device.hpp"
#include "sim/core/workload.hpp"

namespace CLI {
class App;
}

namespace trainsim::cli {

// The cluster a traced run ran on, and the profile a scenario names, for calibrate and replay.
struct TracedCluster {
  network::ClusterConfig cluster;
  core::Profile profile;  // simulation.profile of the scenario over the GPU's built-in profile
};

// Reads the "cluster" section of `scenario_file` after `overrides` (no file: an empty document, so
// every default). When the section names no GPU, the measured device's catalog GPU is used
// (`device_name`, e.g. "NVIDIA A100-SXM4-80GB"). `gpus_per_node` and `nodes`, when > 0, replace the
// section's (a replay runs at the traced shape). simulation.profile is read relative to the
// scenario's folder (the working directory without a scenario). Throws core::InputError for a bad
// section, or when no GPU is named and the traced device is not in the catalog.
TracedCluster load_traced_cluster(const std::string& scenario_file, const std::vector<std::string>& overrides,
                                  const std::string& device_name, int gpus_per_node = 0, int nodes = 0);

struct CalibrateArgs {
  std::vector<std::string> paths;      // trace files, or folders of *.trace files
  std::vector<std::string> nccl_tests; // nccl-tests outputs; paths and nccl_tests are not both empty
  std::optional<core::CollectiveOp> op;  // the collective of nccl-tests outputs that do not name it
  std::string output;                  // the profile JSON to write
  std::string scenario;                // optional: the cluster the traces ran on
  std::vector<std::string> overrides;  // --set on the scenario
  size_t min_samples = 4;              // fewer points: a category keeps the defaults
  Format format = Format::TABLE;       // of the fit report on stdout
};
// Writes the profile to args.output; throws core::InputError when no measurement is given, an input
// is malformed, the inputs name different catalog GPUs, or the profile cannot be written.
int calibrate_command(const CalibrateArgs& args, std::ostream& out);

// `calibrate`, registered on the application's CLI11 App (like TraceSubcommand: it must stay where
// it is until run()).
//
// Example (sim/cli/main.cpp):
//   CalibrateSubcommand calibrate(app);
//   app.parse(argc, argv);
//   if (std::optional<int> code = calibrate.run(std::cout)) return *code;
class CalibrateSubcommand {
 public:
  explicit CalibrateSubcommand(CLI::App& app);
  CalibrateSubcommand(const CalibrateSubcommand&) = delete;
  CalibrateSubcommand& operator=(const CalibrateSubcommand&) = delete;

  // After app.parse(): the exit code, or std::nullopt when `calibrate` was not on the command line.
  std::optional<int> run(std::ostream& out) const;

 private:
  CLI::App* command_ = nullptr;
  std::string op_;  // --op; "" when not given
  CalibrateArgs args_;
};

}  // namespace trainsim::cli
