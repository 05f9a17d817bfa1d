#pragma once
// Axis scales for the charts: a data range, how it maps onto pixels, and its ticks with labels.
//
//   Scale y = linear_scale(0, 3.7e5);      // ticks 0, 100k, 200k, 300k, 400k
//   double py = y.to_pixel(2e5, 300, 20);  // bottom pixel 300, top pixel 20
//   Scale x = log2_scale(16, 512);         // ticks 16, 32, ..., 512, log2 spacing

#include <string>
#include <vector>

namespace trainsim::report {

struct Tick {
  double value = 0;
  std::string label;
};

struct Scale {
  double lo = 0;       // data value at the first pixel end
  double hi = 1;       // data value at the second pixel end; hi > lo
  bool log2 = false;   // log2 spacing (lo > 0)
  std::vector<Tick> ticks;

  // Maps `value` onto [pixel_lo, pixel_hi] (linearly, or linearly in log2(value)).
  double to_pixel(double value, double pixel_lo, double pixel_hi) const;
};

// "Nice" ticks (steps of 1, 2 or 5 times a power of ten) covering [min, max], about `target` of
// them; the range is widened to whole steps. With include_zero, 0 is inside the range (bars,
// throughput). A degenerate range (min == max) is widened around the value.
Scale linear_scale(double min, double max, int target = 5, bool include_zero = true);

// Powers of two covering [min, max] (every second one when there would be more than 10).
// REQUIRES: 0 < min <= max.
Scale log2_scale(double min, double max);

// Ticks at 0..n-1 labelled with `labels` (categorical values such as "full", "selective"), with half
// a step of margin on each side.
Scale category_scale(const std::vector<std::string>& labels);

// Compact tick labels: "0", "0.25", "16", "1024", "250k", "1.5M", "2G".
std::string format_tick(double value);

}  // namespace trainsim::report
