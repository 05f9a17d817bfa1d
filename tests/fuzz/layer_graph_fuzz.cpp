// libFuzzer target: layer-graph models (docs/cnn.md, docs/hardening.md). The input is a "model"
// object ({"family": "layer_graph", "input", "layers"}) placed in a fixed scenario (8 A100, data
// parallel); the scenario is read and checked as `trainsim check` does (shapes, the layer and task
// budgets) and, when the workload is small (fuzz::predict_if_small), predicted with
// the analytic backend: the report must hold only finite numbers, no negative duration and an MFU
// in [0, 1].
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
    core::Json doc = core::parse_json_text(R"({
      "name": "fuzz-layer-graph",
      "cluster": {"gpu": "A100-SXM4-80GB", "nodes": 1, "gpus_per_node": 8},
      "training": {"global_batch": 64, "micro_batch": 8, "precision": "fp16"},
      "parallelism": {"data": 8},
      "simulation": {"backend": "analytic"}
    })", "fuzz-layer-graph.json");
    doc["model"] = core::parse_json_text(fuzz::as_text(data, size), "fuzz-layer-graph.json");
    const plan::Scenario s = plan::read_scenario(doc, "fuzz-layer-graph.json");
    if (const std::optional<plan::Prediction> p = fuzz::predict_if_small(s, /*layer_graphs=*/true)) {
      fuzz::require_sane_json(plan::report_json(s, *p));
    }
  } catch (const core::InputError&) {
  }
  return 0;
}
