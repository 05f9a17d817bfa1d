#pragma once
// The throughput matrix of `trainsim schedule` (docs/schedule.md, "Throughput matrix"): for each job,
// each pool and each of the job's allowed GPU counts, the best layout's throughput, as `search`
// finds it (its closed-form first pass, then the analytic backend on the best estimates; no SimGrid
// re-check). Gavel measures this matrix by profiling; trainsim predicts it. Entries are cached per
// (job's training scenario, pool, GPU count): jobs of one model share them.
//
//   plan::ThroughputMatrix m(cluster, trace, {});
//   for (const plan::MatrixEntry& e : m.entries()) ...   // e.iteration_time_s, e.layout
//   const std::vector<plan::JobOption> opts = m.options_of(0);

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sim/plan/schedule_input.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {

struct MatrixOptions {
  int refine = 10;     // best first-pass estimates evaluated with the analytic backend (search --refine)
  bool quiet = true;   // no progress bar
  int jobs = 0;        // evaluation threads of each search; 0: the machine's hardware threads
};

// What checkpoints cost a job on one option (SchedulerConfig::checkpoint_costs, for a job whose
// scenario gives training.checkpoint): the resilience model's figures (plan::ResilienceFigures,
// docs/resilience.md) of the option's best layout on that pool, predicted with the analytic backend.
struct CheckpointCost {
  double stall_s = 0;     // C: one checkpoint's stall (no progress while it is taken)
  double load_s = 0;      // reading it back at a start, resume, move or failure restart
  double interval_s = 0;  // training between two checkpoints: training.checkpoint.interval on this option
};

// One (training scenario, pool, GPU count).
struct MatrixEntry {
  size_t job_class = 0;      // index into ThroughputMatrix::classes()
  size_t pool = 0;
  int gpus = 0;
  bool feasible = false;     // some layout runs (fits in memory)
  std::string reason;        // why not, when not feasible
  double iteration_time_s = 0;
  double samples_per_s = 0;
  double tokens_per_s = 0;   // 0 for a layer-graph model
  std::string layout;        // Layout::describe()
  Scenario scenario;         // the job's scenario on the pool with the best layout (what `run` runs)
  std::optional<CheckpointCost> checkpoint;  // SchedulerConfig::checkpoint_costs and training.checkpoint
};

// Jobs that share a training scenario (after overrides) share a class.
struct JobClass {
  std::string name;              // the first job's name
  core::Json scenario;           // without "cluster"
  std::string scenario_file;
  double samples_per_iteration = 0;  // training.global_batch
  double tokens_per_iteration = 0;   // global batch x sequence length; 0 for a layer graph
};

// One way a job can run: on `gpus` GPUs of pool `pool`, doing `iterations_per_s`; with checkpoint
// costs, what its checkpoints cost there (absent: nothing).
struct JobOption {
  size_t pool = 0;
  int gpus = 0;
  double iterations_per_s = 0;
  std::optional<CheckpointCost> checkpoint;
};

class ThroughputMatrix {
 public:
  // Computes every entry the trace needs. Throws InputError naming the trace file and the job's
  // pointer for a job that fits no pool (every allowed count on every pool infeasible, each reason
  // given), for a scenario that is malformed, and for work in tokens of a layer-graph model. With
  // cluster.scheduler.checkpoint_costs, each feasible entry of a scenario with training.checkpoint
  // also gets its CheckpointCost (predict() of the entry's scenario with the analytic backend; an
  // interval shorter than an iteration is its InputError).
  ThroughputMatrix(const ClusterSpec& cluster, const JobTrace& trace, const MatrixOptions& options);

  const std::vector<JobClass>& classes() const { return classes_; }
  const std::vector<MatrixEntry>& entries() const { return entries_; }  // by class, pool, count
  size_t class_of(size_t job) const { return job_class_[job]; }
  // The feasible options of job `job` of the trace, by pool then count.
  const std::vector<JobOption>& options_of(size_t job) const { return options_[job]; }
  // The job's work in iterations (its WorkUnit converted with its class's batch).
  double work_iterations(size_t job) const { return work_iterations_[job]; }
  size_t searches() const { return entries_.size(); }  // the cache's size: one search each

 private:
  const MatrixEntry& entry(size_t job_class, size_t pool, int gpus, const ClusterSpec& cluster,
                           const MatrixOptions& options);

  std::vector<JobClass> classes_;
  std::vector<MatrixEntry> entries_;
  std::map<std::tuple<size_t, size_t, int>, size_t> index_;
  std::vector<size_t> job_class_;
  std::vector<std::vector<JobOption>> options_;
  std::vector<double> work_iterations_;
};

// The job's scenario document on `gpus` GPUs of `pool` (the pool's cluster, nodes cut to the count),
// before any layout: what the matrix searches.
core::Json scenario_on_pool(const core::Json& scenario, const Pool& pool, int gpus);
// Whether `gpus` GPUs fill whole nodes of the pool (or divide one node) and the pool has that many.
bool pool_holds(const Pool& pool, int gpus);

}  // namespace trainsim::plan
