#pragma once
// A minimal SVG 1.1 writer: the elements the charts of sim/report draw (rectangles, lines,
// polylines, circles, text), each with an optional class and tooltip, with every attribute and text
// escaped. No layout logic: the charts compute coordinates (pixels, origin top-left, y down).
//
//   SvgDocument svg(640, 400);
//   svg.rect(10, 10, 100, 20, "#4e79a7", "bar", "compute: 1.2 s");
//   svg.text(10, 50, "tokens/s <per GPU>", text_style("start"));
//   std::string file = svg.str(true);     // standalone file, with the XML declaration
//   std::string inline_svg = svg.str();   // to embed in HTML
//
// Numbers are written with at most two decimals, so the same chart gives the same bytes.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainsim::report {

// Escapes &, <, >, " and ' for XML text and attribute values. Control characters other than tab,
// newline and carriage return (not allowed in XML 1.0) become spaces.
std::string xml_escape(std::string_view text);

struct TextStyle {
  std::string anchor = "middle";  // start | middle | end
  double size = 12;               // font size, px
  bool bold = false;
  double rotate = 0;              // degrees, around the anchor point
  std::string css_class;
  std::string fill = "#222";
};

inline TextStyle text_style(std::string anchor, double size = 12, std::string css_class = "", bool bold = false,
                            double rotate = 0) {
  TextStyle s;
  s.anchor = std::move(anchor);
  s.size = size;
  s.css_class = std::move(css_class);
  s.bold = bold;
  s.rotate = rotate;
  return s;
}

class SvgDocument {
 public:
  SvgDocument(double width, double height);

  // `tooltip` becomes a <title> child (shown on hover), `css_class` the class attribute; both optional.
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& css_class = "",
            const std::string& tooltip = "");
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            const std::string& dash = "");
  // A polyline through (xs[i], ys[i]). REQUIRES: xs.size() == ys.size().
  void polyline(const std::vector<double>& xs, const std::vector<double>& ys, const std::string& stroke,
                double width = 2, const std::string& dash = "");
  void circle(double cx, double cy, double r, const std::string& fill, const std::string& css_class = "",
              const std::string& tooltip = "");
  void text(double x, double y, std::string_view content, const TextStyle& style = {});

  double width() const { return width_; }
  double height() const { return height_; }

  // The document. `standalone`: prefixed with the XML declaration (an .svg file); without it, an
  // <svg> element ready to be inlined in HTML.
  std::string str(bool standalone = false) const;

 private:
  double width_;
  double height_;
  std::string body_;
};

}  // namespace trainsim::report
