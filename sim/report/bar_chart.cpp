#include "sim/report/bar_chart.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

#include "sim/core/error.hpp"
#include "sim/report/axis.hpp"
#include "sim/report/palette.hpp"

namespace trainsim::report {
namespace {

constexpr double WIDTH = 860;
constexpr double ROW = 26;
constexpr double BAR = 18;
constexpr double CHAR_PX = 7;  // rough width of a 12 px character, for label space
constexpr double TOP = 44;

double total(const Bar& b) {
  return std::accumulate(b.values.begin(), b.values.end(), 0.0, [](double s, double v) { return s + std::max(v, 0.0); });
}

}  // namespace

SvgDocument render_bar_chart(const BarChart& chart) {
  std::vector<Bar> bars = chart.bars;
  for (const Bar& b : bars) TRAINSIM_CHECK(b.values.size() == chart.parts.size(), "a bar needs one value per part");
  if (chart.ranked) {
    std::stable_sort(bars.begin(), bars.end(), [](const Bar& a, const Bar& b) { return total(a) < total(b); });
  }
  size_t label_chars = 4;
  for (const Bar& b : bars) label_chars = std::max(label_chars, b.label.size());
  // Long labels (search layouts) widen the picture rather than being cut.
  const double left = 40.0 + CHAR_PX * static_cast<double>(label_chars);
  const double width = std::max(WIDTH, left + 540);
  const double right = width - 90;
  double max_total = 0;
  for (const Bar& b : bars) max_total = std::max(max_total, total(b));
  const Scale x = linear_scale(0, max_total > 0 ? max_total : 1, 6);

  // Legend: parts non-zero in some bar, laid out in rows.
  std::vector<size_t> shown;
  for (size_t p = 0; p < chart.parts.size(); ++p) {
    if (std::any_of(bars.begin(), bars.end(), [p](const Bar& b) { return b.values[p] > 0; })) shown.push_back(p);
  }
  std::vector<std::pair<double, double>> legend_pos;  // x, row
  double lx = 20;
  int lrow = 0;
  for (size_t p : shown) {
    const double w = 30 + CHAR_PX * static_cast<double>(chart.parts[p].size());
    if (lx + w > width - 20 && lx > 20) {
      lx = 20;
      ++lrow;
    }
    legend_pos.emplace_back(lx, lrow);
    lx += w;
  }

  const double plot_h = ROW * static_cast<double>(std::max<size_t>(bars.size(), 1));
  const double axis_y = TOP + plot_h;
  const double legend_y = axis_y + 62;
  const double height = legend_y + 22.0 * (shown.empty() ? 0 : lrow + 1) + 10;
  SvgDocument svg(width, height);
  svg.text(width / 2, 24, chart.title, text_style("middle", 15, "chart-title", true, 0));

  for (const Tick& t : x.ticks) {
    const double px = x.to_pixel(t.value, left, right);
    svg.line(px, TOP - 4, px, axis_y, "#e4e4e4");
    svg.line(px, axis_y, px, axis_y + 5, "#444");
    svg.text(px, axis_y + 18, t.label, text_style("middle", 11, ""));
  }
  svg.line(left, axis_y, right, axis_y, "#444");
  svg.line(left, TOP - 4, left, axis_y, "#444");
  svg.text((left + right) / 2, axis_y + 40, chart.value_label, text_style("middle", 12, "axis-title"));

  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = TOP + ROW * static_cast<double>(i) + (ROW - BAR) / 2;
    svg.text(left - 8, y + BAR - 4, b.label, text_style("end", 12, "bar-label"));
    double start = 0;
    for (size_t p = 0; p < b.values.size(); ++p) {
      const double v = std::max(b.values[p], 0.0);
      if (v <= 0) continue;
      const double x0 = x.to_pixel(start, left, right);
      const double x1 = x.to_pixel(start + v, left, right);
      svg.rect(x0, y, std::max(x1 - x0, 0.5), BAR, palette_color(p), "segment",
               fmt::format("{}: {}: {}{}", b.label, chart.parts[p], format_tick(v), chart.unit_suffix));
      start += v;
    }
    svg.text(x.to_pixel(start, left, right) + 6, y + BAR - 4, format_tick(start) + chart.unit_suffix,
             text_style("start", 11, "bar-total"));
  }

  for (size_t k = 0; k < shown.size(); ++k) {
    const auto [px, row] = legend_pos[k];
    const double py = legend_y + 22 * row;
    svg.rect(px, py - 11, 14, 14, palette_color(shown[k]), "legend-item");
    svg.text(px + 19, py, chart.parts[shown[k]], text_style("start", 12, ""));
  }
  return svg;
}

}  // namespace trainsim::report
