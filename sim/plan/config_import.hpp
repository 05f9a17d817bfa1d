#pragma once
// Importing the configurations users already have (docs/import.md): a Megatron-LM / Megatron-Bridge
// argument list, a torchtitan TOML job config, a DeepSpeed JSON config and a Hugging Face config.json
// become one trainsim scenario that the user can edit. Every value without a counterpart in a
// scenario is reported as an ImportNote (never dropped silently); bad input is a core::InputError
// naming the file and the field. The reverse, a scenario written as those files, is
// sim/plan/config_export.hpp.
//
//   namespace plan = trainsim::plan;
//   plan::ImportOptions o;
//   o.hf_config = "config.json";                        // the model's shape
//   o.deepspeed = "ds_config.json";                     // ZeRO stage, batch sizes, precision, offload
//   o.cluster_from = "scenarios/llama3-70b-h100-64.json";  // its "cluster" section
//   const plan::ImportResult r = plan::import_configs(o);
//   std::string text = plan::scenario_text(r);          // the scenario, the notes as // comments
//
// Where each section of the scenario comes from, in increasing precedence:
//   1. `base` (a scenario file: every section it has), or `cluster_from` (its "cluster" only);
//   2. the cluster flags (gpu, nodes, gpus_per_node);
//   3. the imported configurations, merged: two of them that give the same scenario key different
//      values are an InputError naming both (e.g. hidden_size in config.json and --hidden-size);
//   4. sizes that a configuration leaves to the world size (Megatron's data-parallel size,
//      torchtitan's data_parallel_shard_degree -1, DeepSpeed's batch arithmetic), resolved with the
//      cluster's GPU count;
//   5. `overrides` ("key.path=value", as `--set`).
// A model, a cluster and training.global_batch must come from somewhere: their absence is an
// InputError saying which options give them.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/json_reader.hpp"

namespace trainsim::plan {

// The formats import reads and export writes.
enum class ConfigFormat { MEGATRON, TORCHTITAN, DEEPSPEED, HUGGING_FACE };
// "megatron", "torchtitan", "deepspeed", "hf"
std::string to_string(ConfigFormat f);
std::optional<ConfigFormat> config_format_named(std::string_view name);
// "Megatron-LM arguments", "torchtitan TOML", "DeepSpeed config", "Hugging Face config.json"
std::string describe(ConfigFormat f);

// A value of an imported file that the scenario does not hold as written: no counterpart in trainsim,
// approximated, or a default the source implied. Notes are printed on stderr and written as comments
// at the top of the scenario.
struct ImportNote {
  std::string file;     // the source file; "" for values given on the command line
  std::string field;    // "--recompute-method", "/zero_optimization/stage", "training.steps", "/rope_theta"
  std::string value;    // as written (cut to core::MAX_ECHO_CHARS); "" when the note is about a missing value
  std::string message;  // what trainsim does with it ("no counterpart: ...", "approximated as ...")

