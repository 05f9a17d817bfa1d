#pragma once
// `trainsim run --html FILE`: one self-contained HTML page (inline CSS and inline SVG; no script,
// font, image or style sheet loaded from anywhere) with the headline figures, the time breakdown
// as a stacked bar and a table, the memory breakdown, the most utilized links when the report has
// them (SimGrid backend), and the timeline file's name when one was written.

#include <string>

#include "sim/core/json_reader.hpp"
#include "sim/plan/compare.hpp"
#include "sim/report/bar_chart.hpp"

namespace trainsim::cli {

// REQUIRES: `report` is a "trainsim.report/1" document from report_json. `timeline_file`: the
// --timeline path, or empty.
std::string html_report(const core::Json& report, const std::string& timeline_file);

// `trainsim compare --html FILE`: one self-contained page with compare's table (every figure the
// table shows, each configuration's difference from the reference, differing rows marked), its
// accuracy lines, the configurations that cannot run and why, and `charts` (inline SVG) below.
// `title` heads the page ("iteration time by parallelism.tensor").
std::string html_compare(const plan::CompareResult& result, const std::string& title,
                         const std::vector<report::BarChart>& charts);

}  // namespace trainsim::cli
