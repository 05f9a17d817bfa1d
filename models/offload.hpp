#pragma once
// Offloading: the "optimizations.offload" section of a scenario. What leaves GPU memory, where it
// goes (the node's host memory or its NVMe drives), and how the job then runs: which side steps the
// optimizer, and whether the copies overlap the computation. The workload builder
// (stage_optimizer.cpp) turns it into COPY tasks on the copy streams, CPU optimizer tasks on the HOST
// stream and host-memory MEMORY tasks; this file owns the configuration, its checks and the
// memory accounting (which bytes stay on the GPU, which move to the host or to NVMe).
//
//   "offload": {
//     "preset": "none",              // none | zero-offload | zero-infinity | axonn: the defaults of
//                                    //   the keys below (each preset is spelled out in Preset)
//     "optimizer_states": "none",    // none | cpu | nvme: Adam's moments (8 bytes per parameter)
//     "master_weights": <states>,    // none | cpu | nvme: the fp32 master copy (4 bytes per parameter
//                                    //   in mixed precision; fp32 training has none); default: with
//                                    //   the optimizer states
//     "gradients": "none",           // none | cpu | nvme: the fp32 gradient accumulation lives in
//                                    //   host memory (on NVMe: DeepSpeed's optimizer swapper writes
//                                    //   the gradient partitions out with the states); each
//                                    //   micro-batch's 16-bit gradients are copied out as they are
//                                    //   produced (a bucket-sized staging buffer stays)
//     "parameters": "none",          // none | cpu | nvme: the 16-bit ZeRO-3 parameter shard; copied
//                                    //   in before every all-gather (needs zero_stage 3)
//     "activations": "none",         // none | cpu: each layer's stored activations (what the
//                                    //   recompute setting keeps) copied out after its forward and
//                                    //   back before its backward (Megatron-core CPU offloading)
//     "optimizer_step": <auto>,      // cpu | gpu; default cpu when the optimizer states or the
//                                    //   master weights are off the GPU, gpu otherwise
//     "overlap": true                // copies run on the copy engines while the GPU computes,
//                                    //   prefetched one layer ahead; false: each copy blocks
//   }
//
// How each choice runs (per rank; P a unit's parameters, shard = P / the ZeRO replicas that own it):
//   activations cpu   after a layer's forward its stored activations go device->host (COPY_OUT,
//                     freed on the GPU when the copy ends); before its backward they come back
//                     (COPY), issued when the backward of the layer after it starts. The last layer
//                     of each model chunk keeps its activations (its backward comes first), as
//                     Megatron-core keeps cpu_offloading_num_layers below the layer count.
//   gradients cpu     after each unit's backward its 16-bit gradients go device->host every
//                     micro-batch; gradients the data-parallel group reduces go after their
//                     reduction (the rank's share).
//   step on cpu       gradients kept on the GPU (gradients none) go device->host in fp32 after the
//                     last reduction; then per chunk, after every gradient is off the GPU (clipping
//                     needs the global norm): states (and gradients) read from NVMe when there, the
//                     fp32 gradients' read-modify-write accumulation on NVMe not modelled; the CPU Adam step
//                     (HOST stream), states written back to NVMe, and the updated 16-bit shard
//                     copied to the GPU (parameters none) or written to NVMe (parameters nvme).
//   step on gpu       with the states in host memory (AxoNN's scratch pad), per unit: states
//                     host->device, the GPU step, states device->host, one unit's states resident.
//   parameters        before every ZeRO-3 all-gather the rank's shard comes from host memory or
//                     NVMe.
//   overlap true      copies wait only for the data they move; the GPU waits only where it needs
//                     the copied data; the CPU step of unit k overlaps the copies of units k-1, k+1.
//   overlap false     every copy blocks the computation that follows it, and the optimizer step's
//                     reads, step and writes run one after another.
// Time: copies are priced by the engine (sim/engine/host_model.hpp), per direction over the GPU's
// host link, the node's shared host link and the NVMe drives; SimGrid shares those links between
// a node's GPUs. The CPU step's host-memory traffic is optimizer_step_bytes_per_parameter() and
// ADAM_FLOPS_PER_PARAMETER FLOPs per parameter.

#include <string>
#include <vector>

#include "models/accounting.hpp"
#include "models/strategy.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim::models {

enum class OffloadTarget : uint8_t { NONE, CPU, NVME };
std::string to_string(OffloadTarget t);  // "none", "cpu", "nvme"

// FLOPs of one Adam update of one parameter on the CPU: the two moment updates (3 + 4), the bias
// corrections, sqrt, division, weight decay and the parameter update, counting sqrt and division as
// one each (DeepSpeed csrc/includes/cpu_adam.h Step_AVX). Far below what the CPU's memory
// bandwidth allows, so the step is memory-bound unless a node has very few cores.
inline constexpr double ADAM_FLOPS_PER_PARAMETER = 14;

struct OffloadConfig {
  std::string preset = "none";
  OffloadTarget optimizer_states = OffloadTarget::NONE;
  OffloadTarget master_weights = OffloadTarget::NONE;
  OffloadTarget gradients = OffloadTarget::NONE;
  OffloadTarget parameters = OffloadTarget::NONE;
  OffloadTarget activations = OffloadTarget::NONE;
  bool step_on_host = false;
  bool overlap = true;

