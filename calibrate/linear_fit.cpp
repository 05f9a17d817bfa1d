#include "calibrate/linear_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "sim/core/error.hpp"

namespace trainsim::calibrate {

LinearFit fit_linear(const std::vector<std::vector<double>>& x, const std::vector<double>& times) {
  TRAINSIM_CHECK(x.size() == times.size(), "one row of x per time");
  LinearFit fit;
  fit.samples = times.size();
  if (x.empty()) return fit;
  const Eigen::Index rows = static_cast<Eigen::Index>(x.size());
  const Eigen::Index cols = static_cast<Eigen::Index>(x.front().size());
  TRAINSIM_CHECK(cols >= 1, "at least one unknown");
  if (rows < cols) return fit;

  // Each column is scaled to unit norm before solving: the unknowns differ by many orders of
  // magnitude (seconds per step vs seconds per byte), which would otherwise defeat the rank test.
  Eigen::MatrixXd a(rows, cols);
  Eigen::VectorXd b(rows);
  for (Eigen::Index i = 0; i < rows; ++i) {
    const size_t r = static_cast<size_t>(i);
    TRAINSIM_CHECK(x[r].size() == static_cast<size_t>(cols), "rows of equal length");
    TRAINSIM_CHECK(times[r] > 0, "times are positive");
    for (Eigen::Index j = 0; j < cols; ++j) a(i, j) = x[r][static_cast<size_t>(j)] / times[r];
    b(i) = 1.0;
  }
  Eigen::VectorXd scale = a.colwise().norm().transpose();
  for (Eigen::Index j = 0; j < cols; ++j) {
    if (scale(j) == 0) return fit;
    a.col(j) /= scale(j);
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  qr.setThreshold(1e-10);
  if (qr.rank() < cols) return fit;
  const Eigen::VectorXd c = qr.solve(b).cwiseQuotient(scale);

  fit.solved = true;
  fit.coefficients.assign(c.data(), c.data() + cols);
  double mean = 0;
  for (double t : times) mean += t;
  mean /= static_cast<double>(rows);
  double ss_res = 0;
  double ss_tot = 0;
  double rel = 0;
  for (size_t r = 0; r < times.size(); ++r) {
    double predicted = 0;
    for (size_t j = 0; j < x[r].size(); ++j) predicted += x[r][j] * fit.coefficients[j];
    ss_res += (predicted - times[r]) * (predicted - times[r]);
    ss_tot += (times[r] - mean) * (times[r] - mean);
    rel += std::pow((predicted - times[r]) / times[r], 2);
    fit.max_relative_residual = std::max(fit.max_relative_residual, std::abs(predicted - times[r]) / times[r]);
  }
  fit.r_squared = ss_tot > 0 ? 1.0 - ss_res / ss_tot : (ss_res == 0 ? 1.0 : 0.0);
  fit.rms_relative_residual = std::sqrt(rel / static_cast<double>(rows));
  return fit;
}

}  // namespace trainsim::calibrate
