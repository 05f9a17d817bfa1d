#pragma once
// The colours of the charts: Tableau 10, a palette that stays distinguishable for the common
// colour-vision deficiencies. Series and stacked parts take them in order, cycling after ten.

#include <array>
#include <cstddef>
#include <string>

namespace trainsim::report {

inline const std::string& palette_color(size_t index) {
  static const std::array<std::string, 10> colors{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return colors[index % colors.size()];
}

}  // namespace trainsim::report
