#include "sim/plan/schedule_sim.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::plan {

namespace {

constexpr int NO_LEASE = -1;

// An Exp(1) variate by inverse transform on a 53-bit uniform in [0, 1): the same numbers on every
// platform (the standard library's distributions are the implementation's).
double exponential_draw(std::mt19937_64& g) {
  const double u = static_cast<double>(g() >> 11) * 0x1.0p-53;
  return -std::log1p(-u);
}

struct JobState {
  double remaining = 0;
  int lease = NO_LEASE;           // index into the job's options, held in the last round
  std::vector<double> time_on;    // by option: seconds held since the allocation was computed
  std::vector<double> share;      // by option: the allocation's X
  std::vector<size_t> global;     // by option: index into the allocation problem's options
  double held_s = 0;
  bool started = false;
  int lease_of_last_entry = NO_LEASE;  // the option of JobOutcome::leases.back()
  // SchedulerConfig::failures: the failure hazard the job has been exposed to (held seconds x its
  // nodes / MTBF), the exposure of its next failure (cumulative Exp(1) draws), and its training since
  // the last checkpoint on this lease.
  double exposure = 0;
  double next_failure = 0;
  double since_checkpoint_s = 0;
  double since_checkpoint_iterations = 0;
  double failure_restart_left = 0;  // a failure's restart cut by the round's end
  std::mt19937_64 failure_draws;
  // SchedulerConfig::checkpoint_costs: a periodic checkpoint's stall cut by the round's end (it goes
  // on in the next round if the job keeps its lease), and the training at the end of the last round
  // since its last restart or checkpoint stall (seconds): where a preemption's checkpoint goes.
  double stall_left = 0;
  double tail_s = 0;
};

// Where each active job runs this round: an option index or NO_LEASE.
using Placement = std::vector<int>;

class Simulation {
 public:
  Simulation(const ScheduleInput& in, const SchedulerConfig& config) : in_(in), config_(config) {
    state_.resize(in.jobs.size());
    std::map<std::pair<size_t, int>, size_t> index;
    for (size_t j = 0; j < in.jobs.size(); ++j) {
      TRAINSIM_CHECK(!in.jobs[j].options.empty(), "a scheduled job has an option");
      JobState& s = state_[j];
      s.remaining = in.jobs[j].work_iterations;
      s.time_on.assign(in.jobs[j].options.size(), 0);
      s.share.assign(in.jobs[j].options.size(), 0);
      for (const JobOption& o : in.jobs[j].options) {
        auto [it, added] = index.emplace(std::make_pair(o.pool, o.gpus), options_.size());
        if (added) options_.push_back({o.pool, o.gpus});
        s.global.push_back(it->second);
      }
    }
    if (config.failures) {
      for (size_t j = 0; j < in.jobs.size(); ++j) {
        state_[j].failure_draws.seed(config.failures->seed + j);
        state_[j].next_failure = exponential_draw(state_[j].failure_draws);
      }
    }
    result_.policy = config.policy;
    result_.failures = config.failures.has_value();
    result_.checkpoint_costs = config.checkpoint_costs;
    result_.jobs.resize(in.jobs.size());
    for (size_t j = 0; j < in.jobs.size(); ++j) {
      JobOutcome& r = result_.jobs[j];
      r.name = in.jobs[j].name;
      r.arrival_s = in.jobs[j].arrival_s;
      r.deadline_s = in.jobs[j].deadline_s;
    }
  }

  ScheduleResult run() {
    const auto wall = std::chrono::steady_clock::now();
    std::vector<size_t> order(in_.jobs.size());
    for (size_t j = 0; j < order.size(); ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return in_.jobs[a].arrival_s < in_.jobs[b].arrival_s; });
    size_t next = 0, done = 0;
    double t = order.empty() ? 0 : in_.jobs[order.front()].arrival_s;
    first_arrival_s_ = t;
    result_.timeline.bucket_s = std::max(3600.0, config_.round_s);
    bool changed = true;
    while (done < in_.jobs.size()) {
      for (; next < order.size() && in_.jobs[order[next]].arrival_s <= t; ++next) {
        active_.push_back(order[next]);
        changed = true;
      }
      if (active_.empty()) {
        t = in_.jobs[order[next]].arrival_s;  // idle: the next round starts at the next arrival
        continue;
      }
      if (config_.policy != Policy::FIFO && changed) reallocate(t);
      changed = false;
      const Placement placement = config_.policy == Policy::FIFO ? fifo_placement() : priority_placement();
      if (config_.checkpoint_costs) checkpoint_leavers(placement);
      const size_t finished = run_round(t, placement);
      TRAINSIM_CHECK(finished > 0 || std::any_of(placement.begin(), placement.end(), [](int o) { return o != NO_LEASE; }) ||
                         next < order.size(),
                     "a scheduling round placed no job and none can arrive");
      done += finished;
      changed = changed || finished > 0;
      t += config_.round_s;
      ++result_.summary.rounds;
    }
    summarize();
    result_.summary.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    return result_;
  }

