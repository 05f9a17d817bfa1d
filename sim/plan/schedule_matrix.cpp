#include "sim/plan/schedule_matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <thread>

#include "sim/core/error.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/search.hpp"

namespace trainsim::plan {

namespace {

// The scenario without its cluster, as text: jobs with equal keys share their matrix entries.
std::string class_key(const core::Json& scenario) {
  core::Json d = scenario;
  if (d.is_object()) d.erase("cluster");
  return d.dump();
}

// The job's scenario read on the first pool and count that can run it (a GPU without the scenario's
// precision cannot), for its batch; std::nullopt when none can (the matrix then says why per entry).
// A malformed scenario throws InputError.
std::optional<Scenario> read_class(const ClusterSpec& cluster, const Job& job, const core::Json& scenario) {
  for (const Pool& p : cluster.pools) {
    for (int g : job.gpus) {
      if (!pool_holds(p, g)) continue;
      try {
        return read_scenario(scenario_on_pool(scenario, p, g), job.scenario_file, StrategyCheck::SKIP);
      } catch (const ImpossibleScenario&) {
        // Another pool may run it.
      }
    }
  }
  return std::nullopt;
}

// The job's throughput on the reference pool (REFERENCE_HOURS): its largest allowed count that runs
// there, else its fastest option anywhere.
double reference_iterations_per_s(const std::vector<JobOption>& options, size_t reference_pool) {
  double best = 0;
  int largest = 0;
  double at_largest = 0;
  for (const JobOption& o : options) {
    best = std::max(best, o.iterations_per_s);
    if (o.pool == reference_pool && o.gpus >= largest) {
      largest = o.gpus;
      at_largest = o.iterations_per_s;
    }
  }
  return largest > 0 ? at_largest : best;
}

}  // namespace

bool pool_holds(const Pool& pool, int gpus) {
  const int per_node = pool.config.gpus_per_node;
  return gpus <= pool.gpus() && (gpus < per_node ? per_node % gpus == 0 : gpus % per_node == 0);
}

core::Json scenario_on_pool(const core::Json& scenario, const Pool& pool, int gpus) {
  core::Json d = scenario;
  d["cluster"] = pool.cluster;
  const int per_node = pool.config.gpus_per_node;
  if (gpus < per_node) {
    d["cluster"]["gpus_per_node"] = gpus;
    d["cluster"]["nodes"] = 1;
  } else {
    d["cluster"]["nodes"] = gpus / per_node;
  }
  return d;
}

namespace {

// The best layout of a class's scenario on `gpus` GPUs of `pool`, or why none runs.
MatrixEntry search_entry(const JobClass& c, const Pool& pool, int gpus, const MatrixOptions& options) {
  MatrixEntry e;
  e.gpus = gpus;
  SearchOptions so;
  so.scenario = c.scenario_file;
  so.document = scenario_on_pool(c.scenario, pool, gpus);
  so.gpus = {gpus};
  so.recheck = false;
  so.refine = options.refine;
  so.quiet = options.quiet;
  so.jobs = options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  try {
    const Search search(so);
    SearchResult r = search.evaluate();
    if (r.ranked.empty()) {
      // Say why in the words of a schedule (search's own message names its flags).
      std::vector<std::string> why;
      for (const auto& [reason, count] : rejection_reasons(r.rejected)) why.push_back(fmt::format("{} x {}", count, reason));
      e.reason = fmt::format("no layout runs ({})", fmt::join(why, ", "));
      return e;
    }
    search.finish(r);
    const Evaluated& best = r.ranked.front();
    TRAINSIM_CHECK(best.analytic.has_value(), "the best layout of a refined search has analytic figures");
    e.feasible = true;
    e.iteration_time_s = best.analytic->iteration_time_s;
    e.samples_per_s = best.analytic->samples_per_s;
    e.tokens_per_s = search.layer_graph() ? 0 : best.analytic->tokens_per_s;
    e.layout = best.layout.describe();
    e.scenario = search.scenario_of(best.layout);
  } catch (const core::InputError& err) {
    // Nothing this pool can run (a precision it lacks), or no refined layout fits: not an option the
    // scheduler can give; the reason is kept for "fits no pool".
    e.reason = err.problems().front().message;
  }
  return e;
}

// The resilience model's checkpoint figures of the entry's layout on its pool: the stall C, the
// load of a restart and the interval (training.checkpoint.interval; "auto" is Daly's optimum for
// the pool's node MTBF over the option's nodes), from the same analytic prediction `run --backend
// analytic` makes of that scenario.
CheckpointCost checkpoint_cost(const Scenario& scenario) {
  const Prediction p = predict(scenario, "analytic");
  TRAINSIM_CHECK(p.resilience.has_value(), "a prediction with training.checkpoint has resilience figures");
  return {p.resilience->stall_s, p.resilience->load_s, p.resilience->interval_s};
}

}  // namespace

const MatrixEntry& ThroughputMatrix::entry(size_t job_class, size_t pool, int gpus, const ClusterSpec& cluster,
                                           const MatrixOptions& options) {
  const auto key = std::make_tuple(job_class, pool, gpus);
  if (auto it = index_.find(key); it != index_.end()) return entries_[it->second];
  MatrixEntry e = search_entry(classes_[job_class], cluster.pools[pool], gpus, options);
  if (cluster.scheduler.checkpoint_costs && e.feasible && e.scenario.training.checkpoint) {
    e.checkpoint = checkpoint_cost(e.scenario);
  }
  e.job_class = job_class;
  e.pool = pool;
  index_[key] = entries_.size();
  entries_.push_back(std::move(e));
  return entries_.back();
}

ThroughputMatrix::ThroughputMatrix(const ClusterSpec& cluster, const JobTrace& trace, const MatrixOptions& options) {
  std::map<std::string, size_t> class_index;
  size_t reference_pool = 0;
  for (size_t p = 0; p < cluster.pools.size(); ++p) {
    if (cluster.pools[p].name == trace.reference_pool) reference_pool = p;
  }
  core::Diagnostics diag;
  std::set<std::pair<size_t, std::vector<int>>> unplaceable;
  for (const Job& job : trace.jobs) {
    const std::string key = class_key(job.scenario);
    auto [it, added] = class_index.emplace(key, classes_.size());
    if (added) {
      JobClass c;
      c.name = job.name;
      c.scenario = job.scenario;
      if (c.scenario.is_object()) c.scenario.erase("cluster");
      c.scenario_file = job.scenario_file;
      if (const std::optional<Scenario> s = read_class(cluster, job, c.scenario)) {
        c.samples_per_iteration = static_cast<double>(s->training.global_batch);
        c.tokens_per_iteration =
            s->model.is_layer_graph() ? 0 : c.samples_per_iteration * static_cast<double>(s->training.sequence_length);
      }
      classes_.push_back(std::move(c));
    }
    const size_t ci = it->second;
    const JobClass& c = classes_[ci];
    job_class_.push_back(ci);

    std::vector<JobOption> opts;
    std::vector<std::string> reasons;
    for (size_t p = 0; p < cluster.pools.size(); ++p) {
      for (int g : job.gpus) {
        if (!pool_holds(cluster.pools[p], g)) continue;
        const MatrixEntry& e = entry(ci, p, g, cluster, options);
        if (e.feasible) {
          opts.push_back({p, g, 1 / e.iteration_time_s, e.checkpoint});
        } else {
          reasons.push_back(fmt::format("{} x {}: {}", g, cluster.pools[p].name, e.reason));
        }
      }
    }
    // Jobs of one class and GPU counts that fit nowhere are reported once (a synthetic trace draws many).
    if (opts.empty() && unplaceable.emplace(ci, job.gpus).second) {
      diag.add(trace.file, job.pointer,
               fmt::format("job \"{}\" fits no pool: {}", job.name,
                           reasons.empty() ? fmt::format("no pool holds {} GPUs (whole nodes, or a divisor of a node's GPUs)",
                                                         fmt::join(job.gpus, " or "))
                                           : fmt::format("{}", fmt::join(reasons, "; "))));
    }
    double iterations = job.work;
    switch (opts.empty() ? WorkUnit::ITERATIONS : job.work_unit) {
      case WorkUnit::ITERATIONS: break;
      case WorkUnit::SAMPLES: iterations = job.work / c.samples_per_iteration; break;
      case WorkUnit::TOKENS:
        if (c.tokens_per_iteration == 0) {
          diag.add(trace.file, job.pointer + "/work/tokens",
                   "a layer-graph model has no tokens: give its work in iterations or samples");
        } else {
          iterations = job.work / c.tokens_per_iteration;
        }
        break;
      case WorkUnit::REFERENCE_HOURS:
        iterations = job.work * 3600 * reference_iterations_per_s(opts, reference_pool);
        break;
    }
    options_.push_back(std::move(opts));
    work_iterations_.push_back(iterations);
  }
  diag.throw_if_any();
  std::sort(entries_.begin(), entries_.end(), [](const MatrixEntry& a, const MatrixEntry& b) {
    return std::tie(a.job_class, a.pool, a.gpus) < std::tie(b.job_class, b.pool, b.gpus);
  });
  for (size_t i = 0; i < entries_.size(); ++i) index_[{entries_[i].job_class, entries_[i].pool, entries_[i].gpus}] = i;
}

}  // namespace trainsim::plan
