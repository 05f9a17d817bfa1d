#pragma once
// Internal to models/: the emitter of one pipeline stage's program (build_stage_program in
// stage_program.hpp). One class, its members defined across the stage_*.cpp files named below, by
// what they emit; read stage_schedule.cpp first for the order in which the passes are emitted.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/stage_program.hpp"

namespace trainsim::models::emit {

using core::CollectiveOp;
using core::CopyDirection;
using core::MemorySpace;
using core::Phase;
using core::Stream;
using core::Task;
using core::TaskKind;

// What holds parameters: the embedding, a layer, or the output head.
enum class UnitKind { EMBEDDING, LAYER, HEAD };
struct Unit {
  UnitKind kind = UnitKind::LAYER;
  int layer = 0;
  ParameterCount params;
  PrunedParameters pruned;  // the pruned part of params
  ParameterCount sent;      // elements its gradient reductions and parameter gathers send (pruning.hpp)
  ParameterCount index;     // index bytes sent with them
  std::vector<WeightMatrix> matrices;  // its weight matrices (PowerSGD only; else empty)
};

// A data-parallel gradient bucket, reduced once the backward of the unit that completes it has run
// for the chunk's last micro-batch.
struct Bucket {
  double parameters = 0;
  bool expert = false;
  int id = 0;         // index into StageEmitter::buckets_by_id_
  double sent = 0;    // elements sent (parameters, less the pruned zeros under sparse communication)
  double index = 0;   // index bytes sent with them
  std::vector<WeightMatrix> matrices;  // PowerSGD: the weight matrices of its parameters
};

struct Comm {
  CollectiveOp op = CollectiveOp::ALL_REDUCE;
  uint16_t group = 0;
  Stream stream = Stream::TENSOR_COMM;
  double bytes = 0;
};

// One entry of a stage's issue order: a pass of the schedule, or a pipeline transfer placed at the
// time of its ideal execution (see workload_builder.hpp: ordering transfers by that time on every
// rank makes each link's order agree and rules out cyclic waits).
struct Event {
  enum Type { RECV, PASS, SEND };
  double time = 0;
  int order_class = 0;  // 0 transfers, 1 passes: a transfer at time T precedes a pass starting at T
  int direction = 0;    // 0 activations, 1 gradients
  int sender = 0;
  Type type = PASS;
  size_t slot = 0;
};

class PoolEmitter;  // stage_schedule.cpp

class StageEmitter {
 public:
  StageEmitter(const BuildPlan& plan, core::Workload& workload, int stage);
  StageResult run();

 private:
  // stage_program.cpp: units, buckets, and the tasks every part emits
  int position(int chunk) const { return chunk * plan_.stages + stage_; }
  core::Program& prog() { return result_.program; }
  void build_units();
  Unit make_unit(UnitKind kind, int layer, const ParameterCount& params, const PrunedParameters& pruned) const;
  void build_buckets();
  uint32_t name_id(const std::string& name);
  Task make(TaskKind kind, Stream stream, Phase phase, int layer, int micro_batch, const std::string& name);
  uint32_t compute(const OpCost& op, Phase phase, bool backward, int layer, int mb, double fraction = 1.0,
                   std::initializer_list<uint32_t> also = {}, core::BackwardPart part = core::BackwardPart::BOTH);
  uint32_t collective(const Comm& c, double bytes, Phase phase, int layer, int mb, const std::string& op_name,
                      const std::vector<uint32_t>& deps);
  std::vector<uint32_t> take_critical();
  void blocking(const Comm& c, Phase phase, int layer, int mb, const std::string& op_name);
  void gradient_collective(CollectiveOp op, uint16_t group, double bytes, int layer, int mb, const std::string& name,
                           uint32_t after, double dense_bytes);
  void count_data(double bytes, double dense_bytes);
  // Bytes of a gradient reduction or parameter gather of `sent` elements at `element_bytes` each plus
  // `index` bytes of sparse index.
  static double message_bytes(double sent, double index, double element_bytes) { return sent * element_bytes + index; }
  void memory(double bytes, Phase phase, int layer, int mb);
  // Gradients allocated (bytes > 0) or freed under gradient_buffers "per-step": a MEMORY task named
  // "gradients", counted in the running sum and apart (gradients_at_peak_).
  void gradient_memory(double bytes, Phase phase, int layer, int mb);
  // A MEMORY task on the compute stream, into the running sums (memory, gradient_memory).
  void device_memory(const char* name, double bytes, Phase phase, int layer, int mb);
  // The running sum moved to live_ (and live_without_): the peaks and the gradients at the peak.
  void note_peaks();
  void memory_on(Stream stream, MemorySpace space, double bytes, Phase phase, int layer, int mb,
                 const std::vector<uint32_t>& deps);
  uint32_t copy(CopyDirection d, double bytes, Phase phase, int layer, int mb, const std::string& name,
                const std::vector<uint32_t>& deps);