 private:
  void reallocate(double t) {
    AllocationProblem p;
    p.options = options_;
    p.pool_gpus.resize(in_.pools.size());
    p.pool_price.resize(in_.pools.size());
    for (size_t k = 0; k < in_.pools.size(); ++k) {
      p.pool_gpus[k] = in_.pools[k].gpus;
      p.pool_price[k] = in_.pools[k].price_per_gpu_hour;
    }
    for (size_t j : active_) {
      const ScheduleJob& job = in_.jobs[j];
      AllocationJob a;
      a.throughput.assign(options_.size(), 0);
      for (size_t o = 0; o < job.options.size(); ++o) a.throughput[state_[j].global[o]] = job.options[o].iterations_per_s;
      a.weight = job.weight;
      a.remaining = state_[j].remaining;
      a.total = job.work_iterations;
      a.elapsed_s = t - job.arrival_s;
      if (job.deadline_s) a.time_to_deadline_s = *job.deadline_s - t;
      p.jobs.push_back(std::move(a));
    }
    const std::vector<std::vector<double>> x = allocate(config_.policy, p);
    for (size_t i = 0; i < active_.size(); ++i) {
      JobState& s = state_[active_[i]];
      for (size_t o = 0; o < s.share.size(); ++o) {
        s.share[o] = x[i][s.global[o]];
        s.time_on[o] = 0;
      }
    }
    since_allocation_s_ = 0;
    ++result_.summary.allocations;
  }

  // Arrival order, non-preemptive: running jobs keep their lease; the first waiting job takes its
  // largest GPU count that some pool (in file order) has free, and nobody behind it starts before it.
  Placement fifo_placement() const {
    std::vector<int> free = free_gpus();
    Placement placement(active_.size(), NO_LEASE);
    for (size_t i = 0; i < active_.size(); ++i) {
      const JobState& s = state_[active_[i]];
      if (s.lease == NO_LEASE) continue;
      placement[i] = s.lease;
      free[in_.jobs[active_[i]].options[s.lease].pool] -= in_.jobs[active_[i]].options[s.lease].gpus;
    }
    for (size_t i = 0; i < active_.size(); ++i) {
      if (placement[i] != NO_LEASE) continue;
      const std::vector<JobOption>& opts = in_.jobs[active_[i]].options;
      int chosen = NO_LEASE;
      for (size_t o = 0; o < opts.size(); ++o) {
        const bool fits = free[opts[o].pool] >= opts[o].gpus;
        const bool better = chosen == NO_LEASE || opts[o].gpus > opts[chosen].gpus ||
                            (opts[o].gpus == opts[chosen].gpus && opts[o].pool < opts[chosen].pool);
        if (fits && better) chosen = static_cast<int>(o);
      }
      if (chosen == NO_LEASE) break;
      placement[i] = chosen;
      free[opts[chosen].pool] -= opts[chosen].gpus;
    }
    return placement;
  }

