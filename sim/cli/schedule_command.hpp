#pragma once
// `trainsim schedule CLUSTER JOBS [--vs CLUSTER...]`: a cluster of node pools (several GPU types) and a job trace,
// simulated under one or more scheduling policies (sim/plan/schedule_sim.hpp, docs/schedule.md).
// Prints each policy's average and p95 job completion time, makespan, utilization, GPU-hours and
// cost (table), or every job's outcome too (json, csv); --matrix prints the throughput matrix
// instead; --plot draws the JCT CDF of each policy and the cluster's utilization over time.
//
//   trainsim schedule examples/schedule/cluster-3types.json examples/schedule/philly-300.json
//       --policy fifo,las,gavel-las --plot jct-cdf.svg                                 (one line)

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/commands.hpp"

namespace CLI {
class App;
}

namespace trainsim::cli {

struct ScheduleArgs {
  std::string cluster;                 // the cluster file (pools, scheduler)
  std::string jobs;                    // the trace file (jobs or synthetic)
  std::vector<std::string> policies;   // --policy a,b: default the cluster file's scheduler.policy
  std::optional<double> round_s;       // --round-s: overrides scheduler.round_s
  std::optional<double> restart_s;     // --restart-s: overrides scheduler.restart_s
  bool matrix = false;                 // --matrix: print the throughput matrix instead
  int refine = 10;                     // --refine: analytic evaluations per matrix entry
  Format format = Format::TABLE;
  std::string plot;                    // --plot FILE.svg|png: JCT CDF and utilization over time, a line per policy
  std::string gantt;                   // --gantt FILE.svg|png: each policy's jobs over time, bars by pool
  std::string write_trace;             // --write-trace FILE: the trace (a synthetic one generated) as a trace file
  std::vector<std::string> vs;         // --vs CLUSTER (repeatable): the same jobs on other cluster files, side by side
};
int schedule_command(const ScheduleArgs& args, std::ostream& out, std::ostream& err);

// `schedule`, registered on the application's App: keep it in place until run(), which returns
// std::nullopt when `schedule` was not on the command line.
class ScheduleSubcommand {
 public:
  explicit ScheduleSubcommand(CLI::App& app);
  ScheduleSubcommand(const ScheduleSubcommand&) = delete;
  ScheduleSubcommand& operator=(const ScheduleSubcommand&) = delete;
  std::optional<int> run(std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* command_ = nullptr;
  ScheduleArgs args_;
};

}  // namespace trainsim::cli
