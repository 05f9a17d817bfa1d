#include "sim/plan/schedule_allocation.hpp"

#include <ClpSimplex.hpp>
#include <CoinPackedMatrix.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "sim/core/error.hpp"

namespace trainsim::plan {

namespace {

std::atomic<size_t> solved{0};

constexpr double INF = std::numeric_limits<double>::infinity();
// Stage 2 holds each job to its stage-1 figure less this share (CLP's tolerances are ~1e-7 relative).
constexpr double SLACK = 1e-6;

using Coefficients = std::vector<std::vector<double>>;  // [job][option]; 0: no variable

// The allocation's variables: x[j][o] for each option job j can run on, and the constraints every
// policy keeps. With `scale` (a Charnes-Cooper variable s), the right-hand sides 1 and GPUs of pool
// k become s and GPUs x s.
struct Program {
  LinearProgram lp;
  std::vector<std::vector<std::pair<size_t, size_t>>> vars;  // by job: (option, variable)
  std::optional<size_t> scale;
};

Program base_program(const AllocationProblem& p, bool charnes_cooper) {
  Program g;
  if (charnes_cooper) g.scale = g.lp.add_variable(0, 0, INF);
  g.vars.resize(p.jobs.size());
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    for (size_t o = 0; o < p.options.size(); ++o) {
      if (p.jobs[j].throughput[o] > 0) g.vars[j].emplace_back(o, g.lp.add_variable(0, 0, charnes_cooper ? INF : 1));
    }
  }
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    std::vector<std::pair<size_t, double>> row;
    for (const auto& [o, v] : g.vars[j]) row.emplace_back(v, 1.0);
    if (g.scale) row.emplace_back(*g.scale, -1.0);
    g.lp.add_row(row, -INF, g.scale ? 0 : 1);
  }
  for (size_t k = 0; k < p.pool_gpus.size(); ++k) {
    std::vector<std::pair<size_t, double>> row;
    for (size_t j = 0; j < p.jobs.size(); ++j) {
      for (const auto& [o, v] : g.vars[j]) {
        if (p.options[o].pool == k) row.emplace_back(v, p.options[o].gpus);
      }
    }
    if (row.empty()) continue;
    if (g.scale) row.emplace_back(*g.scale, -p.pool_gpus[k]);
    g.lp.add_row(row, -INF, g.scale ? 0 : p.pool_gpus[k]);
  }
  return g;
}

// The row sum_o a[j][o] x[j][o] (plus `extra`).
std::vector<std::pair<size_t, double>> job_row(const Program& g, const Coefficients& a, size_t j) {
  std::vector<std::pair<size_t, double>> row;
  for (const auto& [o, v] : g.vars[j]) row.emplace_back(v, a[j][o]);
  return row;
}

std::vector<std::vector<double>> allocation_of(const AllocationProblem& p, const Program& g, const std::vector<double>& x,
                                               double divide = 1) {
  std::vector<std::vector<double>> out(p.jobs.size(), std::vector<double>(p.options.size(), 0));
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    for (const auto& [o, v] : g.vars[j]) out[j][o] = std::clamp(x[v] / divide, 0.0, 1.0);
  }
  return out;
}

std::vector<double> solve(const LinearProgram& lp) {
  std::optional<std::vector<double>> x = lp.maximize();
  TRAINSIM_CHECK(x.has_value(), "a scheduling LP that always has a solution (X = 0) was infeasible");
  return *x;
}

// Stage 2 of the max-min policies: each job at least (1 - SLACK) floor[j] of sum a x, the total of
// sum a x maximized.
std::vector<std::vector<double>> fill(const AllocationProblem& p, const Coefficients& a, const std::vector<double>& floor) {
  Program g = base_program(p, false);
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    for (const auto& [o, v] : g.vars[j]) g.lp.set_objective(v, a[j][o]);
    g.lp.add_row(job_row(g, a, j), floor[j] * (1 - SLACK), INF);
  }
  if (std::optional<std::vector<double>> x = g.lp.maximize()) return allocation_of(p, g, *x);
  return {};
}