  // Gavel's rounds: (job, option) pairs by priority, the allocation's share over the share of time
  // received there since it was computed (never received: first, by share); each job placed once,
  // where its pool has the GPUs free.
  Placement priority_placement() const {
    // Priorities and shares are compared to 6 digits: the LP's solutions carry ~1e-7 of noise, and
    // equal jobs must tie (then arrival order decides).
    struct Candidate {
      bool fresh;
      int64_t priority, share;
      size_t i, o;
    };
    const auto digits = [](double v) { return static_cast<int64_t>(std::llround(std::min(v, 1e12) * 1e6)); };
    std::vector<Candidate> c;
    for (size_t i = 0; i < active_.size(); ++i) {
      const JobState& s = state_[active_[i]];
      for (size_t o = 0; o < s.share.size(); ++o) {
        if (s.share[o] <= 1e-9) continue;
        const double received = since_allocation_s_ > 0 ? s.time_on[o] / since_allocation_s_ : 0;
        c.push_back({received == 0, digits(received == 0 ? s.share[o] : s.share[o] / received), digits(s.share[o]), i, o});
      }
    }
    std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
      if (a.fresh != b.fresh) return a.fresh;
      if (a.priority != b.priority) return a.priority > b.priority;
      if (a.share != b.share) return a.share > b.share;
      return a.i != b.i ? a.i < b.i : a.o < b.o;
    });
    std::vector<int> free = free_gpus();
    Placement placement(active_.size(), NO_LEASE);
    for (const Candidate& x : c) {
      const JobOption& opt = in_.jobs[active_[x.i]].options[x.o];
      if (placement[x.i] != NO_LEASE || free[opt.pool] < opt.gpus) continue;
      placement[x.i] = static_cast<int>(x.o);
      free[opt.pool] -= opt.gpus;
    }
    return placement;
  }

  std::vector<int> free_gpus() const {
    std::vector<int> free;
    for (const SchedulePool& p : in_.pools) free.push_back(p.gpus);
    return free;
  }

  // A job that held an option in the last round and is preempted or moved now saved a checkpoint at
  // that round's end (as Gavel assumes): its last C seconds there were the checkpoint, not training.
  // What they had trained is given back, at most the training since its last restart or stall there
  // (a checkpoint in progress at the round's end is the preemption's).
  void checkpoint_leavers(const Placement& placement) {
    for (size_t i = 0; i < active_.size(); ++i) {
      JobState& s = state_[active_[i]];
      if (s.lease == NO_LEASE || placement[i] == s.lease) continue;
      const JobOption& old = in_.jobs[active_[i]].options[s.lease];
      if (!old.checkpoint || old.checkpoint->stall_s <= 0) continue;
      const double stall = std::min(old.checkpoint->stall_s, s.tail_s);
      if (stall <= 0 && s.stall_left <= 0) continue;  // nothing trained since its last restart or checkpoint
      s.remaining += stall * old.iterations_per_s;
      JobOutcome& r = result_.jobs[active_[i]];
      ++r.checkpoints;
      r.checkpoint_stall_s += stall;
      r.checkpoint_gpu_hours += stall * old.gpus / 3600;
    }
  }

  // Seconds without progress at a start, resume or move onto `opt`: restart_s, and with checkpoint
  // costs the checkpoint's load and the pool's warm-up.
  double lease_restart_s(const JobOption& opt) const {
    if (!config_.checkpoint_costs) return config_.restart_s;
    return config_.restart_s + (opt.checkpoint ? opt.checkpoint->load_s : 0) + in_.pools[opt.pool].warmup_s;
  }

  // Seconds without progress after a failure on `opt`: restart_s, or with checkpoint costs the pool's
  // relaunch (restart_s where it gives none), the checkpoint's load and the warm-up.
  double failure_restart_s(const JobOption& opt) const {
    if (!config_.checkpoint_costs) return config_.restart_s;
    const SchedulePool& pool = in_.pools[opt.pool];
    return pool.failure_relaunch_s.value_or(config_.restart_s) + (opt.checkpoint ? opt.checkpoint->load_s : 0) +
           pool.warmup_s;
  }

  // Runs [t, t + round_s) under `placement`; returns the jobs that completed (removed from active_).
  size_t run_round(double t, const Placement& placement) {
    std::vector<size_t> still;
    size_t finished = 0;
    double gpu_seconds = 0;
    for (size_t i = 0; i < active_.size(); ++i) {
      const size_t j = active_[i];
      JobState& s = state_[j];
      JobOutcome& r = result_.jobs[j];
      const int o = placement[i];
      if (o == NO_LEASE) {
        s.lease = NO_LEASE;
        still.push_back(j);
        continue;
      }
      const JobOption& opt = in_.jobs[j].options[o];
      double restart = 0;
      if (s.lease != o) {
        restart = lease_restart_s(opt);
        ++r.restarts;
      }
      if (!s.started) {
        s.started = true;
        r.start_s = t;
      }
      if (s.lease != o) {  // a start, resume or move begins from a checkpoint, with its own restart
        s.since_checkpoint_s = 0;
        s.since_checkpoint_iterations = 0;
        s.failure_restart_left = 0;
        s.stall_left = 0;
        s.tail_s = 0;
      }
      s.lease = o;
      s.time_on[o] += config_.round_s;
      double held = config_.round_s;
      bool completed = false;
      if (config_.failures || config_.checkpoint_costs) {
        held = run_events(s, r, opt, restart);
        completed = s.remaining <= 0;
      } else {
        const double needed = s.remaining / opt.iterations_per_s;
        if (restart + needed <= config_.round_s) {
          held = restart + needed;
          s.remaining = 0;
          completed = true;
        } else {
          s.remaining -= (config_.round_s - restart) * opt.iterations_per_s;
        }
      }
      if (completed) {
        r.completion_s = t + held;
        ++finished;
      } else {
        still.push_back(j);
      }
      s.held_s += held;
      gpu_seconds += held * opt.gpus;
      if (r.leases.empty() || r.leases.back().end_s != t || static_cast<int>(o) != s.lease_of_last_entry) {
        r.leases.push_back({t, t, opt.pool, opt.gpus});
      }
      s.lease_of_last_entry = o;
      r.leases.back().end_s = t + held;
      const double gpu_hours = held * opt.gpus / 3600;
      r.gpu_hours += gpu_hours;
      r.cost_usd += gpu_hours * in_.pools[opt.pool].price_per_gpu_hour;
    }
    since_allocation_s_ += config_.round_s;
    active_ = std::move(still);
    record_utilization(t, gpu_seconds);
    return finished;
  }

  // One round of a job on `opt` with failures or checkpoint costs, after a start's restart of
  // `restart` s (0 when it keeps its lease): events in time order (a restart's end, a checkpoint's
  // start or end, a failure, the job's completion, the round's end). Checkpoints come every interval
  // of training (the option's CheckpointCost, else the failures' checkpoint_interval), each stalling
  // the job for its C (none without checkpoint costs: taken at once); a stall or restart cut by the
  // round's end goes on in the next round if the job keeps its lease. A failure (with
  // SchedulerConfig::failures) returns the work since the last completed checkpoint to the job and
  // starts a restart on the same GPUs (failure_restart_s; a failure during a restart starts it over).
  // Lost: the GPU time of the training since the checkpoint and of the restarts failures cause.
  // Returns the seconds the job held its GPUs (the round, or until it completed).
  double run_events(JobState& s, JobOutcome& r, const JobOption& opt, double restart) {
    const SchedulePool& pool = in_.pools[opt.pool];
    const double nodes = std::ceil(static_cast<double>(opt.gpus) / pool.gpus_per_node);
    const double hazard_per_s = config_.failures && pool.node_mtbf_s > 0 ? nodes / pool.node_mtbf_s : 0;
    const double interval = opt.checkpoint   ? opt.checkpoint->interval_s
                            : config_.failures ? config_.failures->checkpoint_interval_s
                                               : std::numeric_limits<double>::infinity();
    const double stall = opt.checkpoint ? opt.checkpoint->stall_s : 0;
    bool after_failure = restart == 0 && s.failure_restart_left > 0;
    double t = 0, restart_left = after_failure ? s.failure_restart_left : restart, lost_s = 0;
    while (t < config_.round_s && s.remaining > 0) {
      const double to_failure = hazard_per_s > 0 ? (s.next_failure - s.exposure) / hazard_per_s
                                                 : std::numeric_limits<double>::infinity();
      const double to_done = s.remaining / opt.iterations_per_s;
      const double to_event = restart_left > 0 ? restart_left
                              : s.stall_left > 0 ? s.stall_left
                                                 : std::min(to_done, interval - s.since_checkpoint_s);
      const double step = std::min({to_event, to_failure, config_.round_s - t});
      t += step;
      s.exposure += step * hazard_per_s;
      if (restart_left > 0) {
        restart_left -= step;
        if (after_failure) lost_s += step;
        s.tail_s = 0;
      } else if (s.stall_left > 0) {
        s.stall_left -= step;
        r.checkpoint_stall_s += step;
        r.checkpoint_gpu_hours += step * opt.gpus / 3600;
        s.tail_s = 0;
        if (s.stall_left <= 0 && step != to_failure) {  // the checkpoint is saved
          s.stall_left = 0;
          ++r.checkpoints;
          s.since_checkpoint_s = 0;
          s.since_checkpoint_iterations = 0;
        }
      } else {
        const double done = step == to_done ? s.remaining : step * opt.iterations_per_s;
        s.remaining -= done;
        s.since_checkpoint_s += step;
        s.since_checkpoint_iterations += done;
        s.tail_s += step;
        if (s.remaining <= 0) break;
      }
      if (step == to_failure) {
        ++r.failures;
        lost_s += s.since_checkpoint_s;
        s.remaining += s.since_checkpoint_iterations;
        s.since_checkpoint_s = 0;
        s.since_checkpoint_iterations = 0;
        s.next_failure += exponential_draw(s.failure_draws);
        s.stall_left = 0;  // a checkpoint in progress is lost with the work before it
        s.tail_s = 0;
        restart_left = failure_restart_s(opt);
        after_failure = true;
      } else if (restart_left <= 0 && s.stall_left <= 0 && s.since_checkpoint_s >= interval) {
        if (stall > 0) {
          s.stall_left = stall;  // a checkpoint begins: no progress until it is saved
        } else {
          s.since_checkpoint_s = 0;  // a checkpoint taken at once (no checkpoint costs)
          s.since_checkpoint_iterations = 0;
          if (config_.checkpoint_costs && opt.checkpoint) ++r.checkpoints;
        }
      }
    }
    s.failure_restart_left = after_failure ? std::max(0.0, restart_left) : 0;
    r.lost_gpu_hours += lost_s * opt.gpus / 3600;
    return t;
  }

  void record_utilization(double t, double gpu_seconds) {
    UtilizationTimeline& u = result_.timeline;
    const auto bucket = static_cast<size_t>((t - first_arrival_s_) / u.bucket_s);
    if (u.utilization.size() <= bucket) u.utilization.resize(bucket + 1, 0);
    u.utilization[bucket] += gpu_seconds / (cluster_gpus() * u.bucket_s);
  }

  double cluster_gpus() const {
    double gpus = 0;
    for (const SchedulePool& p : in_.pools) gpus += p.gpus;
    return gpus;
  }

  void summarize() {
    ScheduleSummary& m = result_.summary;
    m.jobs = result_.jobs.size();
    std::vector<double> jct;
    double first = std::numeric_limits<double>::infinity(), last = 0, gpu_seconds = 0;
    for (size_t j = 0; j < result_.jobs.size(); ++j) {
      JobOutcome& r = result_.jobs[j];
      r.jct_s = r.completion_s - r.arrival_s;
      r.waiting_s = std::max(0.0, r.jct_s - state_[j].held_s);
      double best = 0;
      for (const JobOption& o : in_.jobs[j].options) best = std::max(best, o.iterations_per_s);
      r.slowdown = r.jct_s / (in_.jobs[j].work_iterations / best);
      m.average_slowdown += r.slowdown / static_cast<double>(result_.jobs.size());
      m.max_slowdown = std::max(m.max_slowdown, r.slowdown);
      if (r.deadline_s) r.met_deadline = r.completion_s <= *r.deadline_s;
      if (!r.met_deadline) ++m.deadlines_missed;
      jct.push_back(r.jct_s);
      first = std::min(first, r.arrival_s);
      last = std::max(last, r.completion_s);
      m.gpu_hours += r.gpu_hours;
      m.cost_usd += r.cost_usd;
      m.failures += r.failures;
      m.lost_gpu_hours += r.lost_gpu_hours;
      m.checkpoints += r.checkpoints;
      m.checkpoint_stall_s += r.checkpoint_stall_s;
      m.checkpoint_gpu_hours += r.checkpoint_gpu_hours;
      gpu_seconds += r.gpu_hours * 3600;
    }
    if (jct.empty()) return;
    std::sort(jct.begin(), jct.end());
    double sum = 0;
    for (double v : jct) sum += v;
    m.average_jct_s = sum / static_cast<double>(jct.size());
    const size_t rank = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(jct.size())));
    m.p95_jct_s = jct[std::max<size_t>(rank, 1) - 1];
    m.makespan_s = last - first;
    m.utilization = m.makespan_s > 0 ? gpu_seconds / (cluster_gpus() * m.makespan_s) : 0;
  }

  const ScheduleInput& in_;
  const SchedulerConfig& config_;
  std::vector<AllocationOption> options_;
  std::vector<JobState> state_;
  std::vector<size_t> active_;  // arrived, not finished, in arrival order
  double since_allocation_s_ = 0;
  double first_arrival_s_ = 0;
  ScheduleResult result_;
};

}  // namespace

