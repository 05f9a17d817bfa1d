#pragma once
// The discrete-event cluster scheduler of `trainsim schedule` (docs/schedule.md, "Simulation"): jobs
// arrive, the policy allocates GPUs in rounds of SchedulerConfig::round_s, jobs run at the throughput
// of the option (pool, GPU count) they hold, and complete. Time advances round by round (idle stretches
// are skipped to the next arrival); a job that finishes inside a round leaves its GPUs idle until the
// round ends, as in Gavel. Each start, resume or move of a job costs SchedulerConfig::restart_s of no
// progress; with SchedulerConfig::checkpoint_costs the checkpoints' stalls and loads are priced too
// (docs/schedule.md, "Checkpoint costs"). The LP policies recompute their allocation at a round
// start when jobs arrived or completed since the last one; each round, jobs are placed by Gavel's
// priority: the allocation's share of an option over the share of time the job has had there since
// the allocation was computed.
//
//   plan::ScheduleInput in = plan::schedule_input(cluster, trace, matrix);
//   const plan::ScheduleResult r = plan::simulate_schedule(in, cluster.scheduler);

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/plan/schedule_allocation.hpp"
#include "sim/plan/schedule_input.hpp"
#include "sim/plan/schedule_matrix.hpp"

namespace trainsim::plan {

struct SchedulePool {
  std::string name;
  int gpus = 0;
  double price_per_gpu_hour = 0;  // 0: no price
  double node_mtbf_s = 0;         // SchedulerConfig::failures: a node's MTBF (0: its nodes never fail)
  int gpus_per_node = 1;          // a job on g GPUs spans ceil(g / gpus_per_node) nodes
  // SchedulerConfig::checkpoint_costs: the relaunch after a failure (the pool's
  // reliability.restart; absent where the pool gives none: SchedulerConfig::restart_s), and the
  // warm-up after every restart's checkpoint load (reliability.warmup).
  std::optional<double> failure_relaunch_s;
  double warmup_s = 0;
};

struct ScheduleJob {
  std::string name;
  double arrival_s = 0;
  double work_iterations = 0;
  double weight = 1;
  std::optional<double> deadline_s;
  std::vector<JobOption> options;  // at least one
};

struct ScheduleInput {
  std::vector<SchedulePool> pools;
  std::vector<ScheduleJob> jobs;
};
// The simulation's input from a cluster, its trace and their matrix. With
// cluster.scheduler.checkpoint_costs, throws InputError naming the trace file and the job's pointer
// for an option on which a restart and a checkpoint together (restart_s + load + warm-up + C) do not
// fit in a round: a job moved every round would never progress.
ScheduleInput schedule_input(const ClusterSpec& cluster, const JobTrace& trace, const ThroughputMatrix& matrix);

// GPUs a job held without a break on one option (consecutive rounds merged).
struct Lease {
  double start_s = 0, end_s = 0;
  size_t pool = 0;
  int gpus = 0;
};

struct JobOutcome {
  std::string name;
  double arrival_s = 0;
  double start_s = 0;        // first round it ran
  double completion_s = 0;
  double jct_s = 0;          // completion - arrival
  double waiting_s = 0;      // time without GPUs between arrival and completion
  double gpu_hours = 0;      // GPUs held x time (restarts and the idle end of its last round included)
  double cost_usd = 0;       // gpu_hours x the pools' prices
  int restarts = 0;          // starts, resumes and moves
  // With SchedulerConfig::failures: the job's failures, and the GPU time they wasted: the work since
  // the last checkpoint, and the restart after each (GPUs held x seconds, in hours).
  int failures = 0;
  double lost_gpu_hours = 0;
  // With SchedulerConfig::checkpoint_costs: the checkpoints the job took (periodic ones, and one at
  // each preemption or move) and the time they stalled it (seconds; GPUs held x seconds, in hours).
  int checkpoints = 0;
  double checkpoint_stall_s = 0;
  double checkpoint_gpu_hours = 0;
  // JCT over the time the job would take alone on its fastest option (work / best throughput):
  // 1 = never waited, never slowed down.
  double slowdown = 0;
  std::optional<double> deadline_s;
  bool met_deadline = true;
  std::vector<Lease> leases;  // in time order (the Gantt chart)
};

struct ScheduleSummary {
  size_t jobs = 0;
  double average_jct_s = 0;
  double p95_jct_s = 0;      // nearest rank
  double makespan_s = 0;     // last completion - first arrival
  double utilization = 0;    // GPU-seconds held / (cluster GPUs x makespan)
  double gpu_hours = 0;
  double cost_usd = 0;
  double average_slowdown = 0;  // fairness: the mean and the largest JobOutcome::slowdown
  double max_slowdown = 0;
  size_t deadlines_missed = 0;
  int failures = 0;             // with SchedulerConfig::failures: summed over the jobs
  double lost_gpu_hours = 0;
  int checkpoints = 0;          // with SchedulerConfig::checkpoint_costs: summed over the jobs
  double checkpoint_stall_s = 0;
  double checkpoint_gpu_hours = 0;
  size_t rounds = 0;
  size_t allocations = 0;    // LP allocations computed
  double wall_s = 0;         // CPU time of the simulation (logged; not in JSON or CSV)
};

// The cluster's utilization over time: GPU time held in each bucket of bucket_s (an hour, or one
// round when rounds are longer) from the first arrival, over the cluster's GPU time in a bucket. A
// round counts in the bucket where it starts.
struct UtilizationTimeline {
  double bucket_s = 3600;
  std::vector<double> utilization;
};

struct ScheduleResult {
  Policy policy = Policy::FIFO;
  bool failures = false;         // simulated with SchedulerConfig::failures (JSON then has the counts)
  bool checkpoint_costs = false; // simulated with SchedulerConfig::checkpoint_costs (JSON then has the stalls)
  std::vector<JobOutcome> jobs;  // in input order
  ScheduleSummary summary;
  UtilizationTimeline timeline;
};

// REQUIRES: every job has an option; policy MIN_COST: every pool priced (checked by the command).
ScheduleResult simulate_schedule(const ScheduleInput& input, const SchedulerConfig& config);

// One cluster file's runs of a trace (`schedule`, and each cluster of `schedule --vs`): the cluster,
// the trace's job classes and matrix entries on it, the simulation's input and one result per
// policy, in the order given.
struct ClusterRuns {
  ClusterSpec cluster;                    // cluster.file names it
  size_t jobs = 0;                        // the trace's jobs
  size_t job_classes = 0;                 // the throughput matrix's classes and entries
  size_t matrix_entries = 0;
  ScheduleInput input;
  std::vector<ScheduleResult> results;    // one per policy
};
// The same jobs under the same policies on each cluster: `trace` as read against the first
// cluster, and its file (trace.file) read again against each other cluster's pools (a synthetic
// trace generates the same jobs: its seed); each cluster's throughput matrix computed with
// `matrix_options`, and each policy simulated with the cluster's scheduler settings. Throws
// InputError as load_job_trace and ThroughputMatrix do. REQUIRES: clusters not empty, `trace` read
// against clusters[0]; policy MIN_COST: every pool of every cluster priced.
//
//   const std::vector<plan::ClusterRuns> runs = plan::schedule_clusters({a, b}, trace, {}, {plan::Policy::GAVEL_LAS});
//   runs[1].results[0].summary.average_jct_s / runs[0].results[0].summary.average_jct_s   // b over a
std::vector<ClusterRuns> schedule_clusters(std::vector<ClusterSpec> clusters, const JobTrace& trace,
                                           const MatrixOptions& matrix_options, const std::vector<Policy>& policies);
// As above for one cluster whose trace is already read (and its matrix computed).
ClusterRuns schedule_cluster(ClusterSpec cluster, const JobTrace& trace, const ThroughputMatrix& matrix,
                             const std::vector<Policy>& policies);

// The document of `schedule --format json` (schema trainsim.schedule/1): the cluster, each policy's
// summary and per-job outcomes.
core::Json schedule_json(const ScheduleInput& input, const SchedulerConfig& config,
                         const std::vector<ScheduleResult>& results);
// The matrix as rows (`schedule --matrix --format json`).
core::Json matrix_json(const ClusterSpec& cluster, const ThroughputMatrix& m);

}  // namespace trainsim::plan
