// libFuzzer target: the trainsim trace reader (docs/hardening.md). The input is written to a file
// (the reader takes paths, as `replay`, `calibrate` and `trace summary` do), read whole with
// core::read_trace_file, and summarized as `trace summary` does.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "calibrate/trace_summary.hpp"
#include "sim/core/error.hpp"
#include "sim/core/trace_io.hpp"

namespace {
const std::string& scratch_path() {
  static const std::string path = "/tmp/trainsim-fuzz-" + std::to_string(getpid()) + ".trace";
  return path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainsim;
  std::FILE* f = std::fopen(scratch_path().c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  try {
    const core::TraceFile trace = core::read_trace_file(scratch_path());
    (void)core::truncation_warning(trace);
    (void)calibrate::summarize_trace(trace, 10);
  } catch (const core::InputError&) {
  }
  return 0;
}
