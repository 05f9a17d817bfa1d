// libFuzzer target: the trainsim trace reader (docs/hardening.md). The input is written to a file
// (the reader takes paths, as `replay`, `calibrate` and `trace summary` do), read whole with
// core::read_trace_file, and summarized as `trace summary` does.
#include <cstddef>
#include <cstdint>
#include <string>

#include "calibrate/trace_summary.hpp"
#include "sim/core/error.hpp"
#include "sim/core/trace_io.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainsim;
  const std::string& path = fuzz::write_scratch(data, size, ".trace");
  try {
    const core::TraceFile trace = core::read_trace_file(path);
    (void)core::truncation_warning(trace);
    (void)calibrate::summarize_trace(trace, 10);
  } catch (const core::InputError&) {
  }
  return 0;
}