ScheduleInput schedule_input(const ClusterSpec& cluster, const JobTrace& trace, const ThroughputMatrix& matrix) {
  ScheduleInput in;
  const SchedulerConfig& config = cluster.scheduler;
  for (const Pool& p : cluster.pools) {
    const network::ReliabilitySpec reliability = p.config.reliability.value_or(network::ReliabilitySpec{});
    SchedulePool sp{p.name, p.gpus(), p.price_per_gpu_hour().value_or(0), reliability.node_mtbf.value(),
                    p.config.gpus_per_node, std::nullopt, 0};
    if (config.checkpoint_costs) {
      // Only a relaunch the pool states replaces restart_s (ReliabilitySpec's default is the
      // resilience model's, for a whole training run, not the scheduler's).
      const core::Json* given = p.cluster.is_object() && p.cluster.contains("reliability") ? &p.cluster.at("reliability") : nullptr;
      if (given != nullptr && given->is_object() && given->contains("restart")) sp.failure_relaunch_s = reliability.restart.value();
      sp.warmup_s = reliability.warmup.value();
    }
    in.pools.push_back(std::move(sp));
  }
  core::Diagnostics diag;
  for (size_t j = 0; j < trace.jobs.size(); ++j) {
    const Job& job = trace.jobs[j];
    in.jobs.push_back({job.name, job.arrival_s, matrix.work_iterations(j), job.weight, job.deadline_s, matrix.options_of(j)});
    if (!config.checkpoint_costs) continue;
    for (const JobOption& o : in.jobs.back().options) {
      const double load = o.checkpoint ? o.checkpoint->load_s : 0, stall = o.checkpoint ? o.checkpoint->stall_s : 0;
      const double warmup = in.pools[o.pool].warmup_s;
      if (config.restart_s + load + warmup + stall < config.round_s) continue;
      diag.add(trace.file, job.pointer,
               fmt::format("job \"{}\" on {} x {}: a restart (restart_s {:.4g} s + checkpoint load {:.4g} s + warm-up {:.4g} "
                           "s) and a checkpoint ({:.4g} s) take {:.4g} s, not less than the round ({:.4g} s): moved every "
                           "round it would never progress; give a longer scheduler.round_s",
                           job.name, o.gpus, in.pools[o.pool].name, config.restart_s, load, warmup, stall,
                           config.restart_s + load + warmup + stall, config.round_s));
      break;
    }
  }
  diag.throw_if_any();
  return in;
}

