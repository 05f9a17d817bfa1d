#include "sim/cli/schedule_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "sim/cli/cli_options.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"
#include "sim/plan/report_figures.hpp"
#include "sim/plan/schedule_sim.hpp"
#include "sim/report/chart_file.hpp"
#include "sim/report/gantt_chart.hpp"
#include "sim/report/line_chart.hpp"

namespace trainsim::cli {

namespace {

// Rows of objects with the same keys as CSV: a header of the first row's keys (after `lead`, the
// columns every row gets first), then one line per row.
std::string csv_rows(const core::Json& rows, const std::vector<std::pair<std::string, core::Json>>& lead = {}) {
  std::ostringstream s;
  if (rows.empty()) return "";
  std::vector<std::string> header;
  for (const auto& [k, v] : lead) header.push_back(k);
  for (const auto& [k, v] : rows.front().items()) header.push_back(k);
  for (size_t i = 0; i < header.size(); ++i) s << (i ? "," : "") << plan::csv_field(header[i]);
  s << "\n";
  for (const core::Json& r : rows) {
    bool first = true;
    for (const auto& [k, v] : lead) {
      s << (first ? "" : ",") << plan::csv_value(&v);
      first = false;
    }
    for (const auto& [k, v] : r.items()) {
      s << (first ? "" : ",") << plan::csv_value(&v);
      first = false;
    }
    s << "\n";
  }
  return s.str();
}

std::string hours(double seconds) { return fmt::format("{:.2f}", seconds / 3600); }

void print_matrix(const plan::ClusterSpec& cluster, const plan::ThroughputMatrix& m, Format format, std::ostream& out) {
  const core::Json doc = plan::matrix_json(cluster, m);
  if (format == Format::JSON) {
    out << doc.dump(2) << "\n";
    return;
  }
  if (format == Format::CSV) {
    out << csv_rows(doc["entries"]);
    return;
  }
  out << fmt::format("{:<24} {:<10} {:>5} {:>12} {:>12}  {}\n", "job", "pool", "gpus", "iteration_s", "samples/s", "layout");
  for (const plan::MatrixEntry& e : m.entries()) {
    const std::string& job = m.classes()[e.job_class].name;
    if (e.feasible) {
      out << fmt::format("{:<24} {:<10} {:>5} {:>12.4g} {:>12.4g}  {}\n", job, cluster.pools[e.pool].name, e.gpus,
                         e.iteration_time_s, e.samples_per_s, e.layout);
    } else {
      out << fmt::format("{:<24} {:<10} {:>5} {:>12} {:>12}  {}\n", job, cluster.pools[e.pool].name, e.gpus, "-", "-", e.reason);
    }
  }
}

void print_table(const std::vector<plan::ScheduleResult>& results, bool priced, std::ostream& out) {
  out << fmt::format("{:<22} {:>6} {:>10} {:>10} {:>11} {:>9} {:>9} {:>7} {:>10}{}\n", "policy", "jobs", "avg_jct_h",
                     "p95_jct_h", "makespan_h", "avg_slow", "max_slow", "util_%", "gpu_hours",
                     priced ? fmt::format(" {:>10}", "cost_usd") : "");
  for (const plan::ScheduleResult& r : results) {
    const plan::ScheduleSummary& m = r.summary;
    out << fmt::format("{:<22} {:>6} {:>10} {:>10} {:>11} {:>9.2f} {:>9.1f} {:>7.1f} {:>10.1f}{}\n", plan::to_string(r.policy),
                       m.jobs, hours(m.average_jct_s), hours(m.p95_jct_s), hours(m.makespan_s), m.average_slowdown,
                       m.max_slowdown, 100 * m.utilization, m.gpu_hours, priced ? fmt::format(" {:>10.0f}", m.cost_usd) : "");
  }
  // Each policy's average JCT over the last one's (the walk-through lists the policy it studies last).
  const plan::ScheduleResult& last = results.back();
  if (results.size() > 1 && last.summary.average_jct_s > 0) {
    std::vector<std::string> ratios;
    for (size_t i = 0; i + 1 < results.size(); ++i) {
      ratios.push_back(fmt::format("{} {:.2f}x", plan::to_string(results[i].policy),
                                   results[i].summary.average_jct_s / last.summary.average_jct_s));
    }
    out << fmt::format("average JCT over {}'s: {}\n", plan::to_string(last.policy), fmt::join(ratios, ", "));
  }
  for (const plan::ScheduleResult& r : results) {
    if (r.failures) {
      out << fmt::format("{}: {} failure(s), {:.1f} GPU-hours lost (work since the last checkpoint and restarts)\n",
                         plan::to_string(r.policy), r.summary.failures, r.summary.lost_gpu_hours);
    }
  }
  for (const plan::ScheduleResult& r : results) {
    if (r.checkpoint_costs) {
      out << fmt::format("{}: {} checkpoint(s), {:.3g} h of checkpoint stalls, {:.3g} GPU-hours\n", plan::to_string(r.policy),
                         r.summary.checkpoints, r.summary.checkpoint_stall_s / 3600, r.summary.checkpoint_gpu_hours);
    }
  }
  for (const plan::ScheduleResult& r : results) {
    if (r.summary.deadlines_missed > 0) {
      out << fmt::format("{}: {} deadline(s) missed\n", plan::to_string(r.policy), r.summary.deadlines_missed);
    }
  }
}

// A policy's run as a chart names it: the policy, after its cluster file's name when several clusters
// are compared (--vs).
struct NamedResult {
  std::string name;
  const plan::ScheduleResult* result = nullptr;
};

// The cluster's utilization over time (hourly buckets), one line per run.
report::LineChart utilization_chart(const std::vector<NamedResult>& runs) {
  report::LineChart c;
  c.title = "Cluster utilization";
  c.x_label = fmt::format("time from the first arrival (hours; buckets of {:g} h)", runs.front().result->timeline.bucket_s / 3600);
  c.y_label = "GPUs held (%)";
  for (const auto& [name, result] : runs) {
    const plan::ScheduleResult& r = *result;
    report::LineSeries s;
    s.name = name;
    for (size_t i = 0; i < r.timeline.utilization.size(); ++i) {
      s.x.push_back(static_cast<double>(i) * r.timeline.bucket_s / 3600);
      s.y.push_back(100 * r.timeline.utilization[i]);
    }
    c.series.push_back(std::move(s));
  }
  return c;
}

// The CDF of the jobs' completion times, one line per run, over the utilization chart.
void write_plot(const std::string& path, const std::vector<NamedResult>& runs) {
  report::LineChart c;
  c.title = "Job completion time CDF";
  c.x_label = "JCT (hours)";
  c.y_label = "jobs (%)";
  c.log2_x = true;  // JCTs span minutes to days
  for (const auto& [name, result] : runs) {
    std::vector<double> jct;
    for (const plan::JobOutcome& o : result->jobs) jct.push_back(o.jct_s / 3600);
    std::sort(jct.begin(), jct.end());
    report::LineSeries s;
    s.name = name;
    for (size_t i = 0; i < jct.size(); ++i) {
      s.x.push_back(jct[i]);
      s.y.push_back(100.0 * static_cast<double>(i + 1) / static_cast<double>(jct.size()));
    }
    c.series.push_back(std::move(s));
  }
  report::write_chart_file(path, report::render_line_charts({c, utilization_chart(runs)}), "--plot");
}

// Each policy's jobs (arrival order, top to bottom) over time: bars where they held GPUs, coloured
// by pool.
void write_gantt(const std::string& path, const plan::ScheduleInput& input, const std::vector<plan::ScheduleResult>& results) {
  std::vector<report::GanttChart> charts;
  for (const plan::ScheduleResult& r : results) {
    report::GanttChart g;
    g.title = plan::to_string(r.policy);
    g.x_label = "time (hours)";
    for (const plan::SchedulePool& p : input.pools) g.categories.push_back(p.name);
    std::vector<size_t> order(r.jobs.size());
    for (size_t j = 0; j < order.size(); ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r.jobs[a].arrival_s < r.jobs[b].arrival_s; });
    for (size_t j : order) {
      const plan::JobOutcome& o = r.jobs[j];
      report::GanttRow row{o.name, o.arrival_s / 3600, o.completion_s / 3600, {}};
      for (const plan::Lease& l : o.leases) row.bars.push_back({l.start_s / 3600, l.end_s / 3600, l.pool});
      g.rows.push_back(std::move(row));
    }
    charts.push_back(std::move(g));
  }
  report::write_chart_file(path, report::render_gantt_charts(charts), "--gantt");
}

std::vector<plan::Policy> policies_of(const ScheduleArgs& args, const plan::ClusterSpec& cluster) {
  std::vector<plan::Policy> policies;
  for (const std::string& name : args.policies) {
    const plan::Policy p = plan::parse_policy(name, "--policy", "");
    if (std::find(policies.begin(), policies.end(), p) == policies.end()) policies.push_back(p);
  }
  if (policies.empty()) policies.push_back(cluster.scheduler.policy);
  for (plan::Policy p : policies) {
    if (p != plan::Policy::MIN_COST) continue;
    for (size_t k = 0; k < cluster.pools.size(); ++k) {
      if (!cluster.pools[k].price_per_gpu_hour()) {
        throw core::InputError(cluster.file, fmt::format("/pools/{}/price_per_gpu_hour", k),
                               "the policy min-cost needs a price on every pool (USD per GPU-hour)");
      }
    }
  }
  return policies;
}

plan::ClusterSpec load_cluster(const std::string& file, const ScheduleArgs& args) {
  plan::ClusterSpec cluster = plan::load_cluster_spec(file);
  if (args.round_s) cluster.scheduler.round_s = *args.round_s;
  if (args.restart_s) cluster.scheduler.restart_s = *args.restart_s;
  if (cluster.scheduler.restart_s >= cluster.scheduler.round_s) {
    throw core::InputError("--restart-s", "", fmt::format("expected less than the round ({} s), found {}",
                                                          cluster.scheduler.round_s, cluster.scheduler.restart_s));
  }
  return cluster;
}

void log_matrix(const std::string& file, size_t jobs, size_t classes, size_t entries, std::ostream& err) {
  err << fmt::format("schedule: {}: {} jobs, {} job classes, {} matrix entries\n", file, jobs, classes, entries);
}

bool priced(const plan::ClusterSpec& cluster) {
  return std::all_of(cluster.pools.begin(), cluster.pools.end(),
                     [](const plan::Pool& p) { return p.price_per_gpu_hour().has_value(); });
}

// "cluster-3types.json: 3 pools, 10000 GPUs (h100 2000, a100 4000, v100 4000)"
std::string cluster_line(const plan::ClusterRuns& c) {
  std::vector<std::string> pools;
  int gpus = 0;
  for (const plan::SchedulePool& p : c.input.pools) {
    pools.push_back(fmt::format("{} {}", p.name, p.gpus));
    gpus += p.gpus;
  }
  return fmt::format("{}: {} pools, {} GPUs ({})", c.cluster.file, pools.size(), gpus, fmt::join(pools, ", "));
}

// --vs: each other cluster's figures over the first's, policy by policy.
void print_side_by_side(const std::vector<plan::ClusterRuns>& clusters, std::ostream& out) {
  const plan::ClusterRuns& base = clusters.front();
  out << fmt::format("side by side, over {}'s:\n", base.cluster.file);
  for (size_t c = 1; c < clusters.size(); ++c) {
    for (size_t i = 0; i < base.results.size(); ++i) {
      const plan::ScheduleSummary& a = base.results[i].summary;
      const plan::ScheduleSummary& b = clusters[c].results[i].summary;
      auto ratio = [](double x, double y) { return y > 0 ? fmt::format("{:.2f}x", x / y) : std::string("-"); };
      out << fmt::format("  {} {}: average JCT {}, p95 JCT {}, makespan {}, GPU-hours {}{}\n", clusters[c].cluster.file,
                         plan::to_string(base.results[i].policy), ratio(b.average_jct_s, a.average_jct_s),
                         ratio(b.p95_jct_s, a.p95_jct_s), ratio(b.makespan_s, a.makespan_s), ratio(b.gpu_hours, a.gpu_hours),
                         priced(base.cluster) && priced(clusters[c].cluster)
                             ? fmt::format(", cost {}", ratio(b.cost_usd, a.cost_usd))
                             : std::string());
    }
  }
}

}  // namespace

