#pragma once
// Predicted-vs-measured statistics: the signed relative error of each case and the summary that
// `trainsim validate` prints (and that calibration reports later reuse).

#include <string>
#include <vector>

namespace trainsim::calibrate {

// Signed relative error of a prediction: (predicted - measured) / measured. REQUIRES measured > 0.
double signed_error(double predicted, double measured);

struct ErrorSummary {
  size_t cases = 0;
  double median_abs = 0;  // median of |signed error|
  double mean_abs = 0;
  double max_abs = 0;
  size_t worst = 0;        // index of the case with the largest |error|
};

// The median of `v` (of an even count, the mean of the two middle values). REQUIRES: !v.empty().
double median(std::vector<double> v);

// REQUIRES: !errors.empty(). The median of an even count is the mean of the two middle values.
ErrorSummary summarize(const std::vector<double>& signed_errors);

}  // namespace trainsim::calibrate
