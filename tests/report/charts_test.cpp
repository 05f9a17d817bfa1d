#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

#include "sim/core/error.hpp"
#include "sim/report/bar_chart.hpp"
#include "sim/report/chart_file.hpp"
#include "sim/report/line_chart.hpp"

namespace trainsim::report {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

BarChart three_bars() {
  BarChart c;
  c.title = "ranked";
  c.value_label = "time per iteration (s)";
  c.unit_suffix = " s";
  c.parts = {"compute", "exposed data comm", "pipeline bubble", "unused"};
  c.bars = {{"slow", {10, 2, 3, 0}}, {"fast", {10, 0, 1, 0}}, {"mid", {10, 1, 2, 0}}};
  return c;
}

TEST(BarChart, OneLabelPerBarRankedFastestFirst) {
  const std::string s = render_bar_chart(three_bars()).str();
  EXPECT_EQ(count(s, "class=\"bar-label\""), 3u);
  EXPECT_EQ(count(s, "class=\"segment\""), 8u);  // the zero parts are not drawn
  EXPECT_LT(s.find(">fast</text>"), s.find(">mid</text>"));
  EXPECT_LT(s.find(">mid</text>"), s.find(">slow</text>"));
  EXPECT_EQ(count(s, "class=\"legend-item\""), 3u);  // "unused" is zero everywhere: no legend entry
  EXPECT_NE(s.find(">15 s</text>"), std::string::npos);  // the slow bar's total
}

TEST(BarChart, UnrankedKeepsOrder) {
  BarChart c = three_bars();
  c.ranked = false;
  const std::string s = render_bar_chart(c).str();
  EXPECT_LT(s.find(">slow</text>"), s.find(">fast</text>"));
}

TEST(LineChart, OnePointPerFiniteValueAndOneCurvePerSeries) {
  LineChart c;
  c.title = "throughput";
  c.x_label = "GPUs";
  c.y_label = "tokens/s";
  c.log2_x = true;
  c.series = {{"a", {16, 32, 64}, {1, 2, 3.5}}, {"b", {16, 32, 64}, {1, std::nan(""), 3}}, {"ideal", {16, 64}, {1, 4}, true}};
  const std::string s = render_line_charts({c, c}).str();
  EXPECT_EQ(count(s, "class=\"point\""), 2u * (3 + 2));  // two panels; NaN skipped; dashed has no markers
  EXPECT_EQ(count(s, "<polyline"), 2u * 3);
  EXPECT_NE(s.find(">GPUs (log2 scale)</text>"), std::string::npos);
  EXPECT_NE(s.find("stroke-dasharray=\"6,4\""), std::string::npos);
}

TEST(LineChart, Categories) {
  LineChart c;
  c.x_label = "recompute";
  c.y_label = "%";
  c.x_categories = {"none", "selective", "full"};
  c.series = {{"MFU", {0, 1, 2}, {40, 45, 38}}};
  const std::string s = render_line_charts({c}).str();
  EXPECT_NE(s.find(">selective</text>"), std::string::npos);
  EXPECT_NE(s.find("recompute = full"), std::string::npos);
}

TEST(ChartFile, WritesSvgAndRefusesUnknownExtensions) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "trainsim_chart_file_test";
  std::filesystem::create_directories(dir);
  const SvgDocument svg = render_bar_chart(three_bars());
  write_chart_file((dir / "a.svg").string(), svg, "--plot");
  std::ifstream f(dir / "a.svg");
  std::string first;
  std::getline(f, first);
  EXPECT_EQ(first, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
  try {
    write_chart_file((dir / "a.pdf").string(), svg, "--plot");
    FAIL() << "a .pdf must be refused";
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.problems()[0].file, "--plot");
    EXPECT_NE(e.problems()[0].message.find("ending in .svg or .png"), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST(ChartFile, PngWithoutConverterNamesThePackage) {
  const std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", "/nonexistent", 1);
  const std::string out = (std::filesystem::temp_directory_path() / "trainsim_no_converter.png").string();
  try {
    write_chart_file(out, render_bar_chart(three_bars()), "--plot");
    setenv("PATH", saved.c_str(), 1);
    FAIL() << "expected an InputError";
  } catch (const core::InputError& e) {
    setenv("PATH", saved.c_str(), 1);
    EXPECT_NE(e.problems()[0].message.find("librsvg2-bin"), std::string::npos) << e.problems()[0].message;
  }
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp.svg"));
}

}  // namespace
}  // namespace trainsim::report
