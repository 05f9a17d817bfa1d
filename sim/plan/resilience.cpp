#include "sim/plan/resilience.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "sim/core/error.hpp"

namespace trainsim::plan {

double young_interval(double cost_s, double mtbf_s) {
  TRAINSIM_CHECK(cost_s >= 0 && mtbf_s > 0, "young_interval: negative cost or MTBF <= 0");
  return std::sqrt(2 * cost_s * mtbf_s);
}

double daly_interval(double cost_s, double mtbf_s) {
  TRAINSIM_CHECK(cost_s >= 0 && mtbf_s > 0, "daly_interval: negative cost or MTBF <= 0");
  if (cost_s >= 2 * mtbf_s) return mtbf_s;
  const double x = cost_s / (2 * mtbf_s);
  return std::sqrt(2 * cost_s * mtbf_s) * (1 + std::sqrt(x) / 3 + x / 9) - cost_s;
}

double goodput(double tau_s, double cost_s, double restart_s, double mtbf_s) {
  TRAINSIM_CHECK(tau_s > 0 && cost_s >= 0 && restart_s >= 0 && mtbf_s > 0, "goodput: out-of-range input");
  // expm1 keeps the precision when (tau + C) << M, the usual case.
  const double wall = mtbf_s * std::exp(restart_s / mtbf_s) * std::expm1((tau_s + cost_s) / mtbf_s);
  if (!std::isfinite(wall) || wall <= 0) return 0;
  return std::min(1.0, tau_s / wall);
}

SimulatedRuns simulate_failures(double solve_s, double tau_s, double cost_s, double restart_s, double mtbf_s, int runs,
                                uint64_t seed) {
  TRAINSIM_CHECK(runs >= 1 && solve_s > 0 && tau_s > 0 && cost_s >= 0 && restart_s >= 0 && mtbf_s > 0,
                 "simulate_failures: out-of-range input");
  TRAINSIM_CHECK(goodput(tau_s, cost_s, restart_s, mtbf_s) > 0, "simulate_failures: a run that never ends");
  std::mt19937_64 rng(seed);
  auto exponential = [&] {
    // A uniform in (0, 1) from 53 random bits: the same on every platform (std::exponential_distribution is not).
    const double u = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
    return -mtbf_s * std::log(u);
  };
  const double segment = tau_s + cost_s;
  const double full = std::floor(solve_s / tau_s);
  const double rest = solve_s - full * tau_s;  // the last, shorter interval (and its checkpoint), if any
  std::vector<double> walls;
  walls.reserve(static_cast<size_t>(runs));
  double failures_total = 0;
  for (int run = 0; run < runs; ++run) {
    double t = 0, done = 0;  // wall clock; full intervals completed
    double next_failure = exponential();
    bool last_done = rest <= 0;
    while (done < full || !last_done) {
      if (done < full) {
        // Every full interval that ends before the next failure completes at once.
        const double fit = std::min(full - done, std::floor((next_failure - t) / segment));
        t += fit * segment;
        done += fit;
        if (done >= full) continue;
        if (t + segment <= next_failure) {  // one that the division rounded away
          t += segment;
          ++done;
          continue;
        }
      } else if (t + rest + cost_s <= next_failure) {
        t += rest + cost_s;
        last_done = true;
        continue;
      }
      // A failure in the interval in progress: its work is lost; restart until a restart completes.
      t = next_failure;
      ++failures_total;
      while (true) {
        next_failure = t + exponential();
        if (t + restart_s <= next_failure) break;
        t = next_failure;
        ++failures_total;
      }
      t += restart_s;
    }
    walls.push_back(t);
  }
  std::vector<double> sorted = walls;
  std::sort(sorted.begin(), sorted.end());
  auto percentile = [&](double p) {
    const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
    return sorted[std::max<size_t>(rank, 1) - 1];
  };
  SimulatedRuns out;
  out.runs = runs;
  out.seed = seed;
  double sum = 0;
  for (double w : walls) sum += w;  // in run order: the mean does not depend on the sort
  out.mean_s = sum / runs;
  out.min_s = sorted.front();
  out.max_s = sorted.back();
  out.p5_s = percentile(5);
  out.p50_s = percentile(50);
  out.p95_s = percentile(95);
  out.failures_mean = failures_total / runs;
  return out;
}

}  // namespace trainsim::plan
