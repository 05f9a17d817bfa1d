#include "sim/report/gantt_chart.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/report/axis.hpp"
#include "sim/report/palette.hpp"

namespace trainsim::report {

namespace {

constexpr double WIDTH = 760, LEFT = 60, RIGHT = 20, TITLE = 46, AXIS = 44, PLOT_ROWS_PX = 360;

double row_height(size_t rows) { return std::clamp(PLOT_ROWS_PX / static_cast<double>(std::max<size_t>(rows, 1)), 1.0, 12.0); }

double chart_height(const GanttChart& c) { return TITLE + row_height(c.rows.size()) * static_cast<double>(c.rows.size()) + AXIS; }

void draw(SvgDocument& svg, const GanttChart& c, const Scale& x, double top) {
  svg.text(WIDTH / 2, top + 18, c.title, text_style("middle", 15, "", true));
  double lx = LEFT;
  for (size_t k = 0; k < c.categories.size(); ++k) {
    svg.rect(lx, top + 28, 12, 10, palette_color(k));
    svg.text(lx + 16, top + 37, c.categories[k], text_style("start", 12));
    lx += 24 + 8 * static_cast<double>(c.categories[k].size());
  }
  const double h = row_height(c.rows.size());
  const double y0 = top + TITLE;
  const auto px = [&](double v) { return x.to_pixel(v, LEFT, WIDTH - RIGHT); };
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const GanttRow& r = c.rows[i];
    const double y = y0 + h * static_cast<double>(i);
    svg.line(px(r.span_start), y + h / 2, px(r.span_end), y + h / 2, "#bbb", std::min(1.0, h / 2));
    for (const GanttBar& b : r.bars) {
      svg.rect(px(b.start), y, std::max(0.5, px(b.end) - px(b.start)), std::max(0.8, h * 0.9), palette_color(b.category),
               "bar", fmt::format("{}: {:.2f} - {:.2f} on {}", r.label, b.start, b.end, c.categories.at(b.category)));
    }
  }
  const double axis_y = y0 + h * static_cast<double>(c.rows.size());
  svg.line(LEFT, axis_y, WIDTH - RIGHT, axis_y, "#444");
  for (const Tick& t : x.ticks) {
    svg.line(px(t.value), axis_y, px(t.value), axis_y + 4, "#444");
    svg.text(px(t.value), axis_y + 16, t.label, text_style("middle", 11));
  }
  svg.text((LEFT + WIDTH - RIGHT) / 2, axis_y + 34, c.x_label, text_style("middle", 12));
  svg.text(LEFT - 8, y0 + 10, "jobs", text_style("end", 11));
}

}  // namespace

SvgDocument render_gantt_charts(const std::vector<GanttChart>& charts) {
  double end = 0, height = 0;
  for (const GanttChart& c : charts) {
    height += chart_height(c);
    for (const GanttRow& r : c.rows) end = std::max(end, r.span_end);
  }
  const Scale x = linear_scale(0, end > 0 ? end : 1);
  SvgDocument svg(WIDTH, std::max(height, 1.0));
  double top = 0;
  for (const GanttChart& c : charts) {
    draw(svg, c, x, top);
    top += chart_height(c);
  }
  return svg;
}

}  // namespace trainsim::report
