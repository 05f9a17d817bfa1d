// libFuzzer target: the resilience and storage keys (docs/resilience.md, docs/hardening.md). The
// input is a JSON object merged (RFC 7386 merge patch) into a fixed small scenario that checkpoints
// to a parallel file system and trains for a number of tokens: its cluster.reliability,
// cluster.storage, cluster.price_per_gpu_hour, training.checkpoint and training.tokens are what the
// seeds vary. The scenario is read and checked as `trainsim check` does and predicted with the
// analytic backend when small; the report (checkpoint, reliability, time to train, goodput) must hold
// only finite numbers, no negative duration and an MFU and goodput in [0, 1].
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
      "name": "fuzz-resilience",
      "cluster": {"gpu": "A100-SXM4-80GB", "nodes": 2, "gpus_per_node": 8,
                  "storage": {"parallel_fs": {"write_bandwidth": "100 GB/s", "read_bandwidth": "200 GB/s"}},
                  "reliability": {"node_mtbf": "1000 h"}, "price_per_gpu_hour": 2.5},
      "model": "gpt3-125m",
      "training": {"global_batch": 16, "micro_batch": 1, "sequence_length": 512, "tokens": 1e9,
                   "checkpoint": {"interval": "auto", "mode": "async"}},
      "parallelism": {"data": 16},
      "simulation": {"backend": "analytic"}
    })", "fuzz-resilience.json");
    const core::Json patch = core::parse_json_text(fuzz::as_text(data, size), "fuzz-resilience.json");
    doc.merge_patch(patch);
    const plan::Scenario s = plan::read_scenario(doc, "fuzz-resilience.json");
    if (const std::optional<plan::Prediction> p = fuzz::predict_if_small(s, /*layer_graphs=*/false)) {
      fuzz::require_sane_json(plan::report_json(s, *p));
    }
  } catch (const core::InputError&) {
  }
  return 0;
}
