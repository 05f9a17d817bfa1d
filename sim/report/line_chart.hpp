#pragma once
// Chart (b): line charts for scaling curves: x = GPUs or a swept value (log2 spacing for geometric
// ranges, categories for non-numeric values), y = throughput, MFU, efficiency... One or more
// panels stacked vertically in one picture (e.g. tokens/s above, MFU and efficiency below). Used by
// `sweep --plot`; meant for `compare --vary` too:
//
//   LineChart tput;
//   tput.title = "throughput";  tput.x_label = "GPUs";  tput.y_label = "tokens/s";
//   tput.log2_x = true;
//   tput.series = {{"measured", {128, 256, 512}, {1.1e5, 2.1e5, 3.9e5}}};
//   write_chart_file("scaling.png", render_line_charts({tput}), "--plot");
//
// Each panel: title, legend row (one item per series), plot area with grid lines at the y ticks,
// x and y axes with tick labels and titles (units in the titles). SVG classes: "point" (one circle
// per data point), "legend-item", "panel-title".

#include <string>
#include <vector>

#include "sim/report/svg.hpp"

namespace trainsim::report {

struct LineSeries {
  std::string name;
  std::vector<double> x;  // data values, or indices into LineChart::x_categories
  std::vector<double> y;  // same size as x; non-finite values are skipped
  bool dashed = false;    // e.g. an "ideal" reference line; drawn without point markers
};

struct LineChart {
  std::string title;
  std::string x_label;                    // with its unit: "GPUs", "micro-batch (samples)"
  std::string y_label;                    // with its unit: "tokens/s", "%"
  std::vector<std::string> x_categories;  // non-empty: x values are indices 0..n-1 into these labels
  bool log2_x = false;                    // log2 spacing (every x > 0)
  bool y_from_zero = true;
  std::vector<LineSeries> series;
};

// One picture with the panels stacked top to bottom. REQUIRES: at least one panel; x and y of each
// series have the same size; with log2_x every x > 0.
SvgDocument render_line_charts(const std::vector<LineChart>& panels);

}  // namespace trainsim::report
