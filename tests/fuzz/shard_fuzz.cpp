// libFuzzer target: search shards read back (`search merge`, docs/search.md, docs/hardening.md). The
// input is one shard document (`search --shard 0/1`): parsed with the JSON limits, read as user input
// (read_shard: schema, ranges, counts that add up) and merged alone (merge_shards: the search its
// options describe is rebuilt from the scenario they name, and its layouts must be that search's
// candidates), without the SimGrid re-check. The ranking printed as JSON must hold only finite
// numbers, no negative duration and no MFU above 1.
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "sim/cli/search_command.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainsim;
  try {
    const core::Json doc = core::parse_json_text(fuzz::as_text(data, size), "fuzz-shard.json");
    cli::SearchArgs args;
    args.options.recheck = false;  // SimGrid: seconds per layout, not a reader
    args.options.quiet = true;
    args.options.jobs = 1;
    args.format = cli::Format::JSON;
    std::ostringstream out;
    cli::merge_shards({{doc, "fuzz-shard.json"}}, args, out);
    fuzz::require_sane_json(core::parse_json_text(out.str(), "merged ranking"));
  } catch (const core::InputError&) {
  }
  return 0;
}
