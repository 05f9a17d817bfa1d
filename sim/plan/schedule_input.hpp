#pragma once
// The inputs of `trainsim schedule CLUSTER JOBS` (docs/schedule.md): a cluster of node pools, each of
// one GPU type, with the scheduler's settings; and a job trace, written out or generated (a seeded
// synthetic trace after the Philly-derived ones Gavel used). Read once, here, with every problem
// named by file and JSON pointer.
//
//   const plan::ClusterSpec c = plan::load_cluster_spec("tests/data/schedule/cluster-3types.json");
//   const plan::JobTrace t = plan::load_job_trace("tests/data/schedule/jobs-3.json", c);

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "network/cluster.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim::plan {

// How the scheduler shares the GPUs (docs/schedule.md, "Policies").
enum class Policy {
  FIFO,                  // arrival order, non-preemptive, first pool with room (heterogeneity-agnostic)
  LAS,                   // max-min fairness over GPU time, heterogeneity-agnostic (Gavel's baseline)
  GAVEL_LAS,             // max-min fairness over normalized throughput (Gavel's heterogeneity-aware LAS)
  FINISH_TIME_FAIRNESS,  // minimize the largest finish-time fairness ratio (Themis, as Gavel states it)
  MAKESPAN,              // minimize the time until every active job is done
  MIN_COST,              // the most work per dollar, deadlines met (Gavel's cost policy with SLOs)
};
// "fifo", "las", "gavel-las", "finish-time-fairness", "makespan", "min-cost".
std::string to_string(Policy p);
const std::vector<std::pair<std::string, Policy>>& policy_names();
// InputError naming `origin` (a flag or file) and `pointer` for an unknown name.
Policy parse_policy(const std::string& name, const std::string& origin, const std::string& pointer);

// Node failures during the trace (the cluster file's "scheduler.failures"; docs/schedule.md,
// "Failures"). Each pool's nodes fail at its cluster's reliability.node_mtbf (network/storage.hpp,
// the resilience model's), so a job on n nodes fails at n / MTBF while it holds them (restarts
// included); a failure loses the job's work since its last checkpoint and costs it a restart
// (SchedulerConfig::restart_s) on the same GPUs.
struct FailureConfig {
  // Training time between a job's checkpoints while it holds one lease; each start, resume or move
  // begins from a checkpoint (the preempted job saved one at its round's end, as in Gavel).
  double checkpoint_interval_s = 3600;
  // Each job's failure times come from its own std::mt19937_64 seeded with seed + its index in the
  // trace: the same seed gives the same failures under every policy (each job's exposure decides).
  uint64_t seed = 1;
};

// The "scheduler" section of the cluster file.
struct SchedulerConfig {
  Policy policy = Policy::GAVEL_LAS;
  double round_s = 360;    // allocation round (Gavel: 6 minutes); leases change only at round starts
  double restart_s = 30;   // no progress after each start, resume or move of a job (checkpoint load;
                           // with checkpoint_costs the relaunch only, the load priced apart)
  std::optional<FailureConfig> failures;  // absent: no failures
  // "checkpoint_costs" (docs/schedule.md, "Checkpoint costs"): false (default), checkpoints are free
  // and every start, resume, move or failure restart costs restart_s. true: a job whose scenario
  // gives training.checkpoint checkpoints at its own interval on each option, each checkpoint
  // stalling it by the resilience model's C on that pool, and saves one at a preemption or move;
  // its starts, resumes and moves cost restart_s + its checkpoint load + the pool's
  // reliability.warmup; a failure restart costs the pool's reliability.restart (restart_s when the
  // pool gives none) + the load + the warm-up.
  bool checkpoint_costs = false;
};

// One node pool: GPUs of one type on one network. `cluster` is a scenario's "cluster" object (the
// pool's keys but "name"); a job on `count` GPUs of the pool is simulated on that cluster cut to
// `count` GPUs.
struct Pool {
  std::string name;
  core::Json cluster;
  network::ClusterConfig config;  // `cluster` read (defaults resolved)
  int gpus() const { return config.world_size(); }
  std::optional<double> price_per_gpu_hour() const { return config.price_per_gpu_hour; }
};

