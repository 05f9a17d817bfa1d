#pragma once
// What a prediction is like, for comparing it with the validation cases (bands.hpp, envelope.hpp):
// the four traits of the similarity rule and the mechanisms the prediction leans on.
//
// Example:
//   const plan::Scenario s = plan::load_scenario("validation/training/megatron-sc21-t1-145.6B.json");
//   const plan::CaseTraits t = plan::traits_of(s);
//   // t.stack "megatron", t.generation "ampere", t.mix "TP+PP+DP", t.gpus 1536;
//   // t.mechanisms: the megatron stack at 1536 GPUs, Ampere GPUs, TP 8, PP 8 (1f1b), DP 24, ...

#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"

namespace trainsim::plan {

struct Scenario;

// One mechanism a prediction leans on, at the scale it is used. Two uses of the same `key` are the
// same mechanism; `scale` says how far apart they are (0: a mechanism without a scale).
struct MechanismUse {
  std::string key;          // "fsdp", "tensor", "fp8:hopper", "stack:composer", "nvls", ...
  double scale = 0;         // the size it is used at (scale_name), 0 when it has none
  std::string scale_name;   // "DP", "TP", "PP", "CP", "EP", "GPUs", or "" without a scale
  std::string description;  // "FSDP (ZeRO-3) parameter gathers at DP 384"

  core::Json to_json() const;  // {key, scale, scale_name, description}
};

struct CaseTraits {
  std::string stack;       // the resolved training stack: "megatron", "composer", "torchtitan", ...
  std::string generation;  // GPU generation: "volta", "ampere", "hopper", "blackwell", "ada", "cdna3",
                           // or "other" (a GPU described from scratch)
  std::string mix;         // the parallelism axes used: "TP+PP+DP", "FSDP", "TP+EP+PP+DP", "1 GPU"
  int gpus = 1;            // world size
  std::vector<MechanismUse> mechanisms;

  core::Json to_json() const;
  // Reads to_json() back (bands files): InputErrors in the reader's Diagnostics.
  static CaseTraits from_json(core::ObjectReader& r);
};

// REQUIRES: `s` came from load_scenario (its strategy is possible, defaults resolved).
CaseTraits traits_of(const Scenario& s);

// The generation of a catalog GPU name ("A100-SXM4-80GB" -> "ampere"); "other" for an unknown one.
std::string gpu_generation(const std::string& gpu_name);

// Two scales are similar when neither is more than SIMILAR_SCALE times the other.
inline constexpr double SIMILAR_SCALE = 4;
bool similar_scale(double a, double b);

}  // namespace trainsim::plan
