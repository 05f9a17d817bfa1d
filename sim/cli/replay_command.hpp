#pragma once
// `trainsim replay`: simulate a traced run from its own traces and compare with what was measured.
//
//   trainsim replay TRACE_DIR... [--scenario FILE] [--set key=value]... [--scale-data N]
//                   [--format table|json]
//       Builds the Workload IR from the traces (calibrate/replay_workload.hpp: one program per rank,
//       kernels with their measured durations, collectives re-costed), simulates it with the analytic
//       backend on the traced cluster and prints the predicted against the measured iteration time
//       with the signed error, the breakdown of the critical rank and its communication per axis.
//       The cluster: the scenario's cluster section after --set (e.g. --set
//       cluster.network.nic_bandwidth="400 Gb/s" for another network), with nodes and gpus_per_node
//       taken from the traces; the profile: the scenario's simulation.profile (--set
//       simulation.profile=profile.json without a scenario). --scale-data N replays N data-parallel
//       replicas of the traced run (the error then compares with the traced scale and is not
//       printed as an error: the ratio to the measured time is).
//
// Returns the exit code and lets core::InputError propagate (exit 2 in main).

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/commands.hpp"

namespace CLI {
class App;
}

namespace trainsim::cli {

struct ReplayArgs {
  std::vector<std::string> paths;      // trace files, or folders of *.trace files
  std::string scenario;                // optional: the cluster (and profile) to replay on
  std::vector<std::string> overrides;  // --set on the scenario
  int scale_data = 1;                  // >= 1
  std::string backend = "simgrid";     // simgrid | analytic, as for `run`
  Format format = Format::TABLE;
};
int replay_command(const ReplayArgs& args, std::ostream& out);

// `replay`, registered on the application's CLI11 App (like TraceSubcommand: it must stay where it
// is until run()).
//
// Example (sim/cli/main.cpp):
//   ReplaySubcommand replay(app);
//   app.parse(argc, argv);
//   if (std::optional<int> code = replay.run(std::cout)) return *code;
class ReplaySubcommand {
 public:
  explicit ReplaySubcommand(CLI::App& app);
  ReplaySubcommand(const ReplaySubcommand&) = delete;
  ReplaySubcommand& operator=(const ReplaySubcommand&) = delete;

  // After app.parse(): the exit code, or std::nullopt when `replay` was not on the command line.
  std::optional<int> run(std::ostream& out) const;

 private:
  CLI::App* command_ = nullptr;
  ReplayArgs args_;
};

}  // namespace trainsim::cli
