#pragma once
// Linear least squares for calibration: time = x · c, solved with Eigen (column-pivoting
// Householder QR) on rows weighted by 1 / measured time, so that a 10 us kernel counts as much as a
// 10 ms one: the fit minimizes the sum of squared *relative* residuals. Every model calibration
// fits is linear in its unknowns once written as a time (profile_fit.hpp gives each model), so no
// iterative solver is needed: exact data gives exact parameters, and there is no starting point or
// convergence to tune.
//
// Example:
//   LinearFit f = fit_linear({{1, 1e9}, {1, 4e9}, {1, 16e9}}, {1.1e-3, 2.3e-3, 7.1e-3});
//   if (f.solved) use(f.coefficients[1]);

#include <cstddef>
#include <vector>

namespace trainsim::calibrate {

struct LinearFit {
  bool solved = false;              // false: fewer rows than unknowns, or unknowns not identifiable
  std::vector<double> coefficients; // one per column of x (empty unless solved)
  double r_squared = 0;             // 1 - SS_res / SS_tot of the times (1 when SS_tot is 0 and the fit is exact)
  double rms_relative_residual = 0; // sqrt(mean(((predicted - measured) / measured)^2))
  double max_relative_residual = 0; // max |predicted - measured| / measured: the spread's worst sample
  size_t samples = 0;
};

// REQUIRES: x.size() == times.size(), every row of x has the same length >= 1, every time > 0.
// The columns must be independent on the data: otherwise solved is false (e.g. all samples of one
// size, when both a fixed and a per-byte cost are asked for).
LinearFit fit_linear(const std::vector<std::vector<double>>& x, const std::vector<double>& times);

}  // namespace trainsim::calibrate
