#include "sim/report/axis.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::report {

double Scale::to_pixel(double value, double pixel_lo, double pixel_hi) const {
  double a = lo, b = hi, v = value;
  if (log2) {
    a = std::log2(lo);
    b = std::log2(hi);
    v = std::log2(std::max(value, lo * 1e-6));
  }
  return pixel_lo + (v - a) / (b - a) * (pixel_hi - pixel_lo);
}

Scale linear_scale(double min, double max, int target, bool include_zero) {
  TRAINSIM_CHECK(std::isfinite(min) && std::isfinite(max) && min <= max && target >= 1, "bad scale range");
  if (include_zero) {
    min = std::min(min, 0.0);
    max = std::max(max, 0.0);
  }
  if (max == min) {
    const double pad = min == 0 ? 1 : std::abs(min) * 0.1;
    min -= include_zero && min == 0 ? 0 : pad;
    max += pad;
  }
  const double raw = (max - min) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  Scale s;
  s.lo = std::floor(min / step + 1e-9) * step;
  s.hi = std::ceil(max / step - 1e-9) * step;
  const long n = std::lround((s.hi - s.lo) / step);
  for (long i = 0; i <= n; ++i) {
    const double v = s.lo + static_cast<double>(i) * step;
    const double clean = std::abs(v) < step * 1e-9 ? 0.0 : v;
    s.ticks.push_back({clean, format_tick(clean)});
  }
  return s;
}

Scale log2_scale(double min, double max) {
  TRAINSIM_CHECK(min > 0 && min <= max, "a log2 scale needs 0 < min <= max");
  Scale s;
  s.log2 = true;
  int e0 = static_cast<int>(std::floor(std::log2(min) + 1e-9));
  int e1 = static_cast<int>(std::ceil(std::log2(max) - 1e-9));
  if (e1 == e0) ++e1;
  const int stride = e1 - e0 > 10 ? 2 : 1;
  s.lo = std::exp2(e0);
  s.hi = std::exp2(e1);
  for (int e = e0; e <= e1; e += stride) s.ticks.push_back({std::exp2(e), format_tick(std::exp2(e))});
  return s;
}

Scale category_scale(const std::vector<std::string>& labels) {
  Scale s;
  s.lo = -0.5;
  s.hi = static_cast<double>(std::max<size_t>(labels.size(), 1)) - 0.5;
  for (size_t i = 0; i < labels.size(); ++i) s.ticks.push_back({static_cast<double>(i), labels[i]});
  return s;
}

std::string format_tick(double value) {
  const double a = std::abs(value);
  auto trim = [](std::string t) {
    if (t.find('.') != std::string::npos) {
      while (t.back() == '0') t.pop_back();
      if (t.back() == '.') t.pop_back();
    }
    return t;
  };
  if (a >= 1e9) return trim(fmt::format("{:.2f}", value / 1e9)) + "G";
  if (a >= 1e6) return trim(fmt::format("{:.2f}", value / 1e6)) + "M";
  if (a < 1e5 && value == std::round(value)) return fmt::format("{:.0f}", value);  // GPU counts: 16384
  if (a >= 1e4) return trim(fmt::format("{:.2f}", value / 1e3)) + "k";
  if (a >= 1 || a == 0) return trim(fmt::format("{:.2f}", value));
  return trim(fmt::format("{:.3g}", value));
}

}  // namespace trainsim::report