  // stage_ops.cpp: a layer's ops, with their tensor/context/expert collectives, TP overlap and recompute
  bool tp_overlapped(OpKind kind) const;
  bool column(OpKind kind) const { return kind == OpKind::QKV || kind == OpKind::MLP_UP; }
  Comm tensor_comm(CollectiveOp op) const { return {op, plan_.groups.tensor, Stream::TENSOR_COMM, plan_.tensor_bytes}; }
  void overlapped_forward(const OpCost& op, Phase phase, int layer, int mb);
  void overlapped_backward(const OpCost& op, int layer, int mb);
  void ops_forward(std::span<const OpCost> ops, Phase phase, int layer, int mb);
  void ops_recompute_unsaved(const std::vector<OpCost>& ops, int layer, int mb);
  void ops_weight_gradient(const std::vector<OpCost>& ops, int layer, int mb);
  void ops_backward(const std::vector<OpCost>& ops, bool selective_recompute, int layer, int mb);

  // stage_passes.cpp: a unit's forward, backward and W pass; a chunk's passes
  void unit_forward(const std::vector<const Unit*>& order, size_t index, int chunk, int mb);
  void unit_backward(const std::vector<const Unit*>& order, size_t index, int mb, const std::vector<Bucket>& ready,
                     bool last_of_chunk);
  double kept_for_weight_gradient(const Unit& u) const;
  void unit_weight_gradient(const Unit& u, int mb, const std::vector<Bucket>& ready, bool last_of_chunk);
  void unit_gradients_final(const Unit& u, int mb, const std::vector<Bucket>& ready, bool last_of_chunk);
  void start_pass(size_t units, int prefetch);
  void forward_pass(int chunk, int mb);
  void backward_pass(int chunk, int mb, bool last_of_chunk);
  void weight_gradient_pass(int chunk, int mb, bool last_of_chunk);
  void carry_in(int chunk, int mb);

  // stage_data_parallel.cpp: ZeRO-3 / FSDP gathers, gradient reductions, parameter prefetch
  void gather_unit(const Unit& u, size_t index, Phase phase, int mb);
  void gather_parameters(const std::vector<const Unit*>& order, size_t index, Phase phase, int mb);
  void flush_sharded_reductions(int mb);
  void accumulate_unsharded_gradients(const Unit& u, int mb);
  struct Reduction;
  void replicate_gradient_shard(const Reduction& r, int mb);
  void reduce_bucket(const Bucket& b, int layer, int mb);
  bool overlap_reductions() const;
  void reduce_gradients(CollectiveOp op, bool expert, double sent, double index, const std::vector<WeightMatrix>& matrices,
                        int layer, int mb, uint32_t after, double dense_bytes);
  void emit_parameter_prefetch();

  // stage_deepspeed.cpp: DeepSpeed ZeRO-3's parameter coordinator (plan_.deepspeed_fetch)
  void zero3_start_pass(const std::vector<const Unit*>& order, bool backward);
  void zero3_add_unit(const Unit& u, const std::vector<const OpCost*>& hooks);
  void zero3_hook(const OpCost& op, Phase phase, int layer, int mb);
  uint32_t zero3_host_hook(int fetched, Phase phase, int layer, int mb);

  // stage_schedule.cpp: the pipeline schedule families in issue order (fixed, async pool, MoE-overlapped 1F1B)
  std::vector<Event> schedule_events() const;
  bool chunk_has_moe(int chunk) const;
  std::vector<int> overlap_pairs(const std::vector<TimedSlot>& timed) const;
  std::pair<uint32_t, uint32_t> merged_passes(const PassSlot& f, const PassSlot& b, bool b_last_of_chunk,
                                              std::optional<uint32_t> f_recv, std::optional<uint32_t> b_recv);
  void emit_schedule();
  static uint32_t pool_trigger(const PassSlot& s, std::optional<uint32_t> recv, const PoolEmitter& pool,
                               const std::vector<uint32_t>& last_compute_of);
  void pass_end();
  void emit_send(const PassSlot& s, uint32_t after);

