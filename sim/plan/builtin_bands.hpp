#pragma once
// validation/bands.json as it was when trainsim was built (sim/plan/CMakeLists.txt embeds it), so that
// `trainsim run` has its error bands wherever it runs. bands.hpp's builtin_band_set() reads it.

#include <string_view>

namespace trainsim::plan {

// The file's text; empty when the file did not exist at configure time.
std::string_view builtin_bands_text();

}  // namespace trainsim::plan