// maximize min_j sum_o a[j][o] x[j][o], then fill().
std::vector<std::vector<double>> max_min(const AllocationProblem& p, const Coefficients& a) {
  Program g = base_program(p, false);
  const size_t t = g.lp.add_variable(1, 0, INF);
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    std::vector<std::pair<size_t, double>> row = job_row(g, a, j);
    row.emplace_back(t, -1.0);
    g.lp.add_row(row, 0, INF);
  }
  const std::vector<double> x = solve(g.lp);
  std::vector<std::vector<double>> filled = fill(p, a, std::vector<double>(p.jobs.size(), x[t]));
  return filled.empty() ? allocation_of(p, g, x) : filled;
}

double best_throughput(const AllocationJob& j) { return *std::max_element(j.throughput.begin(), j.throughput.end()); }

Coefficients coefficients(const AllocationProblem& p, Policy policy) {
  Coefficients a(p.jobs.size(), std::vector<double>(p.options.size(), 0));
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    const AllocationJob& job = p.jobs[j];
    int most_gpus = 0;
    for (size_t o = 0; o < p.options.size(); ++o) {
      if (job.throughput[o] > 0) most_gpus = std::max(most_gpus, p.options[o].gpus);
    }
    for (size_t o = 0; o < p.options.size(); ++o) {
      if (job.throughput[o] <= 0) continue;
      switch (policy) {
        case Policy::LAS: a[j][o] = p.options[o].gpus / (job.weight * most_gpus); break;
        case Policy::MAKESPAN: a[j][o] = job.throughput[o] / job.remaining; break;
        default: a[j][o] = job.throughput[o] / (job.weight * best_throughput(job)); break;
      }
    }
  }
  return a;
}

// The heterogeneity-agnostic LAS: the pools merged into one of all the GPUs, each job's options
// reduced to its GPU counts, max-min fairness over GPU time solved there; then each job's share of
// a count spread over the pools that run it in proportion to their GPUs, as a scheduler blind to the
// GPU type would place it.
std::vector<std::vector<double>> agnostic_las(const AllocationProblem& p) {
  AllocationProblem merged;
  std::vector<int> counts;
  for (const AllocationOption& o : p.options) counts.push_back(o.gpus);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (int c : counts) merged.options.push_back({0, c});
  double all = 0;
  for (double g : p.pool_gpus) all += g;
  merged.pool_gpus = {all};
  merged.pool_price = {0};
  const auto count_index = [&](int gpus) {
    return static_cast<size_t>(std::lower_bound(counts.begin(), counts.end(), gpus) - counts.begin());
  };
  for (const AllocationJob& job : p.jobs) {
    AllocationJob m = job;
    m.throughput.assign(counts.size(), 0);
    for (size_t o = 0; o < p.options.size(); ++o) {
      if (job.throughput[o] > 0) m.throughput[count_index(p.options[o].gpus)] = 1;
    }
    merged.jobs.push_back(std::move(m));
  }
  const std::vector<std::vector<double>> time = max_min(merged, coefficients(merged, Policy::LAS));
  std::vector<std::vector<double>> x(p.jobs.size(), std::vector<double>(p.options.size(), 0));
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    std::vector<double> gpus_running(counts.size(), 0);  // by count: GPUs of the pools that run it
    for (size_t o = 0; o < p.options.size(); ++o) {
      if (p.jobs[j].throughput[o] > 0) gpus_running[count_index(p.options[o].gpus)] += p.pool_gpus[p.options[o].pool];
    }
    for (size_t o = 0; o < p.options.size(); ++o) {
      if (p.jobs[j].throughput[o] <= 0) continue;
      const size_t c = count_index(p.options[o].gpus);
      x[j][o] = time[j][c] * p.pool_gpus[p.options[o].pool] / gpus_running[c];
    }
  }
  return x;
}

