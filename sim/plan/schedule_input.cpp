#include "sim/plan/schedule_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>

#include "sim/core/error.hpp"
#include "sim/core/units.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {

namespace {

// Seconds in a trace: up to ~30 years.
constexpr double MAX_TRACE_S = 1e9;
constexpr int64_t MAX_JOBS = 1'000'000;
constexpr int64_t MAX_JOB_GPUS = int64_t{1} << 24;

std::string pool_list(const ClusterSpec& c) {
  std::string s;
  for (const Pool& p : c.pools) {
    s += fmt::format("{}{} ({} GPUs in nodes of {})", s.empty() ? "" : ", ", p.name, p.gpus(), p.config.gpus_per_node);
  }
  return s;
}

// "an empty list" for [], else the value as messages describe it.
std::string list_or_value(const core::Json& v) {
  return v.is_array() && v.empty() ? "an empty list" : core::describe_json(v);
}

// An array of numbers each in [min, max] (absent: empty).
std::vector<double> number_array(core::ObjectReader& r, std::string_view key, double min, double max) {
  std::vector<double> out;
  const core::Json* v = r.raw(key);
  if (v == nullptr) return out;
  if (!v->is_array()) {
    r.problem(key, fmt::format("expected a list of numbers, found {}", core::describe_json(*v)));
    return out;
  }
  for (const core::Json& x : *v) {
    if (!x.is_number() || !(x.get<double>() >= min && x.get<double>() <= max)) {
      r.problem(key, fmt::format("expected numbers from {} to {}, found {}", min, max, core::describe_json(x)));
      return {};
    }
    out.push_back(x.get<double>());
  }
  return out;
}

// A [min, max] pair of positive numbers with min <= max.
void read_range(core::ObjectReader& r, std::string_view key, double& lo, double& hi) {
  if (!r.has(key)) return;
  const std::vector<double> v = number_array(r, key, 1e-6, MAX_TRACE_S / 60);
  if (v.size() != 2 || v[0] > v[1]) {
    r.problem(key, "expected [min, max] in minutes with 0 < min <= max");
    return;
  }
  lo = v[0];
  hi = v[1];
}

// A job's (or a mix entry's) "scenario": a path, relative to the trace's folder, or an object; then
// its "set" overrides. The scenario document and the file that names it.
std::pair<core::Json, std::string> read_scenario_ref(core::ObjectReader& r, const std::string& trace_file) {
  const core::Json* v = r.raw("scenario");
  core::Json doc = core::Json::object();
  std::string file = trace_file;
  if (v == nullptr) {
    r.problem("scenario", "missing: the job's training scenario, a path (relative to this file) or an object");
  } else if (v->is_string()) {
    const std::filesystem::path p(v->get<std::string>());
    file = (p.is_absolute() ? p : std::filesystem::path(trace_file).parent_path() / p).string();
    doc = core::load_scenario_file(file);
  } else if (v->is_object()) {
    doc = *v;
  } else {
    r.problem("scenario", fmt::format("expected a scenario file's path or a scenario object, found {}", core::describe_json(*v)));
  }
  for (const std::string& s : r.string_array("set")) {
    try {
      apply_override(doc, s);
    } catch (const core::InputError& e) {
      r.problem("set", e.problems().front().message);
    }
  }
  return {std::move(doc), file};
}

WorkUnit read_work(core::ObjectReader& r, double& amount) {
  static const std::vector<std::pair<std::string, WorkUnit>> units = {
      {"iterations", WorkUnit::ITERATIONS}, {"samples", WorkUnit::SAMPLES}, {"tokens", WorkUnit::TOKENS},
      {"reference_hours", WorkUnit::REFERENCE_HOURS}};
  std::optional<core::ObjectReader> w = r.object("work");
  if (!w) {
    r.problem("work", "missing: the job's work, {\"iterations\": N}, {\"samples\": N}, {\"tokens\": N} or "
                      "{\"reference_hours\": H}");
    return WorkUnit::ITERATIONS;
  }
  WorkUnit unit = WorkUnit::ITERATIONS;
  int given = 0;
  for (const auto& [key, u] : units) {
    if (w->raw(key) == nullptr) continue;  // raw() also makes each unit a known key
    amount = w->number(key, 0, 1e-9, 1e30);
    unit = u;
    ++given;
  }
  w->finish();
  if (given != 1 && r.raw("work")->is_object()) {
    r.problem("work", fmt::format("expected exactly one of iterations, samples, tokens, reference_hours; found {}", given));
  }
  return unit;
}

std::vector<int> read_gpu_counts(core::ObjectReader& r, const ClusterSpec& cluster) {
  std::vector<int> gpus;
  if (!r.has("gpus")) {
    r.problem("gpus", "missing: the GPU counts the job may run on, e.g. [8] or [4, 8, 16]");
    return gpus;
  }
  for (int64_t g : r.integer_array("gpus", 1, MAX_JOB_GPUS)) gpus.push_back(static_cast<int>(g));
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  if (gpus.empty()) {
    // integer_array reported a value that is not a list of counts; an empty list is reported here.
    if (const core::Json* v = r.raw("gpus"); v->is_array() && v->empty()) r.problem("gpus", "expected at least one GPU count");
    return gpus;
  }
  const int largest = std::max_element(cluster.pools.begin(), cluster.pools.end(), [](const Pool& a, const Pool& b) {
                        return a.gpus() < b.gpus();
                      })->gpus();
  if (gpus.front() > largest) {
    r.problem("gpus", fmt::format("the job fits no pool: it needs at least {} GPUs, the largest pool has {} ({})",
                                  gpus.front(), largest, pool_list(cluster)));
  }
  return gpus;
}

Job read_job(core::ObjectReader& r, size_t index, const std::string& file, const ClusterSpec& cluster) {
  Job j;
  j.pointer = r.pointer();
  j.name = r.string("name", fmt::format("job-{}", index));
  j.arrival_s = r.number("arrival_s", 0, 0, MAX_TRACE_S);
  std::tie(j.scenario, j.scenario_file) = read_scenario_ref(r, file);
  j.work_unit = read_work(r, j.work);
  j.gpus = read_gpu_counts(r, cluster);
  j.weight = r.number("weight", 1, 1e-6, 1e6);
  if (const core::Json* d = r.raw("deadline_s"); d != nullptr) {
    j.deadline_s = r.number("deadline_s", 0, 0, MAX_TRACE_S);
    if (d->is_number() && *j.deadline_s <= j.arrival_s) {
      r.problem("deadline_s", fmt::format("expected a time after the arrival ({} s), found {}", j.arrival_s, *j.deadline_s));
    }
  }
  r.finish();
  return j;
}

SyntheticTraceOptions read_synthetic(core::ObjectReader& r, const std::string& file, const ClusterSpec& cluster) {
  SyntheticTraceOptions o;
  o.jobs = static_cast<int>(r.integer("jobs", o.jobs, 1, MAX_JOBS));
  o.seed = static_cast<uint64_t>(r.integer("seed", 1, 0, INT64_MAX));
  o.arrivals_per_hour = r.number("arrivals_per_hour", o.arrivals_per_hour, 1e-6, 1e9);
  const core::Json* mix = r.raw("mix");
  if (mix == nullptr || !mix->is_array() || mix->empty()) {
    r.problem("mix", "expected a non-empty list of {\"scenario\": ..., \"share\": ...}: the models jobs are drawn from");
  } else {
    for (size_t i = 0; i < mix->size(); ++i) {
      core::ObjectReader m((*mix)[i], file, core::append_pointer(r.pointer_of("mix"), i), r.diagnostics());
      SyntheticMixEntry e;
      std::tie(e.scenario, e.scenario_file) = read_scenario_ref(m, file);
      e.share = m.number("share", 1, 1e-9, 1e9);
      const std::string fallback =
          e.scenario.is_object() && e.scenario.contains("name") && e.scenario["name"].is_string()
              ? e.scenario["name"].get<std::string>()
              : fmt::format("mix{}", i);
      e.name = m.string("name", fallback);
      m.finish();
      o.mix.push_back(std::move(e));
    }
  }
  if (r.has("gpu_counts")) {
    o.gpu_counts.clear();
    for (int64_t g : r.integer_array("gpu_counts", 1, MAX_JOB_GPUS)) o.gpu_counts.push_back(static_cast<int>(g));
  }
  if (r.has("gpu_count_shares")) o.gpu_count_shares = number_array(r, "gpu_count_shares", 0, 1e9);
  if (o.gpu_counts.empty() || o.gpu_counts.size() != o.gpu_count_shares.size()) {
    r.problem("gpu_count_shares", fmt::format("expected one share per GPU count ({} counts, {} shares)",
                                              o.gpu_counts.size(), o.gpu_count_shares.size()));
  }
  read_range(r, "short_minutes", o.short_minutes_min, o.short_minutes_max);
  read_range(r, "long_minutes", o.long_minutes_min, o.long_minutes_max);
  o.long_share = r.number("long_share", o.long_share, 0, 1);
  r.finish();
  int largest = 0;
  for (const Pool& p : cluster.pools) largest = std::max(largest, p.gpus());
  for (int g : o.gpu_counts) {
    if (g > largest) {
      r.problem("gpu_counts", fmt::format("a job of {} GPUs fits no pool ({})", g, pool_list(cluster)));
    }
  }
  return o;
}

// Uniform in [0, 1) from 53 bits of the generator (the same on every platform).
double uniform(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

// The index drawn from relative shares.
size_t draw(std::mt19937_64& g, const std::vector<double>& shares) {
  double total = 0;
  for (double s : shares) total += s;
  double u = uniform(g) * total;
  for (size_t i = 0; i < shares.size(); ++i) {
    if (u < shares[i]) return i;
    u -= shares[i];
  }
  return shares.size() - 1;
}

double log_uniform(std::mt19937_64& g, double lo, double hi) {
  return std::exp(std::log(lo) + uniform(g) * (std::log(hi) - std::log(lo)));
}

}  // namespace

std::string to_string(Policy p) {
  for (const auto& [name, policy] : policy_names()) {
    if (policy == p) return name;
  }
  return "?";
}

const std::vector<std::pair<std::string, Policy>>& policy_names() {
  static const std::vector<std::pair<std::string, Policy>> names = {
      {"fifo", Policy::FIFO},         {"las", Policy::LAS},
      {"gavel-las", Policy::GAVEL_LAS}, {"finish-time-fairness", Policy::FINISH_TIME_FAIRNESS},
      {"makespan", Policy::MAKESPAN}, {"min-cost", Policy::MIN_COST}};
  return names;
}

Policy parse_policy(const std::string& name, const std::string& origin, const std::string& pointer) {
  std::vector<std::string> known;
  for (const auto& [n, p] : policy_names()) {
    if (n == name) return p;
    known.push_back(n);
  }
  const std::string hint = core::closest_match(name, known);
  throw core::InputError(origin, pointer,
                         fmt::format("unknown policy \"{}\"{}; expected one of {}", name,
                                     hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint),
                                     fmt::join(known, ", ")));
}

