// libFuzzer target: the configuration importers (docs/import.md, docs/hardening.md). The input's first
// byte picks the format by its two low bits ('0' Megatron-LM arguments, '1' a torchtitan TOML, '2' a
// DeepSpeed config, '3' a Hugging Face config.json); the rest is the file, written to a scratch file
// (the readers take paths, as `trainsim import` does). The file is imported onto a fixed cluster of 16
// H100 with a global batch of 64 (a DeepSpeed config beside a fixed Llama-style config.json), the
// scenario read and checked as `trainsim check` does, and when small predicted with the analytic
// backend, whose report must be sane. Only core::InputError may leave the importer.
#include <cstddef>
#include <cstdint>

#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"
#include "sim/plan/config_import.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainsim;
  if (size == 0) return 0;
  static const char* const SUFFIX[] = {".args", ".toml", ".json", ".json"};
  const int format = data[0] & 3;
  const std::string& file = fuzz::write_scratch(data + 1, size - 1, SUFFIX[format]);
  plan::ImportOptions o;
  o.gpu = "H100-SXM5-80GB";
  o.nodes = 2;
  o.overrides = {"training.global_batch=64"};
  static const std::string small_llama = [] {
    const std::string path = "/tmp/trainsim-fuzz-" + std::to_string(getpid()) + "-config.json";
    core::write_output_file(path, R"({"model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
      "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 1024})");
    return path;
  }();
  switch (format) {
    case 0: o.megatron = file; break;
    case 1: o.torchtitan = file; break;
    case 2:
      o.deepspeed = file;
      o.hf_config = small_llama;
      break;
    default: o.hf_config = file; break;
  }
  try {
    const plan::ImportResult r = plan::import_configs(o);
    (void)plan::scenario_text(r);
    const plan::Scenario s = plan::read_scenario(r.scenario, "fuzz-import");
    if (const std::optional<plan::Prediction> p = fuzz::predict_if_small(s, /*layer_graphs=*/false)) {
      fuzz::require_sane_json(plan::report_json(s, *p));
    }
  } catch (const core::InputError&) {
    // a clear error naming the file and field: not a finding
  }
  return 0;
}