  // Whether anything is offloaded.
  bool active() const;
  bool uses_nvme() const;
  // Whether the optimizer's own states (moments or master weights) leave the GPU.
  bool states_off_gpu() const {
    return optimizer_states != OffloadTarget::NONE || master_weights != OffloadTarget::NONE;
  }

  // The presets' names, in the order they are documented.
  static const std::vector<std::string>& presets();
  // Reads the section; the preset sets the defaults of the other keys. Records malformed values and
  // unknown keys in r's Diagnostics (calls r.finish()).
  static OffloadConfig from_json(core::ObjectReader& r);
  // The resolved section (preset and every key); from_json reads it back.
  core::Json to_json() const;
  // "optimizer states, master weights, gradients -> cpu; step on cpu; overlapped"
  std::string describe() const;
};

// The preset's keys (OffloadConfig with preset = name). REQUIRES: name is in presets().
//   none            nothing offloaded
//   zero-offload    ZeRO-Offload (Ren et al., ATC'21; DeepSpeed zero_optimization.offload_optimizer
//                   device "cpu" at stage 1-2): optimizer states, master weights and gradients in
//                   host memory, the CPU Adam step, overlapped
//   zero-infinity   ZeRO-Infinity (Rajbhandari et al., SC'21; offload_optimizer and offload_param
//                   device "nvme" at stage 3): states, master weights, gradients (swapped out with
//                   the states) and parameters on NVMe, the CPU step, overlapped
//   axonn           AxoNN's CPU scratch pad (Singh & Bhatele, IPDPS'22; axonn/optim.py CPUAdam):
//                   fp32 master weights and Adam moments in pinned host memory, gradients and
//                   16-bit weights on the GPU; the GPU steps chunk by chunk, copying each chunk's
//                   states in and out on one stream (not overlapped)
OffloadConfig offload_preset(const std::string& name);

// Records the impossible combinations in `diag` (pointers under /optimizations/offload):
//   optimizer_step "cpu" with the optimizer states or master weights on the GPU, or "gpu" with
//   parameters or gradients offloaded (they are updated where they live);
//   parameters without zero_stage 3 (DeepSpeed offloads parameters at stage 3 only);
//   any "nvme" without cluster.nvme (`has_nvme`), at /cluster/nvme's user, the offload key.
void check_offload(const OffloadConfig& o, const ParallelismConfig& p, bool has_nvme, const std::string& file,
                   core::Diagnostics& diag);

// Model-state bytes of one rank that left the GPU, by kind.
struct OffloadedStates {
  core::Bytes optimizer_states;  // Adam moments
  core::Bytes master_weights;    // fp32 master copy
  core::Bytes gradients;         // fp32 gradient accumulation
  core::Bytes weights;           // 16-bit parameter shard (ZeRO-3)
  core::Bytes total() const { return optimizer_states + master_weights + gradients + weights; }
  OffloadedStates& operator+=(const OffloadedStates& o);
};

// Where one rank's model states live under an offload configuration.
struct StateSplit {
  MemoryBreakdown gpu;    // weights, gradients, optimizer_states left on the GPU (activations and
                          // buffers zero): gradients offloaded leave a staging buffer of
                          // min(local parameters, bucket elements) 16-bit gradients
  OffloadedStates host;
  OffloadedStates nvme;
};
// `local` parameters with ZeRO sharding as model_state_memory(). Master weights are 4 bytes per
// parameter of the optimizer's partition in mixed precision (none in fp32 training), moments 8; the
// offloaded gradients are the fp32 accumulation of that partition (4 bytes).
StateSplit split_model_states(const ParameterCount& local, const TrainingConfig& t, const ParallelismConfig& p,
                              const OffloadConfig& o);
// The same from the model states' memory on the GPU without offloading (`states`: pruning's sparse
// storage, models/pruning.hpp): the moments, master weights and gradient partition are taken in
// proportion to its optimizer states, the weights whole.
StateSplit split_model_states(const MemoryBreakdown& states, const ParameterCount& local, const TrainingConfig& t,
                              const ParallelismConfig& p, const OffloadConfig& o);
// parallelism.gradient_buffers "per-step" as the builders apply it: the gradients are freed after each
// step and allocated by the next backward only where they stay on the GPU (offloaded gradients live
// in host memory, split_model_states).
bool gradients_per_step_on_gpu(const ParallelismConfig& p, const OffloadConfig& o);

// Bytes of the fp32 master copy per parameter: 4 in mixed precision, 0 in fp32 / tf32 training.
double master_weight_bytes_per_parameter(core::Precision p);
// Bytes of Adam's moments per parameter: 8.
double moment_bytes_per_parameter();

// Parameters held by each pipeline stage's ranks (what build_workload's programs hold), from the
// sizes alone: the layers of its chunks, the embedding on the first position and the head on the
// last. REQUIRES: check_strategy() found no problem.
std::vector<ParameterCount> stage_parameters(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p);

}  // namespace trainsim::models