// Finish-time fairness: the smallest rho (bisection) for which every job can have
// thr_j >= remaining_j / (rho D_j - elapsed_j), D_j = n total_j / best throughput_j; at that rho the
// total normalized throughput is maximized.
std::vector<std::vector<double>> finish_time_fair(const AllocationProblem& p) {
  const Coefficients a = coefficients(p, Policy::GAVEL_LAS);
  const double n = static_cast<double>(p.jobs.size());
  std::vector<double> isolated(p.jobs.size());
  double lo = 0;
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    const AllocationJob& job = p.jobs[j];
    isolated[j] = n * job.total / best_throughput(job);
    lo = std::max(lo, (job.elapsed_s + job.remaining / best_throughput(job)) / isolated[j]);
  }
  // The normalized throughput each job needs at rho: thr_j / best_j >= floor_j.
  const auto floors = [&](double rho) {
    std::vector<double> f(p.jobs.size());
    for (size_t j = 0; j < p.jobs.size(); ++j) {
      const double time_left = rho * isolated[j] - p.jobs[j].elapsed_s;
      f[j] = time_left > 0 ? p.jobs[j].remaining / time_left / best_throughput(p.jobs[j]) : INF;
    }
    return f;
  };
  const auto feasible = [&](double rho) {
    const std::vector<double> f = floors(rho);
    if (std::any_of(f.begin(), f.end(), [](double v) { return v > 1; })) return std::vector<std::vector<double>>{};
    return fill(p, a, f);
  };
  double hi = std::max(lo, 1e-9) * 2;
  std::vector<std::vector<double>> best = feasible(hi);
  for (int i = 0; best.empty() && i < 200; ++i) {
    lo = hi;
    hi *= 2;
    best = feasible(hi);
  }
  TRAINSIM_CHECK(!best.empty(), "finish-time fairness found no feasible ratio");
  for (int i = 0; i < 40 && hi - lo > 1e-4 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    std::vector<std::vector<double>> x = feasible(mid);
    if (x.empty()) {
      lo = mid;
    } else {
      hi = mid;
      best = std::move(x);
    }
  }
  return best;
}

// Gavel's cost policy with SLOs: maximize (sum_j thr_j / remaining_j) / (sum of price x GPUs x X), with
// thr_j >= alpha remaining_j / time_to_deadline_j for the jobs whose deadline is ahead, alpha the
// largest share of those rates (up to 1) the cluster can give them all. Charnes-Cooper: y = s X.
std::vector<std::vector<double>> min_cost(const AllocationProblem& p) {
  std::vector<double> required(p.jobs.size(), 0);
  bool deadlines = false;
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    const AllocationJob& job = p.jobs[j];
    if (job.time_to_deadline_s && *job.time_to_deadline_s > 0) {
      required[j] = job.remaining / *job.time_to_deadline_s;
      deadlines = true;
    }
  }
  Coefficients thr(p.jobs.size(), std::vector<double>(p.options.size(), 0));
  for (size_t j = 0; j < p.jobs.size(); ++j) thr[j] = p.jobs[j].throughput;
  double alpha = 0;
  if (deadlines) {
    Program g = base_program(p, false);
    const size_t a = g.lp.add_variable(1, 0, 1);
    for (size_t j = 0; j < p.jobs.size(); ++j) {
      if (required[j] == 0) continue;
      std::vector<std::pair<size_t, double>> row = job_row(g, thr, j);
      row.emplace_back(a, -required[j]);
      g.lp.add_row(row, 0, INF);
    }
    alpha = solve(g.lp)[a] * (1 - SLACK);
  }
  Program g = base_program(p, true);
  std::vector<std::pair<size_t, double>> cost_row;
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    for (const auto& [o, v] : g.vars[j]) {
      g.lp.set_objective(v, thr[j][o] / p.jobs[j].remaining);
      cost_row.emplace_back(v, p.pool_price[p.options[o].pool] * p.options[o].gpus);
    }
    if (required[j] > 0) {
      std::vector<std::pair<size_t, double>> row = job_row(g, thr, j);
      row.emplace_back(*g.scale, -alpha * required[j]);
      g.lp.add_row(row, 0, INF);
    }
  }
  g.lp.add_row(cost_row, 1, 1);
  const std::vector<double> y = solve(g.lp);
  std::vector<std::vector<double>> x = allocation_of(p, g, y, y[*g.scale] > 0 ? y[*g.scale] : 1);
  // The ratio does not change with the scale of X: give it the largest scale the cluster allows.
  double room = INF;
  std::vector<double> used(p.pool_gpus.size(), 0);
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    double share = 0;
    for (size_t o = 0; o < p.options.size(); ++o) {
      share += x[j][o];
      used[p.options[o].pool] += x[j][o] * p.options[o].gpus;
    }
    if (share > 0) room = std::min(room, 1 / share);
  }
  for (size_t k = 0; k < used.size(); ++k) {
    if (used[k] > 0) room = std::min(room, p.pool_gpus[k] / used[k]);
  }
  if (room > 1 && room < INF) {
    for (auto& row : x) {
      for (double& v : row) v = std::min(1.0, v * room * (1 - SLACK));
    }
  }
  return x;
}

}  // namespace

