// libFuzzer target: reports given to `compare` (docs/hardening.md, "trainsim's own files read back").
// The input is a report document (`run --format json`), written to a file (compare takes paths) and
// compared with itself: compare_command reads it as user input (schema, every figure's type and
// range) and prints the side-by-side JSON, which must hold only finite numbers, no negative duration
// and no MFU above 1.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "sim/cli/compare_command.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainsim;
  const std::string& path = fuzz::write_scratch(data, size, "-report.json");
  try {
    cli::CompareArgs args;
    args.inputs = {path, path};
    args.format = cli::Format::JSON;
    args.quiet = true;
    std::ostringstream out, err;
    cli::compare_command(args, out, err);
    fuzz::require_sane_json(core::parse_json_text(out.str(), "compare output"));
  } catch (const core::InputError&) {
  }
  return 0;
}