struct ClusterSpec {
  std::string file;
  std::vector<Pool> pools;  // at least one, names unique
  SchedulerConfig scheduler;
  int total_gpus() const;
};
// Throws InputError naming the file and pointer: no pools, a pool without nodes or name, two pools of
// one name, a pool's cluster keys wrong (network::ClusterConfig::from_json), unknown keys.
ClusterSpec read_cluster_spec(const core::Json& doc, const std::string& file);
ClusterSpec load_cluster_spec(const std::string& path);

// The unit a job's work is given in (the trace's "work" object has one of these keys).
enum class WorkUnit { ITERATIONS, SAMPLES, TOKENS, REFERENCE_HOURS };

struct Job {
  std::string name;
  std::string pointer;      // "/jobs/3" in the trace, "/synthetic/mix/1" for a generated job (messages)
  double arrival_s = 0;
  // The training scenario (its "cluster" is replaced by the pool's); `scenario_file` names it in
  // messages and anchors its relative paths.
  core::Json scenario;
  std::string scenario_file;
  WorkUnit work_unit = WorkUnit::ITERATIONS;
  // In work_unit; REFERENCE_HOURS: hours on the reference pool at the job's largest allowed count
  // (Gavel's duration on its reference GPU).
  double work = 0;
  std::vector<int> gpus;    // allowed GPU counts, ascending
  double weight = 1;        // share under the fairness policies (higher: more)
  std::optional<double> deadline_s;  // absolute, seconds from the trace's start
};

struct JobTrace {
  std::string file;
  std::vector<Job> jobs;         // by arrival, then by position in the file
  std::string reference_pool;    // work in reference_hours is measured on this pool
  bool synthetic = false;        // generated from a "synthetic" object
};

// The "synthetic" object of a trace file: a generated trace (docs/schedule.md, "Synthetic traces").
struct SyntheticMixEntry {
  core::Json scenario;      // inline object, or loaded from a path
  std::string scenario_file;
  double share = 1;         // relative probability of this entry
  std::string name;         // job names: NAME-INDEX
};
struct SyntheticTraceOptions {
  int jobs = 100;
  uint64_t seed = 1;
  double arrivals_per_hour = 6;  // Poisson arrivals (exponential inter-arrival times)
  std::vector<SyntheticMixEntry> mix;
  std::vector<int> gpu_counts{1, 2, 4, 8};
  std::vector<double> gpu_count_shares{0.7, 0.1, 0.15, 0.05};
  // Durations on the reference pool: log-uniform in [short_minutes] with probability 1 - long_share,
  // else in [long_minutes].
  double short_minutes_min = 31.6, short_minutes_max = 1000;
  double long_minutes_min = 1000, long_minutes_max = 10000;
  double long_share = 0.2;
};
// The jobs of a synthetic trace: same options, same trace (a seeded 64-bit Mersenne Twister and
// trainsim's own inverse-CDF draws, not the standard library's distributions, whose algorithms are
// the implementation's).
std::vector<Job> generate_jobs(const SyntheticTraceOptions& o);

// A trace file: {"jobs": [...]} or {"synthetic": {...}}, plus an optional "reference_pool". Throws
// InputError naming the file and pointer: an empty trace, a job without work or GPU counts, a GPU
// count no pool can hold, a deadline before the arrival, unknown keys.
JobTrace read_job_trace(const core::Json& doc, const std::string& file, const ClusterSpec& cluster);
JobTrace load_job_trace(const std::string& path, const ClusterSpec& cluster);
// The trace as a trace file with "jobs" (the generated jobs of a synthetic trace written out; scenarios
// inline): read_job_trace reads it back to the same jobs.
core::Json job_trace_json(const JobTrace& t);

}  // namespace trainsim::plan