int ClusterSpec::total_gpus() const {
  int n = 0;
  for (const Pool& p : pools) n += p.gpus();
  return n;
}

namespace {

// "scheduler.failures": the checkpoint interval (a duration, up to 100 years) and the seed.
FailureConfig read_failures(core::ObjectReader& r) {
  FailureConfig f;
  if (const core::Json* v = r.raw("checkpoint_interval")) {
    core::Seconds s;
    if (!v->is_string() || !core::parse_duration(v->get<std::string>(), s) || !(s.value() > 0 && s.value() <= 3.2e9)) {
      r.problem("checkpoint_interval", fmt::format("expected a positive duration such as \"30 min\" or \"1 h\" (at most "
                                                   "100 years), found {}",
                                                   core::describe_json(*v)));
    } else {
      f.checkpoint_interval_s = s.value();
    }
  }
  f.seed = static_cast<uint64_t>(r.integer("seed", 1, 0));
  r.finish();
  return f;
}

}  // namespace

ClusterSpec read_cluster_spec(const core::Json& doc, const std::string& file) {
  core::Diagnostics diag;
  core::ObjectReader r(doc, file, "", diag);
  ClusterSpec c;
  c.file = file;
  const core::Json* pools = r.raw("pools");
  if (pools == nullptr) {
    r.problem("pools", "missing: the cluster's node pools, [{\"name\": ..., \"gpu\": ..., \"nodes\": ...}, ...]");
  } else if (!pools->is_array() || pools->empty()) {
    r.problem("pools", fmt::format("expected a non-empty list of node pools, found {}", list_or_value(*pools)));
  } else {
    std::set<std::string> names;
    for (size_t i = 0; i < pools->size(); ++i) {
      const std::string pointer = core::append_pointer("/pools", i);
      // A pool of no nodes gets its own message; the cluster reader then reads it as one node.
      core::Json pool_doc = (*pools)[i];
      if (pool_doc.is_object() && pool_doc.contains("nodes") && pool_doc["nodes"].is_number() &&
          pool_doc["nodes"].get<double>() < 1) {
        diag.add(file, pointer + "/nodes",
                 fmt::format("a pool needs at least one node, found {}", core::describe_json(pool_doc["nodes"])));
        pool_doc["nodes"] = 1;
      }
      core::ObjectReader pr(pool_doc, file, pointer, diag);
      Pool p;
      p.name = pr.required_string("name").value_or("");
      if (!p.name.empty() && !names.insert(p.name).second) pr.problem("name", fmt::format("a second pool named \"{}\"", p.name));
      if (!pr.has("gpu")) pr.problem("gpu", "missing: the pool's GPU, a catalog name (`trainsim describe gpus`) or an object");
      if (!pr.has("nodes")) pr.problem("nodes", "missing: how many nodes of gpus_per_node GPUs the pool has");
      p.config = network::ClusterConfig::from_json(pr);
      if (pool_doc.is_object()) {
        p.cluster = pool_doc;
        p.cluster.erase("name");
      }
      c.pools.push_back(std::move(p));
    }
  }
  if (std::optional<core::ObjectReader> s = r.object("scheduler")) {
    std::vector<std::string> names;
    for (const auto& [n, p] : policy_names()) names.push_back(n);
    c.scheduler.policy = parse_policy(s->choice("policy", to_string(c.scheduler.policy), names), file, "/scheduler/policy");
    c.scheduler.round_s = s->number("round_s", c.scheduler.round_s, 1, 1e7);
    c.scheduler.restart_s = s->number("restart_s", c.scheduler.restart_s, 0, 1e7);
    if (c.scheduler.restart_s >= c.scheduler.round_s) {
      s->problem("restart_s", fmt::format("expected less than round_s ({} s): a moved job would never progress, found {}",
                                          c.scheduler.round_s, c.scheduler.restart_s));
    }
    if (std::optional<core::ObjectReader> f = s->object("failures")) c.scheduler.failures = read_failures(*f);
    c.scheduler.checkpoint_costs = s->boolean("checkpoint_costs", false);
    s->finish();
  }
  r.finish();
  diag.throw_if_any();
  return c;
}

