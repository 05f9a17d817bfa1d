#pragma once
// Chart (a): ranked horizontal bars, one per configuration, each split into stacked parts (the time
// breakdown: compute, exposed communication per axis, pipeline bubble, optimizer, ...). Used by
// `run --html` (one bar) and meant for `search` and `compare` (one bar per candidate):
//
//   BarChart chart;
//   chart.title = "GPT-3 175B on 1,024 A100: where the iteration goes";
//   chart.value_label = "time per iteration (s)";
//   chart.parts = {"compute", "exposed data comm", "pipeline bubble"};
//   chart.bars = {{"TP8 PP8 DP16", {10.1, 0.4, 1.2}}, {"TP8 PP16 DP8", {10.1, 0.2, 2.3}}};
//   write_chart_file("ranked.svg", render_bar_chart(chart), "--plot");
//
// sim/cli/report_charts.hpp builds this chart from report JSON (`breakdown_bar_chart`).
//
// Layout: title on top, one row per bar with its label on the left and its total on the right, the
// value axis (ticks, unit) below, the legend (parts that are non-zero in some bar) at the bottom.
// SVG classes for tests and styling: "bar-label" (one text per bar), "segment" (one rect per
// non-zero part of a bar), "legend-item".

#include <string>
#include <vector>

#include "sim/report/svg.hpp"

namespace trainsim::report {

struct Bar {
  std::string label;           // e.g. the configuration, "TP8 PP8 DP16"
  std::vector<double> values;  // one per BarChart::parts, >= 0 (negative values count as 0)
};

struct BarChart {
  std::string title;
  std::string value_label;         // the value axis title, with its unit: "time per iteration (s)"
  std::vector<std::string> parts;  // stacked parts, in drawing order (left to right) and legend order
  std::vector<Bar> bars;
  bool ranked = true;              // sort by total, smallest (best) on top; ties keep their order
  std::string unit_suffix;         // appended to the total printed after each bar, e.g. " s"
};

// REQUIRES: every bar has parts.size() values.
SvgDocument render_bar_chart(const BarChart& chart);

}  // namespace trainsim::report
