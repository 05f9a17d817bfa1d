#pragma once
// A Gantt-like chart: one row per item (a job), bars over time coloured by category (the pool a job
// ran on), and a thin line over each row's whole span (arrival to completion: the gaps are waits).
//
//   GanttChart g;
//   g.title = "gavel-las";
//   g.x_label = "time (hours)";
//   g.categories = {"v100", "a100", "h100"};
//   g.rows.push_back({"job-0", 0.0, 2.5, {{0.1, 1.2, 2}, {1.3, 2.5, 1}}});
//   write_chart_file("gantt.svg", render_gantt_charts({g}), "--gantt");

#include <cstddef>
#include <string>
#include <vector>

#include "sim/report/svg.hpp"

namespace trainsim::report {

struct GanttBar {
  double start = 0, end = 0;  // x values, end >= start
  size_t category = 0;        // index into GanttChart::categories (its colour)
};

struct GanttRow {
  std::string label;          // tooltip of the row's span
  double span_start = 0, span_end = 0;
  std::vector<GanttBar> bars;
};

struct GanttChart {
  std::string title;
  std::string x_label;        // with its unit
  std::vector<std::string> categories;
  std::vector<GanttRow> rows; // top to bottom
};

// The charts stacked vertically, on one x scale (from 0 to the largest span end), rows of 1 to 12
// pixels as the row count allows.
SvgDocument render_gantt_charts(const std::vector<GanttChart>& charts);

}  // namespace trainsim::report
