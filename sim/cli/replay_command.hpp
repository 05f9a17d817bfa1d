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
//   trainsim replay --chakra FOLDER_OR_PREFIX [--comm-groups FILE] [--scenario FILE] [--set key=value]...
//                   [--backend simgrid|analytic] [--format table|json|csv]
//       Builds the Workload IR from Chakra execution traces, one file per rank
//       (calibrate/chakra_workload.hpp: what is read, approximated and refused; docs/chakra.md) and
//       prints the predicted iteration time, its breakdown and the traced span when the nodes carry
//       start times. The cluster: the scenario's whole (cluster, profile, simulation.algorithm,
//       fidelity and replay) when its world has as many GPUs as there are files, so that the export
//       of a scenario (`trainsim export --to chakra`) replays to the scenario's own time; otherwise
//       its cluster section after --set at the traces' shape, as for trainsim traces.
//
// Budgets (docs/hardening.md, "Budgets"), checked before anything is simulated: the replayed world
// (traced ranks x --scale-data) is at most MAX_REPLAY_WORLD GPUs, the largest cluster; and, since a
// replay simulates every rank (no symmetry: each runs its own measured program), the rank-group
// memberships the backend resolves (every rank times the size of each group it is in, which grows as
// the square of --scale-data) are at most MAX_REPLAY_MEMBERSHIPS. Above either, --scale-data is
// refused (exit 2) with the estimate and its CPU time.
//
// Returns the exit code and lets core::InputError propagate (exit 2 in main).

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/commands.hpp"

namespace CLI {
class App;
}

namespace trainsim::cli {

inline constexpr int64_t MAX_REPLAY_WORLD = int64_t{1} << 24;
// About 10 s of SimGrid (3e-7 s per membership: a 2-rank trace replayed 2,048 times, 1.7e7
// memberships, took 5 s; 4,096 times 19.6 s) and 1 s of the analytic backend (3e-8 s).
inline constexpr double MAX_REPLAY_MEMBERSHIPS = 3e7;

struct ReplayArgs {
  std::vector<std::string> paths;      // trace files, or folders of *.trace files (not with `chakra`)
  std::string chakra;                  // Chakra execution traces: a folder of PREFIX.<rank>.et, or the prefix
  std::string comm_groups;             // with `chakra`: ASTRA-sim's communicator-group JSON ("" for none)
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
