#include "sim/report/line_chart.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "sim/core/error.hpp"
#include "sim/report/axis.hpp"
#include "sim/report/palette.hpp"

namespace trainsim::report {
namespace {

constexpr double WIDTH = 760;
constexpr double PANEL_H = 340;
constexpr double LEFT = 84;
constexpr double RIGHT = WIDTH - 30;
constexpr double CHAR_PX = 7;
constexpr double LEGEND_ROW = 18;

Scale x_scale(const LineChart& c) {
  if (!c.x_categories.empty()) return category_scale(c.x_categories);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const LineSeries& s : c.series) {
    for (double v : s.x) {
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (!std::isfinite(lo)) return linear_scale(0, 1);
  if (c.log2_x) {
    TRAINSIM_CHECK(lo > 0, "a log2 x axis needs positive values");
    return log2_scale(lo, hi);
  }
  return linear_scale(lo, hi, 6, false);
}

Scale y_scale(const LineChart& c) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const LineSeries& s : c.series) {
    for (double v : s.y) {
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (!std::isfinite(lo)) return linear_scale(0, 1);
  return linear_scale(lo, hi, 5, c.y_from_zero);
}

// Rows the legend needs: the panel grows by LEGEND_ROW for each after the first.
int legend_rows(const LineChart& c) {
  double lx = LEFT;
  int rows = 1;
  for (const LineSeries& s : c.series) {
    const double w = 45 + CHAR_PX * static_cast<double>(s.name.size());
    if (lx + w > RIGHT && lx > LEFT) {
      lx = LEFT;
      ++rows;
    }
    lx += w;
  }
  return rows;
}

double panel_height(const LineChart& c) { return PANEL_H + LEGEND_ROW * (legend_rows(c) - 1); }

void draw_panel(SvgDocument& svg, const LineChart& c, double top) {
  for (const LineSeries& s : c.series) TRAINSIM_CHECK(s.x.size() == s.y.size(), "series x and y must pair up");
  svg.text(WIDTH / 2, top + 22, c.title, text_style("middle", 15, "panel-title", true, 0));

  // Legend rows under the title, wrapped at the panel's width.
  double lx = LEFT, ly = top + 40;
  for (size_t i = 0; i < c.series.size(); ++i) {
    const double w = 45 + CHAR_PX * static_cast<double>(c.series[i].name.size());
    if (lx + w > RIGHT && lx > LEFT) {
      lx = LEFT;
      ly += LEGEND_ROW;
    }
    const std::string& color = palette_color(i);
    svg.line(lx, ly, lx + 22, ly, color, 2.5, c.series[i].dashed ? "6,4" : "");
    svg.text(lx + 27, ly + 4, c.series[i].name, text_style("start", 12, "legend-item"));
    lx += w;
  }

  const double plot_top = ly + 16, plot_bottom = top + panel_height(c) - 56;
  const Scale xs = x_scale(c), ys = y_scale(c);
  for (const Tick& t : ys.ticks) {
    const double py = ys.to_pixel(t.value, plot_bottom, plot_top);
    svg.line(LEFT, py, RIGHT, py, "#e4e4e4");
    svg.line(LEFT - 5, py, LEFT, py, "#444");
    svg.text(LEFT - 8, py + 4, t.label, text_style("end", 11, ""));
  }
  for (const Tick& t : xs.ticks) {
    const double px = xs.to_pixel(t.value, LEFT, RIGHT);
    svg.line(px, plot_bottom, px, plot_bottom + 5, "#444");
    svg.text(px, plot_bottom + 19, t.label, text_style("middle", 11, ""));
  }
  svg.line(LEFT, plot_bottom, RIGHT, plot_bottom, "#444");
  svg.line(LEFT, plot_top, LEFT, plot_bottom, "#444");
  svg.text((LEFT + RIGHT) / 2, plot_bottom + 42, c.x_label + (c.log2_x ? " (log2 scale)" : ""),
           text_style("middle", 12, "axis-title"));
  svg.text(20, (plot_top + plot_bottom) / 2, c.y_label, text_style("middle", 12, "axis-title", false, -90));

  for (size_t i = 0; i < c.series.size(); ++i) {
    const LineSeries& s = c.series[i];
    const std::string& color = palette_color(i);
    std::vector<double> px, py;
    for (size_t k = 0; k < s.x.size(); ++k) {
      if (!std::isfinite(s.x[k]) || !std::isfinite(s.y[k])) continue;
      px.push_back(xs.to_pixel(s.x[k], LEFT, RIGHT));
      py.push_back(ys.to_pixel(s.y[k], plot_bottom, plot_top));
    }
    if (px.size() > 1) svg.polyline(px, py, color, s.dashed ? 1.5 : 2.5, s.dashed ? "6,4" : "");
    if (s.dashed) continue;
    for (size_t k = 0, j = 0; k < s.x.size(); ++k) {
      if (!std::isfinite(s.x[k]) || !std::isfinite(s.y[k])) continue;
      const std::string x_text = c.x_categories.empty() ? format_tick(s.x[k])
                                                        : c.x_categories[static_cast<size_t>(s.x[k])];
      svg.circle(px[j], py[j], 4, color, "point", fmt::format("{}: {} = {}, {} = {}", s.name, c.x_label, x_text,
                                                              c.y_label, format_tick(s.y[k])));
      ++j;
    }
  }
}

}  // namespace

SvgDocument render_line_charts(const std::vector<LineChart>& panels) {
  TRAINSIM_CHECK(!panels.empty(), "a line chart needs at least one panel");
  double height = 0;
  for (const LineChart& c : panels) height += panel_height(c);
  SvgDocument svg(WIDTH, height);
  double top = 0;
  for (const LineChart& c : panels) {
    draw_panel(svg, c, top);
    top += panel_height(c);
  }
  return svg;
}

}  // namespace trainsim::report
