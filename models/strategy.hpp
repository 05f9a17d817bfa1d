#pragma once
// The training run and its parallelization strategy: the "training" and "parallelism" sections of a
// scenario, and the check of a whole strategy against a model and a cluster size.

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::models {

struct TrainingConfig {
  int64_t sequence_length = 2048;
  int64_t global_batch = 0;     // sequences per iteration (required)
  int64_t micro_batch = 1;      // sequences per micro-batch per data-parallel replica
  core::Precision precision = core::Precision::BF16;

  static TrainingConfig from_json(core::ObjectReader& r);
  core::Json to_json() const;
};

enum class PipelineSchedule { GPIPE, ONE_F_ONE_B, INTERLEAVED_1F1B };
enum class Recompute { NONE, SELECTIVE, FULL };
std::string to_string(PipelineSchedule s);  // "gpipe", "1f1b", "interleaved-1f1b"
std::string to_string(Recompute r);         // "none", "selective", "full"

struct ParallelismConfig {
  int tensor = 1;
  int pipeline = 1;
  int data = 1;
  int context = 1;
  int expert = 1;
  bool sequence_parallel = false;   // Megatron sequence parallelism (needs tensor > 1 to matter)
  PipelineSchedule schedule = PipelineSchedule::ONE_F_ONE_B;
  int virtual_stages = 1;           // model chunks per pipeline rank (interleaved-1f1b)
  std::vector<int> stage_layers;    // optional: layers per pipeline chunk in pipeline order
                                    // (pipeline * virtual_stages entries); empty = balanced split
  Recompute recompute = Recompute::NONE;
  int zero_stage = 0;               // 0: none; 1: optimizer states; 2: + gradients; 3: + weights (FSDP)
  core::Bytes bucket_size = core::Bytes(40e6);  // data-parallel gradient bucket (Megatron DDP default 40M
                                                // elements is close; 40 MB keeps buckets ~layer-sized)
  bool overlap_grad_reduce = true;  // reduce gradient buckets during backward

  int model_parallel_size() const { return tensor * pipeline * context * expert; }
  int world_size() const { return model_parallel_size() * data; }

  static ParallelismConfig from_json(core::ObjectReader& r);
  core::Json to_json() const;
};

// Records every impossible combination in `diag` (file `file`, pointers into the scenario):
// TP not dividing heads / kv_heads / ffn_hidden, more pipeline chunks than layers, stage_layers of the
// wrong length or sum, virtual stages without the interleaved schedule, TP x PP x DP x CP x EP not
// matching `world_size`, global batch not divisible by micro_batch x DP, context parallelism not
// dividing the sequence, EP not dividing experts.
void check_strategy(const ModelSpec& model, const TrainingConfig& training, const ParallelismConfig& par,
                    int world_size, const std::string& file, core::Diagnostics& diag);

}  // namespace trainsim::models
