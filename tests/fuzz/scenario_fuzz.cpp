// libFuzzer target: the scenario reader (docs/hardening.md). The input is a scenario document: it is
// parsed with the JSON limits of core::parse_json_text, read and checked as `trainsim check` does
// (read_scenario, the task budget), and when the workload is small enough to keep the fuzzer fast
// (at most kMaxFuzzTasks estimated tasks), predicted with the analytic backend, whose iteration time
// must be a finite, positive number.
#include <cstddef>
#include <cstdint>

#include "models/workload_builder.hpp"
#include "sim/cli/prediction.hpp"
#include "sim/cli/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "tests/fuzz/fuzz_common.hpp"

namespace {
constexpr double kMaxFuzzTasks = 20'000;  // ~10 ms of analytic prediction
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainsim;
  try {
    const core::Json doc = core::parse_json_text(fuzz::as_text(data, size), "fuzz-scenario.json");
    const cli::Scenario s = cli::read_scenario(doc, "fuzz-scenario.json");
    cli::check_task_budget(s);
    if (s.model.is_layer_graph() ||
        models::estimate_task_count(s.model, s.training, s.parallelism, s.offload, s.compression) > kMaxFuzzTasks) {
      return 0;
    }
    const cli::Prediction p = cli::predict(s, "analytic");
    fuzz::require_sane(p.iteration_time_s(), "the analytic iteration time");
    if (p.iteration_time_s() <= 0) std::abort();
  } catch (const core::InputError&) {
    // the clear error of a malformed or impossible scenario: not a finding
  }
  return 0;
}