size_t LinearProgram::add_variable(double objective, double lo, double hi) {
  objective_.push_back(objective);
  col_lo_.push_back(lo);
  col_hi_.push_back(hi);
  return objective_.size() - 1;
}

void LinearProgram::set_objective(size_t variable, double objective) { objective_.at(variable) = objective; }

void LinearProgram::add_row(const std::vector<std::pair<size_t, double>>& terms, double lo, double hi) {
  const int row = static_cast<int>(row_lo_.size());
  for (const auto& [v, c] : terms) {
    if (c == 0) continue;
    rows_.push_back(row);
    cols_.push_back(static_cast<int>(v));
    values_.push_back(c);
  }
  row_lo_.push_back(lo);
  row_hi_.push_back(hi);
}

std::optional<std::vector<double>> LinearProgram::maximize() const {
  ++solved;
  const auto finite = [](std::vector<double> v) {
    for (double& x : v) {
      if (std::isinf(x)) x = x > 0 ? COIN_DBL_MAX : -COIN_DBL_MAX;
    }
    return v;
  };
  CoinPackedMatrix m(/*colordered=*/false, rows_.data(), cols_.data(), values_.data(),
                     static_cast<CoinBigIndex>(values_.size()));
  m.setDimensions(static_cast<int>(row_lo_.size()), static_cast<int>(objective_.size()));
  const std::vector<double> col_lo = finite(col_lo_), col_hi = finite(col_hi_);
  const std::vector<double> row_lo = finite(row_lo_), row_hi = finite(row_hi_);
  ClpSimplex model;
  model.setLogLevel(0);
  model.loadProblem(m, col_lo.data(), col_hi.data(), objective_.data(), row_lo.data(), row_hi.data());
  model.setOptimizationDirection(-1);
  model.dual();
  if (model.isProvenPrimalInfeasible()) return std::nullopt;
  TRAINSIM_CHECK(model.isProvenOptimal(), fmt::format("CLP ended with status {} on a {} x {} scheduling LP",
                                                      model.status(), row_lo_.size(), objective_.size()));
  const double* x = model.primalColumnSolution();
  return std::vector<double>(x, x + objective_.size());
}

size_t lp_solves() { return solved.load(); }

std::vector<std::vector<double>> allocate(Policy policy, const AllocationProblem& problem) {
  TRAINSIM_CHECK(policy != Policy::FIFO, "FIFO places jobs without an allocation");
  if (problem.jobs.empty()) return {};
  switch (policy) {
    case Policy::FINISH_TIME_FAIRNESS: return finish_time_fair(problem);
    case Policy::MIN_COST: return min_cost(problem);
    case Policy::LAS: return agnostic_las(problem);
    default: return max_min(problem, coefficients(problem, policy));
  }
}

}  // namespace trainsim::plan
