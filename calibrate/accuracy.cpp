#include "calibrate/accuracy.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/error.hpp"

namespace trainsim::calibrate {

double signed_error(double predicted, double measured) {
  TRAINSIM_CHECK(measured > 0, "a measured value must be positive");
  return (predicted - measured) / measured;
}

double median(std::vector<double> v) {
  TRAINSIM_CHECK(!v.empty(), "no values to take the median of");
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

ErrorSummary summarize(const std::vector<double>& signed_errors) {
  TRAINSIM_CHECK(!signed_errors.empty(), "no errors to summarize");
  ErrorSummary s;
  s.cases = signed_errors.size();
  std::vector<double> abs_errors;
  abs_errors.reserve(signed_errors.size());
  double sum = 0;
  for (size_t i = 0; i < signed_errors.size(); ++i) {
    const double a = std::abs(signed_errors[i]);
    abs_errors.push_back(a);
    sum += a;
    if (a > s.max_abs) {
      s.max_abs = a;
      s.worst = i;
    }
  }
  s.mean_abs = sum / static_cast<double>(s.cases);
  s.median_abs = median(std::move(abs_errors));
  return s;
}

}  // namespace trainsim::calibrate
