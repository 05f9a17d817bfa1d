#include "sim/report/svg.hpp"

#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::report {
namespace {

// Two decimals, trailing zeros dropped: "12", "12.5", "-0.25".
std::string num(double v) {
  std::string s = fmt::format("{:.2f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

std::string optional_attr(std::string_view name, const std::string& value) {
  return value.empty() ? std::string() : fmt::format(R"( {}="{}")", name, xml_escape(value));
}

// Closes an element, with a <title> child when there is a tooltip.
std::string close(const std::string& tag, const std::string& tooltip) {
  if (tooltip.empty()) return "/>\n";
  return fmt::format("><title>{}</title></{}>\n", xml_escape(tooltip), tag);
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

SvgDocument::SvgDocument(double width, double height) : width_(width), height_(height) {
  TRAINSIM_CHECK(width > 0 && height > 0, "an SVG document needs a positive size");
  // An opaque background: PNG converters otherwise render a transparent canvas.
  rect(0, 0, width, height, "#ffffff", "background");
}

void SvgDocument::rect(double x, double y, double w, double h, const std::string& fill, const std::string& css_class,
                       const std::string& tooltip) {
  body_ += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="{}"{})", num(x), num(y), num(w), num(h),
                       xml_escape(fill), optional_attr("class", css_class));
  body_ += close("rect", tooltip);
}

void SvgDocument::line(double x1, double y1, double x2, double y2, const std::string& stroke, double width,
                       const std::string& dash) {
  body_ += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="{}"{}/>)", num(x1),
                       num(y1), num(x2), num(y2), xml_escape(stroke), num(width),
                       optional_attr("stroke-dasharray", dash));
  body_ += '\n';
}

void SvgDocument::polyline(const std::vector<double>& xs, const std::vector<double>& ys, const std::string& stroke,
                           double width, const std::string& dash) {
  TRAINSIM_CHECK(xs.size() == ys.size(), "polyline coordinates must pair up");
  std::string points;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i > 0) points += ' ';
    points += num(xs[i]) + "," + num(ys[i]);
  }
  body_ += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="{}"{}/>)", points,
                       xml_escape(stroke), num(width), optional_attr("stroke-dasharray", dash));
  body_ += '\n';
}

void SvgDocument::circle(double cx, double cy, double r, const std::string& fill, const std::string& css_class,
                         const std::string& tooltip) {
  body_ += fmt::format(R"(<circle cx="{}" cy="{}" r="{}" fill="{}"{})", num(cx), num(cy), num(r), xml_escape(fill),
                       optional_attr("class", css_class));
  body_ += close("circle", tooltip);
}

void SvgDocument::text(double x, double y, std::string_view content, const TextStyle& style) {
  std::string transform;
  if (style.rotate != 0) transform = fmt::format("rotate({} {} {})", num(style.rotate), num(x), num(y));
  body_ += fmt::format(R"(<text x="{}" y="{}" text-anchor="{}" font-size="{}" fill="{}"{}{}{}>{}</text>)", num(x),
                       num(y), xml_escape(style.anchor), num(style.size), xml_escape(style.fill),
                       style.bold ? R"( font-weight="bold")" : "", optional_attr("transform", transform),
                       optional_attr("class", style.css_class), xml_escape(content));
  body_ += '\n';
}

std::string SvgDocument::str(bool standalone) const {
  std::string out;
  if (standalone) out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">)",
      num(width_), num(height_));
  out += '\n';
  out += body_;
  out += "</svg>\n";
  return out;
}

}  // namespace trainsim::report