  // "ds.json: /gradient_clipping = 1.0: no counterpart (...)"
  std::string to_string() const;
};

// Sizes that a configuration leaves to the number of GPUs, resolved by import_configs once the
// cluster is known.
struct DeferredSizes {
  // parallelism.data = world / (tensor x pipeline x context [x expert without expert_tensor]):
  // Megatron derives its data-parallel size so; torchtitan's data_parallel_shard_degree -1 fills so.
  bool data_fills_world = false;
  std::string data_field;               // the field that leaves it open, for messages
  // DeepSpeed: train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x
  // data-parallel GPUs; any two give the third.
  std::optional<int64_t> train_batch;   // train_batch_size
  std::optional<int64_t> micro_batch;   // train_micro_batch_size_per_gpu
  std::optional<int64_t> accumulation;  // gradient_accumulation_steps
  std::string batch_fields;             // the fields among those three that were given
  // torchtitan: global_batch_size -1 (its default) means local_batch_size x data-parallel degree.
  std::optional<int64_t> local_batch;
  std::string local_batch_field;
  // training.tokens = steps x global_batch x sequence_length (Megatron --train-iters, torchtitan
  // training.steps), or samples x sequence_length (--train-samples).
  std::optional<int64_t> steps;
  std::optional<int64_t> samples;
  std::string steps_field;
  // The launcher's GPUs (torchrun --nnodes / --nproc-per-node before a Megatron script), or the
  // product of degrees that are all given (torchtitan): used when no cluster gives the world size.
  std::optional<int> nodes;
  std::optional<int> gpus_per_node;
  std::optional<int> world_size;
  std::string world_field;
  // Megatron pads the vocabulary to a multiple of this x the tensor-parallel size
  // (--make-vocab-size-divisible-by, default 128); 0: no padding (other formats).
  int64_t vocab_multiple = 0;
  // torchtitan: data_parallel_replicate_degree. FSDP shards over data / replicate (x context) ranks:
  // when data_parallel_shard_degree -1 resolves to 1 and context is 1, nothing is sharded (ZeRO 0).
  int replicate = 0;  // 0: not torchtitan
};

// What one configuration file says, in scenario terms.
struct ImportFragment {
  ConfigFormat format = ConfigFormat::MEGATRON;
  std::string file;                            // the path, or "command line"
  core::Json scenario = core::Json::object();  // a partial scenario: "model" (keys of a full spec),
                                               // "training", "parallelism", "optimizations"
  std::map<std::string, std::string> origin;   // scenario pointer -> the source field it came from
  std::vector<ImportNote> notes;
  // Fields read whose values are what trainsim's model assumes anyway (attention_bias false for a
  // SwiGLU block, a default bucket size): nothing to import, nothing to report.
  std::vector<std::string> matched;
  DeferredSizes deferred;
};

// The readers. Each throws core::InputError naming the file and the field (every problem of the file
// at once): a file that cannot be read or parsed, a value of the wrong type or out of range, a value
// that is not one of the allowed ones (the message lists them), sizes that contradict each other.

// A Megatron-LM argument list (`--tensor-model-parallel-size 8 ...`, `--flag=value`) or
// Megatron-Bridge overrides (`model.tensor_model_parallel_size=8 train.global_batch_size=512`), in
// any mix. Tokens before the first argument, up to a `*.py` script, are the launcher's: torchrun's
// --nnodes and --nproc-per-node give the GPUs; environment assignments (`VAR=1`) are noted. `origin`
// names the list in messages (a file name, or "command line").
ImportFragment read_megatron_args(const std::vector<std::string>& args, const std::string& origin);
// The arguments of a file: split like a shell does (whitespace, '...' and "..." quotes, backslash
// escapes and line continuations, # comments). A $VARIABLE is kept as written: it is an error only
// where its value is read ("expected an integer, found \"$TP\"").
std::vector<std::string> split_arguments(const std::string& text, const std::string& file);
ImportFragment read_megatron_file(const std::string& path);
// A torchtitan job config (TOML, read with toml++): [model] name and flavor (a table of torchtitan's
// flavors, or any flavor with a Hugging Face config.json giving the shape), [training],
// [parallelism], [activation_checkpoint], [compile], [float8].
// `shape_elsewhere`: a Hugging Face config.json gives the shape, so a flavor trainsim does not know is
// a note, not an error.
ImportFragment read_torchtitan_toml(const std::string& path, bool shape_elsewhere = false);
// A DeepSpeed config: batch sizes, bf16 / fp16, zero_optimization (stage, buckets, overlap,
// offload_optimizer, offload_param), activation_checkpointing. "auto" values (Hugging Face Trainer)
// are noted and left to the other sources.
ImportFragment read_deepspeed_json(const std::string& path);
// A Hugging Face config.json: model_type llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe,
// mixtral, deepseek_v2, deepseek_v3 or gpt2. DeepSeek's multi-head latent attention has no
// counterpart and is approximated (docs/import.md says how; the note gives both parameter counts).
ImportFragment read_hf_config(const std::string& path);

struct ImportOptions {
  std::string hf_config;                  // a Hugging Face config.json
  std::string megatron;                   // a file of Megatron-LM / Megatron-Bridge arguments
  std::vector<std::string> megatron_args;  // the same given inline (after `--` on the command line)
  std::string torchtitan;                 // a torchtitan TOML
  std::string deepspeed;                  // a DeepSpeed JSON config
  std::string base;                       // a scenario every section of which is kept unless imported
  std::string cluster_from;               // a scenario whose "cluster" section is used (not with base)
  std::string gpu;                        // cluster.gpu (a catalog name)
  int nodes = 0;                          // cluster.nodes; 0: from base / cluster_from / the sources
  int gpus_per_node = 0;                  // cluster.gpus_per_node; 0: idem, else 8
  std::string name;                       // the scenario's name; "": base's, else from the first source
  std::vector<std::string> overrides;     // "key.path=value", applied last
  // Read the result as a scenario (read_scenario: every check of `trainsim check`); its problems
  // are an InputError whose file is "imported scenario". false writes it as is, for the user to edit.
  bool check = true;
};

struct ImportResult {
  core::Json scenario;              // the scenario document (not resolved: what the sources said)
  std::vector<ImportNote> notes;    // in the order of the sources, then the merge's
  std::vector<std::string> sources;  // "config.json (Hugging Face config.json)", "cluster from x.json"
  // The model's parameters (models::ModelSpec::parameter_count at the training sequence length),
  // all experts and the ones a token goes through; 0 when check is false and the model did not read.
  int64_t parameters = 0;
  int64_t active_parameters = 0;
};

// REQUIRES: at least one of hf_config, megatron, megatron_args, torchtitan, deepspeed.
ImportResult import_configs(const ImportOptions& options);

// The scenario as JSON text (2-space indent, deterministic), preceded by // comments naming the
// sources and every note; load_scenario reads it back.
std::string scenario_text(const ImportResult& result);

}  // namespace trainsim::plan