ScheduleResult simulate_schedule(const ScheduleInput& input, const SchedulerConfig& config) {
  return Simulation(input, config).run();
}

ClusterRuns schedule_cluster(ClusterSpec cluster, const JobTrace& trace, const ThroughputMatrix& matrix,
                             const std::vector<Policy>& policies) {
  ClusterRuns runs;
  runs.jobs = trace.jobs.size();
  runs.job_classes = matrix.classes().size();
  runs.matrix_entries = matrix.entries().size();
  runs.input = schedule_input(cluster, trace, matrix);
  for (Policy p : policies) {
    SchedulerConfig config = cluster.scheduler;
    config.policy = p;
    runs.results.push_back(simulate_schedule(runs.input, config));
  }
  runs.cluster = std::move(cluster);
  return runs;
}

std::vector<ClusterRuns> schedule_clusters(std::vector<ClusterSpec> clusters, const JobTrace& trace,
                                           const MatrixOptions& matrix_options, const std::vector<Policy>& policies) {
  TRAINSIM_CHECK(!clusters.empty(), "schedule_clusters: no cluster");
  std::vector<ClusterRuns> runs;
  for (size_t c = 0; c < clusters.size(); ++c) {
    // The first cluster's trace as given; each other's read again, checked against its own pools.
    const JobTrace on_this = c == 0 ? trace : load_job_trace(trace.file, clusters[c]);
    const ThroughputMatrix matrix(clusters[c], on_this, matrix_options);
    runs.push_back(schedule_cluster(std::move(clusters[c]), on_this, matrix, policies));
  }
  return runs;
}

}  // namespace trainsim::plan