int schedule_command(const ScheduleArgs& args, std::ostream& out, std::ostream& err) {
  plan::ClusterSpec cluster = load_cluster(args.cluster, args);
  const std::vector<plan::Policy> policies = policies_of(args, cluster);
  if (!args.plot.empty()) report::check_chart_path(args.plot, "--plot");
  if (!args.gantt.empty()) report::check_chart_path(args.gantt, "--gantt");
  if (!args.vs.empty() && !args.gantt.empty()) {
    throw core::InputError("--gantt", "", "draws the jobs of one cluster: leave out --vs, or run once per cluster file");
  }
  if (!args.vs.empty() && args.matrix) {
    throw core::InputError("--matrix", "", "prints one cluster's throughput matrix: leave out --vs, or run once per cluster file");
  }
  const plan::JobTrace trace = plan::load_job_trace(args.jobs, cluster);
  if (!args.write_trace.empty()) core::write_output_file(args.write_trace, plan::job_trace_json(trace).dump(1) + "\n", "--write-trace");
  plan::MatrixOptions mo;
  mo.refine = args.refine;
  if (args.matrix) {
    const plan::ThroughputMatrix matrix(cluster, trace, mo);
    log_matrix(args.cluster, trace.jobs.size(), matrix.classes().size(), matrix.entries().size(), err);
    print_matrix(cluster, matrix, args.format, out);
    return 0;
  }
  std::vector<plan::ClusterSpec> specs{cluster};
  for (const std::string& file : args.vs) {
    specs.push_back(load_cluster(file, args));
    policies_of(args, specs.back());  // min-cost needs a price on every pool of each cluster too
  }
  const std::vector<plan::ClusterRuns> clusters = plan::schedule_clusters(std::move(specs), trace, mo, policies);
  for (const plan::ClusterRuns& c : clusters) {
    log_matrix(c.cluster.file, c.jobs, c.job_classes, c.matrix_entries, err);
    for (const plan::ScheduleResult& r : c.results) {
      err << fmt::format("schedule: {}: {}: {} rounds, {} allocations, {:.2f} s\n", c.cluster.file, plan::to_string(r.policy),
                         r.summary.rounds, r.summary.allocations, r.summary.wall_s);
    }
  }
  const bool several = clusters.size() > 1;
  if (args.format == Format::JSON) {
    if (!several) {
      out << plan::schedule_json(clusters[0].input, clusters[0].cluster.scheduler, clusters[0].results).dump(2) << "\n";
    } else {
      core::Json doc = {{"schema", "trainsim.schedule-clusters/1"}, {"clusters", core::Json::array()}};
      for (const plan::ClusterRuns& c : clusters) {
        core::Json one = plan::schedule_json(c.input, c.cluster.scheduler, c.results);
        one["cluster_file"] = c.cluster.file;
        doc["clusters"].push_back(std::move(one));
      }
      out << doc.dump(2) << "\n";
    }
  } else if (args.format == Format::CSV) {
    bool header = true;
    for (const plan::ClusterRuns& c : clusters) {
      const core::Json doc = plan::schedule_json(c.input, c.cluster.scheduler, c.results);
      for (const core::Json& run : doc["policies"]) {
        std::vector<std::pair<std::string, core::Json>> lead;
        if (several) lead.emplace_back("cluster", c.cluster.file);
        lead.emplace_back("policy", run["policy"]);
        std::string rows = csv_rows(run["jobs"], lead);
        if (!header) rows.erase(0, rows.find('\n') + 1);
        header = false;
        out << rows;
      }
    }
  } else {
    for (const plan::ClusterRuns& c : clusters) {
      if (several) out << cluster_line(c) << "\n";
      print_table(c.results, priced(c.cluster), out);
    }
    if (several) print_side_by_side(clusters, out);
  }
  std::vector<NamedResult> named;
  for (const plan::ClusterRuns& c : clusters) {
    for (const plan::ScheduleResult& r : c.results) {
      const std::string policy(plan::to_string(r.policy));
      named.push_back({several ? fmt::format("{} {}", std::filesystem::path(c.cluster.file).stem().string(), policy) : policy, &r});
    }
  }
  if (!args.plot.empty()) write_plot(args.plot, named);
  if (!args.gantt.empty()) write_gantt(args.gantt, clusters[0].input, clusters[0].results);
  return 0;
}