  // stage_optimizer.cpp: offload copies and the optimizer step (device, host, streamed)
  const OffloadConfig& offload() const { return *plan_.offload; }
  bool offload_activations() const { return offload().activations == OffloadTarget::CPU; }
  void offload_layer(int chunk, int layer, int mb);
  void reload_layer(const std::vector<const Unit*>& order, size_t index, int mb);
  double gradient_copy_bytes() const;
  void offload_gradients(double params, int layer, int mb, uint32_t after);
  void offload_unit_gradients(const Unit& u, int mb, bool last_of_chunk);
  void offload_reduced_gradients(double params, bool expert, int layer, int mb, uint32_t reduction);
  void emit_optimizer();
  std::vector<double> optimizer_chunks(double parameters) const;
  uint32_t host_optimizer(double parameters, const std::vector<uint32_t>& ready);
  uint32_t streamed_optimizer(double parameters, const std::vector<uint32_t>& ready);

  const BuildPlan& plan_;
  const ParallelismConfig& par_;
  core::Workload& workload_;
  int stage_;
  StageResult result_;
  ParameterCount stored_;                                  // elements with stored values (what Adam updates)
  std::vector<std::vector<Unit>> units_;                  // by chunk, forward order
  std::vector<std::vector<std::vector<Bucket>>> buckets_;  // by chunk, by unit in backward order
  std::vector<std::vector<std::vector<int>>> bucket_units_;  // by chunk, by unit in forward order: bucket ids
  std::vector<Bucket> buckets_by_id_;
  std::vector<int> bucket_chunk_;                          // by bucket id
  std::vector<uint32_t> parameter_gather_;                 // by bucket id (overlap_param_gather)
  std::vector<bool> forward_seen_;                         // by chunk: its first forward was emitted
  std::unordered_map<std::string, uint32_t> names_;
  std::vector<uint32_t> pending_;              // what the next compute task waits for
  std::optional<uint32_t> last_compute_;
  std::vector<uint32_t> unit_done_;            // last compute of each unit of the current pass
  std::vector<std::vector<uint32_t>> unit_gathers_;  // ZeRO-3 gathers of each unit of the current pass
  size_t gathers_issued_ = 0;                  // units of the current pass whose gathers are issued
  int pass_prefetch_ = 1;                      // units gathered ahead in the current pass
  std::optional<uint32_t> pass_start_;         // the last compute before the current pass
  struct Reduction {
    uint16_t group = 0;
    double bytes = 0;
    double sent = 0;         // elements sent and their index bytes (bytes = sent x gradient bytes + index)
    double index = 0;
    int layer = 0;
    double dense_bytes = 0;  // without pruning
    double params = 0;       // parameters reduced (offloaded gradients: the rank's share goes to the host)
    bool expert = false;
  };
  std::vector<Reduction> sharded_reductions_;    // waiting for the end of the pass (no overlap_grad_reduce)
  std::vector<uint32_t> gradient_collectives_;
  std::vector<Bucket> reduced_;                // buckets in the order they were reduced
  std::optional<uint32_t> embedding_gradient_;  // backward compute that finalizes the tied embedding gradient
  double live_ = 0;
  double peak_ = 0;
  double live_gradients_ = 0;                  // gradient_buffers "per-step": allocated so far this step
  double gradients_at_peak_ = 0;               // live_gradients_ when live_ reached peak_
  std::set<const Unit*> gradients_allocated_;  // units whose per-step gradients exist
  double live_without_ = 0;                    // device memory as if no activation were offloaded
  double peak_without_ = 0;
  std::vector<int> last_layer_;                // by chunk: its last layer (keeps its activations), or -1
  std::map<std::pair<int, int>, uint32_t> offloaded_;  // (layer, micro-batch) -> activation offload copy
  std::map<std::pair<int, int>, uint32_t> reloaded_;   // (layer, micro-batch) -> activation reload copy
  std::vector<uint32_t> gradient_copies_;      // gradient copies to the host (the CPU step waits for them)
  // DeepSpeed ZeRO-3 (stage_deepspeed.cpp): the current pass's hooks, parameters and fetch schedule
  struct Zero3Parameter {
    double elements = 0;
    double bytes = 0;        // what its all-gather sends per rank
    bool expert = false;
    int layer = 0;
  };
  struct Zero3Pass {
    std::vector<const OpCost*> hook_ops;         // the op of each hook, in execution order
    std::vector<Zero3Parameter> parameters;      // in order of first use
    Zero3Trace trace;
    std::vector<std::vector<int>> issues;        // by hook: the parameters whose all-gathers it issues
    std::vector<int> first_use;                  // by parameter: its first hook
  };
  Zero3Pass zero3_;
  size_t zero3_next_hook_ = 0;
  std::vector<std::vector<uint32_t>> zero3_gathers_;  // by parameter of the pass: its all-gather
  std::optional<uint32_t> zero3_host_;               // the last host hook task
  // the last DEEPSPEED_HOST_LEAD_FETCHES fetching hooks (across passes): what the GPU waited for there
  std::vector<std::vector<uint32_t>> zero3_reached_;

};

}  // namespace trainsim::models::emit