ClusterSpec load_cluster_spec(const std::string& path) { return read_cluster_spec(core::load_json_file(path), path); }

std::vector<Job> generate_jobs(const SyntheticTraceOptions& o) {
  TRAINSIM_CHECK(!o.mix.empty() && o.gpu_counts.size() == o.gpu_count_shares.size(), "synthetic trace options unchecked");
  std::mt19937_64 g(o.seed);
  std::vector<double> mix_shares;
  for (const SyntheticMixEntry& e : o.mix) mix_shares.push_back(e.share);
  std::vector<Job> jobs;
  double t = 0;
  for (int i = 0; i < o.jobs; ++i) {
    // The first job arrives at 0; then exponential gaps of mean 1 / rate.
    if (i > 0) t += -std::log1p(-uniform(g)) * 3600 / o.arrivals_per_hour;
    const size_t mix = draw(g, mix_shares);
    const SyntheticMixEntry& m = o.mix[mix];
    const int gpus = o.gpu_counts[draw(g, o.gpu_count_shares)];
    const bool long_job = uniform(g) < o.long_share;
    const double minutes = long_job ? log_uniform(g, o.long_minutes_min, o.long_minutes_max)
                                    : log_uniform(g, o.short_minutes_min, o.short_minutes_max);
    Job j;
    j.name = fmt::format("{}-{}", m.name, i);
    j.pointer = core::append_pointer("/synthetic/mix", mix);  // what the job was drawn from
    j.arrival_s = t;
    j.scenario = m.scenario;
    j.scenario_file = m.scenario_file;
    j.work_unit = WorkUnit::REFERENCE_HOURS;
    j.work = minutes / 60;
    j.gpus = {gpus};
    jobs.push_back(std::move(j));
  }
  return jobs;
}

