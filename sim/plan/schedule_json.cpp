#include "sim/plan/schedule_sim.hpp"

// The documents of `schedule --format json` and `schedule --matrix --format json` (docs/schedule.md).

namespace trainsim::plan {

namespace {

core::Json summary_json(const ScheduleSummary& m) {
  core::Json j = core::Json::object();
  j["jobs"] = m.jobs;
  j["average_jct_s"] = m.average_jct_s;
  j["p95_jct_s"] = m.p95_jct_s;
  j["makespan_s"] = m.makespan_s;
  j["utilization"] = m.utilization;
  j["gpu_hours"] = m.gpu_hours;
  j["cost_usd"] = m.cost_usd;
  j["average_slowdown"] = m.average_slowdown;
  j["max_slowdown"] = m.max_slowdown;
  j["deadlines_missed"] = m.deadlines_missed;
  j["rounds"] = m.rounds;
  j["allocations"] = m.allocations;
  return j;
}

core::Json outcome_json(const JobOutcome& r, const std::vector<SchedulePool>& pools) {
  core::Json j = core::Json::object();
  j["name"] = r.name;
  j["arrival_s"] = r.arrival_s;
  j["start_s"] = r.start_s;
  j["completion_s"] = r.completion_s;
  j["jct_s"] = r.jct_s;
  j["waiting_s"] = r.waiting_s;
  j["gpu_hours"] = r.gpu_hours;
  j["cost_usd"] = r.cost_usd;
  j["restarts"] = r.restarts;
  j["slowdown"] = r.slowdown;
  core::Json leases = core::Json::array();
  for (const Lease& l : r.leases) {
    leases.push_back({{"start_s", l.start_s}, {"end_s", l.end_s}, {"pool", pools[l.pool].name}, {"gpus", l.gpus}});
  }
  j["leases"] = std::move(leases);
  j["deadline_s"] = r.deadline_s ? core::Json(*r.deadline_s) : core::Json();
  j["met_deadline"] = r.met_deadline;
  return j;
}

// The figures failures and checkpoint costs add, where they are on: to a policy's summary and to
// each job's outcome alike (ScheduleSummary and JobOutcome name them the same).
template <class Figures>
void add_failure_and_checkpoint_figures(core::Json& j, const ScheduleResult& r, const Figures& f) {
  if (r.failures) {
    j["failures"] = f.failures;
    j["lost_gpu_hours"] = f.lost_gpu_hours;
  }
  if (r.checkpoint_costs) {
    j["checkpoints"] = f.checkpoints;
    j["checkpoint_stall_s"] = f.checkpoint_stall_s;
    j["checkpoint_gpu_hours"] = f.checkpoint_gpu_hours;
  }
}

}  // namespace

core::Json schedule_json(const ScheduleInput& input, const SchedulerConfig& config, const std::vector<ScheduleResult>& results) {
  core::Json doc = core::Json::object();
  doc["schema"] = "trainsim.schedule/1";
  core::Json pools = core::Json::array();
  for (const SchedulePool& p : input.pools) {
    pools.push_back({{"name", p.name}, {"gpus", p.gpus},
                     {"price_per_gpu_hour", p.price_per_gpu_hour > 0 ? core::Json(p.price_per_gpu_hour) : core::Json()}});
  }
  doc["pools"] = std::move(pools);
  doc["scheduler"] = {{"round_s", config.round_s}, {"restart_s", config.restart_s}};
  if (config.checkpoint_costs) doc["scheduler"]["checkpoint_costs"] = true;
  if (config.failures) {
    doc["scheduler"]["failures"] = {{"checkpoint_interval_s", config.failures->checkpoint_interval_s},
                                    {"seed", config.failures->seed}};
  }
  core::Json runs = core::Json::array();
  for (const ScheduleResult& r : results) {
    core::Json run = core::Json::object();
    run["policy"] = to_string(r.policy);
    run["summary"] = summary_json(r.summary);
    add_failure_and_checkpoint_figures(run["summary"], r, r.summary);
    core::Json jobs = core::Json::array();
    for (const JobOutcome& o : r.jobs) {
      jobs.push_back(outcome_json(o, input.pools));
      add_failure_and_checkpoint_figures(jobs.back(), r, o);
    }
    run["jobs"] = std::move(jobs);
    run["utilization_over_time"] = {{"bucket_s", r.timeline.bucket_s}, {"utilization", r.timeline.utilization}};
    runs.push_back(std::move(run));
  }
  doc["policies"] = std::move(runs);
  return doc;
}

core::Json matrix_json(const ClusterSpec& cluster, const ThroughputMatrix& m) {
  core::Json rows = core::Json::array();
  for (const MatrixEntry& e : m.entries()) {
    core::Json r = core::Json::object();
    r["job"] = m.classes()[e.job_class].name;
    r["pool"] = cluster.pools[e.pool].name;
    r["gpu"] = cluster.pools[e.pool].config.gpu;
    r["gpus"] = e.gpus;
    r["feasible"] = e.feasible;
    r["iteration_time_s"] = e.feasible ? core::Json(e.iteration_time_s) : core::Json();
    r["iterations_per_s"] = e.feasible ? core::Json(1 / e.iteration_time_s) : core::Json();
    r["samples_per_s"] = e.feasible ? core::Json(e.samples_per_s) : core::Json();
    r["tokens_per_s"] = e.feasible && e.tokens_per_s > 0 ? core::Json(e.tokens_per_s) : core::Json();
    r["layout"] = e.layout;
    r["reason"] = e.reason;
    if (cluster.scheduler.checkpoint_costs) {  // every row the same columns (CSV)
      r["checkpoint_stall_s"] = e.checkpoint ? core::Json(e.checkpoint->stall_s) : core::Json();
      r["checkpoint_load_s"] = e.checkpoint ? core::Json(e.checkpoint->load_s) : core::Json();
      r["checkpoint_interval_s"] = e.checkpoint ? core::Json(e.checkpoint->interval_s) : core::Json();
    }
    rows.push_back(std::move(r));
  }
  core::Json doc = core::Json::object();
  doc["schema"] = "trainsim.throughput-matrix/1";
  doc["entries"] = std::move(rows);
  return doc;
}

}  // namespace trainsim::plan
