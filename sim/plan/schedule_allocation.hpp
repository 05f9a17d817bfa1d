#pragma once
// The allocation of the LP policies (docs/schedule.md, "Policies"), as Gavel formulates them: an
// allocation X gives each active job j the share of time X[j][o] it should spend on each option o
// (a pool and a GPU count). Every policy keeps
//     X >= 0,   sum_o X[j][o] <= 1 (a job runs on one option at a time),
//     sum_j sum_{o in pool k} gpus(o) X[j][o] <= GPUs of pool k,
// and optimizes its objective over the job's effective throughput thr_j(X) = sum_o T[j][o] X[j][o]
// (iterations per second). The linear programs are solved with COIN-OR CLP.

#include <cstddef>
#include <optional>
#include <vector>

#include "sim/plan/schedule_input.hpp"

namespace trainsim::plan {

struct AllocationOption {
  size_t pool = 0;
  int gpus = 0;
};

struct AllocationJob {
  std::vector<double> throughput;  // by option (AllocationProblem::options); 0: cannot run there
  double weight = 1;
  double remaining = 0;            // iterations left
  double total = 0;                // iterations in all
  double elapsed_s = 0;            // since arrival
  std::optional<double> time_to_deadline_s;  // deadline - now (may be <= 0: missed)
};

struct AllocationProblem {
  std::vector<AllocationOption> options;
  std::vector<double> pool_gpus;   // by pool
  std::vector<double> pool_price;  // USD per GPU-hour by pool (MIN_COST needs every one > 0)
  std::vector<AllocationJob> jobs;
};

// X[j][o] for the LP policies (not FIFO). The max-min objectives (LAS, GAVEL_LAS, MAKESPAN,
// FINISH_TIME_FAIRNESS) are solved in two stages: the max-min optimum t*, then, with every job held
// to at least its share of t*, the total normalized throughput maximized (so that GPUs no job's
// minimum needs are not left idle). Throws InternalError when CLP fails on a well-formed problem.
//   LAS:       maximize min_j sum_o gpus(o) X[j][o] / (w_j max_o gpus(o)) with the pools merged into
//              one (throughputs and types unseen); a job's share of a GPU count is then spread over
//              the pools that run it in proportion to their GPUs
//   GAVEL_LAS: maximize min_j thr_j(X) / (w_j max_o T[j][o])
//   MAKESPAN:  maximize min_j thr_j(X) / remaining_j         (= minimize the largest finish time)
//   FINISH_TIME_FAIRNESS: minimize max_j rho_j, rho_j = (elapsed_j + remaining_j / thr_j(X)) /
//              (n total_j / max_o T[j][o]) (the time alone on 1/n of the cluster, n active jobs),
//              by bisection on rho over feasibility LPs
//   MIN_COST:  maximize sum_j thr_j(X) / remaining_j / (cost rate of X), subject to
//              thr_j(X) >= remaining_j / time_to_deadline_j (Charnes-Cooper transform); deadlines
//              that cannot all be met are scaled down together to the largest share that can
std::vector<std::vector<double>> allocate(Policy policy, const AllocationProblem& problem);

// Counts of LPs solved by allocate() in this process (the benchmark's figure).
size_t lp_solves();

// One linear program for CLP: maximize c'x subject to row_lo <= A x <= row_hi, col_lo <= x <= col_hi.
class LinearProgram {
 public:
  size_t add_variable(double objective, double lo, double hi);
  void set_objective(size_t variable, double objective);
  // A row over (variable, coefficient) pairs.
  void add_row(const std::vector<std::pair<size_t, double>>& terms, double lo, double hi);
  // The optimal x, or std::nullopt when the program is infeasible.
  std::optional<std::vector<double>> maximize() const;
  size_t variables() const { return objective_.size(); }

 private:
  std::vector<double> objective_, col_lo_, col_hi_, row_lo_, row_hi_;
  std::vector<int> rows_, cols_;
  std::vector<double> values_;
};

}  // namespace trainsim::plan
