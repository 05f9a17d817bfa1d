#pragma once
// Writes a chart to a file chosen by its extension:
//   .svg  the SVG document itself (with the XML declaration)
//   .png  rendered by `rsvg-convert` (Debian package librsvg2-bin), run as a subprocess found on
//         PATH; its absence is an InputError naming the package, since the user can install it or
//         ask for .svg instead.
// Any other extension is an InputError. `option` names the flag in messages ("--plot").
//
//   write_chart_file("scaling.png", render_line_charts({chart}), "--plot");

#include <string>

#include "sim/report/svg.hpp"

namespace trainsim::report {

// The program that turns SVG into PNG.
inline constexpr const char* PNG_CONVERTER = "rsvg-convert";

// Checks a picture path before the work that produces the picture: an .svg or .png name in an
// existing folder. Throws InputError naming `option`.
void check_chart_path(const std::string& path, const std::string& option);

// Throws InputError: unknown extension, unwritable file, missing converter, or a converter failure
// (with its exit status).
void write_chart_file(const std::string& path, const SvgDocument& svg, const std::string& option);

}  // namespace trainsim::report