JobTrace read_job_trace(const core::Json& doc, const std::string& file, const ClusterSpec& cluster) {
  core::Diagnostics diag;
  core::ObjectReader r(doc, file, "", diag);
  JobTrace t;
  t.file = file;
  t.reference_pool = r.string("reference_pool", cluster.pools.front().name);
  if (std::none_of(cluster.pools.begin(), cluster.pools.end(), [&](const Pool& p) { return p.name == t.reference_pool; })) {
    r.problem("reference_pool", fmt::format("no pool is named \"{}\" ({})", t.reference_pool, pool_list(cluster)));
  }
  const core::Json* jobs = r.raw("jobs");
  std::optional<core::ObjectReader> synthetic = r.object("synthetic");
  if ((jobs != nullptr) == synthetic.has_value()) {
    r.problem("", "expected either \"jobs\" (a list of jobs) or \"synthetic\" (a generated trace)");
  } else if (synthetic) {
    const SyntheticTraceOptions o = read_synthetic(*synthetic, file, cluster);
    diag.throw_if_any();
    t.jobs = generate_jobs(o);
    t.synthetic = true;
  } else if (!jobs->is_array() || jobs->empty()) {
    r.problem("jobs", fmt::format("the trace is empty: expected a non-empty list of jobs, found {}", list_or_value(*jobs)));
  } else if (static_cast<int64_t>(jobs->size()) > MAX_JOBS) {
    r.problem("jobs", fmt::format("expected at most {} jobs, found {}", MAX_JOBS, jobs->size()));
  } else {
    std::set<std::string> names;
    for (size_t i = 0; i < jobs->size(); ++i) {
      core::ObjectReader jr((*jobs)[i], file, core::append_pointer("/jobs", i), diag);
      Job j = read_job(jr, i, file, cluster);
      if (!names.insert(j.name).second) jr.problem("name", fmt::format("a second job named \"{}\"", j.name));
      t.jobs.push_back(std::move(j));
    }
  }
  r.finish();
  diag.throw_if_any();
  std::stable_sort(t.jobs.begin(), t.jobs.end(), [](const Job& a, const Job& b) { return a.arrival_s < b.arrival_s; });
  return t;
}

JobTrace load_job_trace(const std::string& path, const ClusterSpec& cluster) {
  return read_job_trace(core::load_json_file(path), path, cluster);
}

core::Json job_trace_json(const JobTrace& t) {
  static const char* const unit_names[] = {"iterations", "samples", "tokens", "reference_hours"};
  core::Json doc = core::Json::object();
  doc["reference_pool"] = t.reference_pool;
  core::Json jobs = core::Json::array();
  for (const Job& j : t.jobs) {
    core::Json o = core::Json::object();
    o["name"] = j.name;
    o["arrival_s"] = j.arrival_s;
    o["scenario"] = j.scenario;
    o["work"] = core::Json::object({{unit_names[static_cast<int>(j.work_unit)], j.work}});
    o["gpus"] = j.gpus;
    o["weight"] = j.weight;
    if (j.deadline_s) o["deadline_s"] = *j.deadline_s;
    jobs.push_back(std::move(o));
  }
  doc["jobs"] = std::move(jobs);
  return doc;
}

}  // namespace trainsim::plan
