#pragma once
// Weight pruning (the scenario's "optimizations.pruning"): which weights are zero, how they are
// stored, what travels over the network, and which sparse kernels the GEMMs run. The workload
// builder applies it (workload_builder.hpp); the engine's compute model prices the sparse kernels
// (sim/engine/compute_model.hpp). docs/scenario.md documents the keys for users.
//
// What is pruned: the weight matrices of the linear layers of every transformer layer (QKV,
// attention projection, MLP up/gate and down, shared and routed experts), each at `sparsity`.
// Not pruned: biases, norms, the MoE router, position embeddings, and, unless `embeddings` is true,
// the word embedding and the output layer (the usual recipes: NVIDIA ASP, SparseGPT, Wanda, torchao
// prune the transformer blocks' linear layers).
//
// Storage of one pruned matrix of R x C = N elements (the rank's shard, PyTorch's [out, in] layout),
// values of w bytes, d = 1 - sparsity kept (int32 indices, SPARSE_INDEX_BYTES):
//   dense     N·w: the zeros are stored (masked dense weights, as ASP and torchao keep them)
//   csr       d·N·w values + d·N·4 column indices + (R + 1)·4 row pointers
//   bitmask   d·N·w values + N/8 (one bit per dense element)
//   2:4       N/2·w values + N/8: NVIDIA's compressed format, 2 bits of metadata per kept value (the
//             PTX ISA's mma.sp: the index of each non-zero in its group of four)
//   bsr       d·N·w values + d·N/b²·4 block column indices + (R/b + 1)·4 block row pointers, for
//             b x b blocks (partial blocks at the edges are ignored)
// With a sparse format the gradients and the optimizer states (fp32 master, Adam moments) are kept
// for the kept values only, aligned with the weights' values: the index is stored once, counted in
// the weights, and sharded with them (ZeRO-3). With `dense` nothing changes in memory.
//
// Communication (`communication`): "dense" sends full tensors (what Megatron-LM, DeepSpeed and FSDP do
// with masked weights); "values" sends the kept values only: the replicas share the mask, so the
// compacted array is reduced and gathered by the usual collectives (AxoNN's sparse data
// parallelism, Singh & Bhatele, IPDPS 2023); "indexed" sends the values plus the format's index
// bytes with every gradient reduction and parameter gather (receivers that do not hold the mask).
// Pipeline, tensor, context and expert traffic carry activations and do not change.
//
// When: pruning starts at iteration `start_iteration`; the iterations before it are dense. The
// report predicts the steady-state iteration after the start; with start_iteration > 0 it also
// predicts the dense iteration (time and memory; the job must fit dense first), and time to train
// counts start_iteration dense iterations (sim/plan/prediction.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include "models/accounting.hpp"
#include "models/model_spec.hpp"
#include "models/strategy.hpp"
#include "sim/core/device.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::models {

enum class PruningMethod { NONE, MAGNITUDE, STRUCTURED_2_4, BLOCK };
enum class SparseFormat { DENSE, CSR, BITMASK, COMPRESSED_2_4, BSR };
enum class SparseCommunication { DENSE, VALUES, INDEXED };
std::string to_string(PruningMethod m);        // "none", "magnitude", "2:4", "block"
std::string to_string(SparseFormat f);         // "dense", "csr", "bitmask", "2:4", "bsr"
std::string to_string(SparseCommunication c);  // "dense", "values", "indexed"

// Bytes of one sparse index entry: column / block indices and row pointers are int32 (cuSPARSE's
// CUSPARSE_INDEX_32I; PyTorch's default int64 would double them).
inline constexpr double SPARSE_INDEX_BYTES = 4;

// The "optimizations.pruning" section. Keys (all optional):
//   method           "none" | "magnitude" (unstructured) | "2:4" (structured, NVIDIA) | "block";
//                    default "none" (no pruning; the other keys are then ignored, so that
//                    --set optimizations.pruning.method=none turns a pruned scenario dense)
//   sparsity         fraction of each pruned matrix that is zero, in [0, 1); default 0.5; 2:4 is
//                    0.5 by definition (another value is an error)
//   block_size       "block": blocks of block_size x block_size, a power of two 2-128; default 32;
//                    an error with another method
//   start_iteration  iteration at which pruning starts (before: dense), >= 0; default 0
//   format           storage (see above): magnitude "csr" (default) | "bitmask" | "dense"; 2:4 "2:4"
//                    (default) | "dense"; block "bsr" (default) | "dense"
//   sparse_kernel    the pruned GEMMs run sparse kernels; default true for 2:4 (sparse tensor cores;
//                    the GPU must have them), false otherwise (unstructured and block sparsity are
//                    multiplied as dense GEMMs unless the scenario says a sparse kernel is used)
//   communication    "dense" | "values" | "indexed" (see above); default "dense"; "indexed" needs a
//                    sparse format
//   embeddings       also prune the word embedding and the output layer; default false
struct PruningConfig {
  PruningMethod method = PruningMethod::NONE;
  double sparsity = 0.5;
  int block_size = 32;
  int64_t start_iteration = 0;
  SparseFormat format = SparseFormat::CSR;
  bool sparse_kernel = false;
  SparseCommunication communication = SparseCommunication::DENSE;
  bool embeddings = false;

