// libFuzzer target: the scenario reader (docs/hardening.md). The input is a scenario document: it is
// parsed with the JSON limits of core::parse_json_text, read and checked as `trainsim check` does
// (read_scenario, the task budget), and when the workload is small enough to keep the fuzzer fast
// (fuzz::predict_if_small), predicted with the analytic backend, whose iteration time
// must be a finite, positive number.
#include <cstddef>
#include <cstdint>

#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainsim;
  try {
    const core::Json doc = core::parse_json_text(fuzz::as_text(data, size), "fuzz-scenario.json");
    const plan::Scenario s = plan::read_scenario(doc, "fuzz-scenario.json");
    const std::optional<plan::Prediction> p = fuzz::predict_if_small(s, /*layer_graphs=*/false);
    if (!p) return 0;
    fuzz::require_sane(p->iteration_time_s(), "the analytic iteration time");
    if (p->iteration_time_s() <= 0) std::abort();
  } catch (const core::InputError&) {
    // the clear error of a malformed or impossible scenario: not a finding
  }
  return 0;
}
