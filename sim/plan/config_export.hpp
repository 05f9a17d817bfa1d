#pragma once
// A scenario written as the configuration files of a training framework (docs/import.md,
// "Export"): Megatron-LM arguments, a torchtitan TOML, a DeepSpeed config or a Hugging Face
// config.json. What the format cannot hold is listed, never silently changed; importing the files
// back (config_import.hpp) with the cluster of the scenario and `import_overrides` gives the same
// scenario wherever nothing was lost (tests/plan/config_roundtrip_test.cpp runs every bundled one).
//
//   const plan::Scenario s = plan::load_scenario("scenarios/llama3-70b-h100-64.json");
//   const plan::ExportResult r = plan::export_scenario(s, plan::ConfigFormat::MEGATRON);
//   // r.text: "--num-layers 80\n--hidden-size 8192\n..."; r.lost: empty (nothing to report)

#include <string>
#include <vector>

#include "sim/plan/config_import.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {

// A value of the scenario the format cannot express, and what the file says instead.
struct ExportLoss {
  std::string key;      // the scenario key ("parallelism.zero_stage")
  std::string message;  // why, and what is written instead
};

struct ExportResult {
  std::string text;                  // the file; Megatron arguments and TOML start with comments saying
                                     // where it came from and what was lost (JSON formats cannot)
  std::vector<ExportLoss> lost;      // empty: the import gives the same scenario back
  // `--set` overrides the import needs for what the format leaves to other files or the launcher
  // (a DeepSpeed config holds no sequence length): "training.sequence_length=1024".
  std::vector<std::string> import_overrides;
};

// Formats: MEGATRON (one argument per line, continued with backslashes, after # comments),
// TORCHTITAN (TOML), DEEPSPEED (JSON),
// HUGGING_FACE (config.json: llama, mixtral, qwen2_moe or gpt2, whichever holds the model's shape).
// A model of layers (a CNN, docs/cnn.md) has no form in any of them: an InputError. The cluster is
// in none of them (the import takes it from --cluster-from).
ExportResult export_scenario(const Scenario& s, ConfigFormat format);

}  // namespace trainsim::plan