  bool enabled() const { return method != PruningMethod::NONE; }
  // Kept fraction of a pruned matrix: 1 - sparsity (1 without pruning).
  double density() const { return enabled() ? 1.0 - sparsity : 1.0; }
  // Weights, gradients and optimizer states are stored sparse.
  bool sparse_storage() const { return enabled() && format != SparseFormat::DENSE; }
  // The kernel the pruned GEMMs run (NONE: dense GEMMs).
  core::GemmSparsity kernel() const;

  // Reads the section, resolving the per-method defaults; rejects unknown keys (calls r.finish()).
  static PruningConfig from_json(core::ObjectReader& r);
  // Every key resolved; {"method": "none"} without pruning.
  core::Json to_json() const;
};

// Records in `diag` (pointers into the scenario) what the GPU or the precision cannot run: 2:4
// sparse kernels need sparse tensor cores (core::GpuSpec::sparse_tensor_cores) and 16- or 8-bit
// operands (bf16, fp16, fp8: the types whose 2:4 metadata is 2 bits per kept value).
void check_pruning(const PruningConfig& c, const core::GpuSpec& gpu, core::Precision precision, const std::string& file,
                   core::Diagnostics& diag);

// Marks the GEMMs of pruned weights with the configured sparse kernel and density (OpCost::sparsity):
// the layers' linear layers (QKV, projection, MLP and expert up and down), and the output layer
// (LOGITS) with `embeddings`. Nothing without sparse_kernel.
void apply_pruning(std::vector<OpCost>& ops, const PruningConfig& c);

// One pruned weight matrix on one rank: `count` matrices (local experts) of rows x cols, the rank's
// shard in PyTorch's [out, in] layout (column-parallel: out / t rows; row-parallel: in / t columns).
struct WeightMatrix {
  double rows = 0;
  double cols = 0;
  double count = 1;
  bool expert = false;  // a routed expert's (reduced over the expert-data group)
};

// The matrices pruned in one transformer layer of `kind` on one rank (QKV, projection, MLP or
// shared-expert up and down, routed experts' up and down).
std::vector<WeightMatrix> layer_pruned_matrices(const ModelSpec& m, const ParallelismConfig& p, LayerKind kind);
// The word embedding (vocabulary-parallel, V/t x h) when `embeddings`; else none.
std::vector<WeightMatrix> embedding_pruned_matrices(const ModelSpec& m, const ParallelismConfig& p, const PruningConfig& c);
// The output layer when the last stage holds it apart from the embedding (head_parameters) and
// `embeddings`; else none.
std::vector<WeightMatrix> head_pruned_matrices(const ModelSpec& m, const ParallelismConfig& p, const PruningConfig& c);

// What pruning leaves of the pruned parameters of a unit (a layer, the embedding, the head) on one
// rank, split like ParameterCount into dense and expert parameters.
struct PrunedParameters {
  ParameterCount pruned;       // elements of the pruned matrices (dense count; part of the unit's parameters)
  ParameterCount kept;         // values kept: density x pruned
  ParameterCount index_bytes;  // the format's index of those matrices (0 for "dense" storage)

  PrunedParameters& operator+=(const PrunedParameters& o) {
    pruned += o.pruned;
    kept += o.kept;
    index_bytes += o.index_bytes;
    return *this;
  }
};
PrunedParameters pruned_parameters(const std::vector<WeightMatrix>& matrices, const PruningConfig& c);

// Elements of a unit whose values are stored (and updated by the optimizer): its parameters, less
// the pruned zeros under a sparse format.
ParameterCount stored_elements(const ParameterCount& params, const PrunedParameters& pruned, const PruningConfig& c);
// Elements of a unit sent by a gradient reduction or a parameter gather: its parameters, less the
// pruned zeros unless `communication` is "dense".
ParameterCount sent_elements(const ParameterCount& params, const PrunedParameters& pruned, const PruningConfig& c);
// Index bytes sent with them: the format's index under "indexed", else 0.
ParameterCount sent_index_bytes(const PrunedParameters& pruned, const PruningConfig& c);

// Weights, gradients and optimizer states of `local` parameters of which `pruned` are pruned: the
// unpruned ones as model_state_memory(local, t, p); under a sparse format the pruned matrices'
// kept values with weight, gradient and optimizer bytes each plus their index in the weights, each
// sharded as ZeRO shards that state. Without sparse storage: model_state_memory(local, t, p).
MemoryBreakdown model_state_memory(const ParameterCount& local, const TrainingConfig& t, const ParallelismConfig& p,
                                   const PruningConfig& c, const PrunedParameters& pruned);

}  // namespace trainsim::models