ScheduleSubcommand::ScheduleSubcommand(CLI::App& app) {
  command_ = app.add_subcommand("schedule", "Simulate a job trace on a cluster of several GPU types under scheduling "
                                            "policies (docs/schedule.md)");
  command_->add_option("cluster", args_.cluster, "Cluster file: node pools and scheduler settings")->required();
  command_->add_option("jobs", args_.jobs, "Job trace file: jobs, or a synthetic trace's settings")->required();
  command_->add_option("--policy", args_.policies,
                       "Policies, comma-separated: fifo, las, gavel-las, finish-time-fairness, makespan, min-cost "
                       "(default: the cluster file's scheduler.policy)")
      ->delimiter(',');
  command_->add_option("--round-s", args_.round_s, "Allocation round in seconds (overrides scheduler.round_s)")
      ->check(CLI::Range(1.0, 1e7));
  command_->add_option("--restart-s", args_.restart_s, "Seconds without progress after each start or move (overrides scheduler.restart_s)")
      ->check(CLI::Range(0.0, 1e7));
  command_->add_flag("--matrix", args_.matrix, "Print the throughput matrix (job x pool x GPU count) instead");
  command_->add_option("--refine", args_.refine, "Layouts evaluated with the analytic backend per matrix entry (default 10)")
      ->check(CLI::Range(1, 1000));
  add_format(command_, args_.format, /*csv=*/true);
  command_->add_option("--plot", args_.plot, "Also draw the JCT CDF and the utilization over time of each policy to FILE.svg or FILE.png");
  command_->add_option("--gantt", args_.gantt, "Also draw each policy's jobs over time (where they held GPUs, by pool) to FILE.svg or FILE.png");
  command_->add_option("--write-trace", args_.write_trace, "Also write the trace (a synthetic one as generated) to FILE");
  command_->add_option("--vs", args_.vs,
                       "Another cluster file (repeatable): the same jobs under the same policies on it, side by side "
                       "(a purchase against another)")
      ->type_name("CLUSTER");
}

std::optional<int> ScheduleSubcommand::run(std::ostream& out, std::ostream& err) const {
  if (!*command_) return std::nullopt;
  return schedule_command(args_, out, err);
}

}  // namespace trainsim::cli
