#pragma once
// Internal to the Megatron importer (import_megatron.cpp): splitting a launch command into its
// arguments, and the table of the Megatron-LM arguments and Megatron-Bridge fields that are read.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/plan/config_import.hpp"

namespace trainsim::plan::import_detail {

struct ArgValue {
  std::string text;     // the value ("true" for a flag given without one); several values joined by spaces
  std::string written;  // as given: "--tensor-model-parallel-size" or "model.tensor_model_parallel_size"
};

struct ParsedArgs {
  std::map<std::string, ArgValue> values;  // by Megatron-LM name without "--"
  bool megatron_lm = false;                // at least one "--argument": absent ones take Megatron-LM's defaults
  std::optional<int> nodes;                // torchrun --nnodes
  std::optional<int> gpus_per_node;        // torchrun --nproc-per-node
};

// Parses the tokens: the launcher's (up to a *.py script), "--name value", "--name=value",
// "--flag", and Megatron-Bridge "section.field=value" (made into the Megatron-LM name). Notes go to
// `f` (environment assignments, launcher arguments, a repeated argument, stray words); problems to
// `diag` (an argument that takes a value given none, a Megatron-Bridge field given no value).
ParsedArgs parse_megatron_tokens(const std::vector<std::string>& tokens, ImportFragment& f, core::Diagnostics& diag);

// Megatron-LM's --moe-layer-freq for `layers` layers: an integer k (every k-th layer) or a Python list
// expression of zeros and ones ("[0]*3+[1]*58", "([1]*3+[0]*1)*3"; 1 = MoE); nullopt when it is
// neither or its list is not `layers` long.
std::optional<std::vector<bool>> moe_freq_pattern(const std::string& text, int64_t layers);

// Why an argument the importer did not use has no counterpart (hyperparameters, I/O, logging, ...).
std::string megatron_unused_reason(const std::string& name);

}  // namespace trainsim::plan::import_detail
