#pragma once
// The Workload IR: what each GPU of a training job does in one iteration, independent of how it is
// simulated.
//
// A Workload is a set of Program templates plus a ParallelLayout. Each rank runs one program; ranks
// of one pipeline stage share a program and differ only in their peers, which tasks name
// symbolically (a communicator group kind, or a peer offset along a parallel axis) and the layout
// resolves per rank. So memory grows with templates + ranks, not with ranks x tasks.
//
// Execution semantics (every backend implements exactly these):
//  - A program is a list of tasks in issue order. Each task runs on one stream of its GPU; tasks of
//    one stream run one at a time in program order (like CUDA streams). A task also waits for its
//    explicit dependencies (indices of earlier tasks of the same program), which may be on other
//    streams (like CUDA events).
//  - COLLECTIVE: all members of the group call the same collectives in the same order (NCCL
//    semantics); the collective starts when every member has reached it and ends for all at once.
//  - SEND/RECV: each (sender, receiver, tag) is one FIFO channel, like an MPI tag: a SEND with tag T
//    to peer P is matched with P's next RECV with tag T from this rank, whatever streams they are on
//    (a ring exchange sends on one stream and receives on another). The transfer starts when both
//    are ready and both complete when it ends. Tags keep apart traffic that is ordered differently:
//    with two pipeline stages the next and the previous stage are one rank, and activations and
//    gradients between them each keep their own order.
//  - MEMORY: an instantaneous allocation (bytes > 0) or free (bytes < 0) of device memory, on top of
//    the program's static memory (weights, gradients, optimizer states), or of host memory when the
//    task's `memory_space` is HOST (offloaded activations), on top of Program::static_host_memory.
//  - COPY: a transfer between the GPU, its node's host memory and its node's NVMe drives (`copy`
//    says which way). It runs on the rank's copy streams (COPY inbound, COPY_OUT outbound) and, in
//    the SimGrid backend, shares the node's host links with the copies of the node's other GPUs.
//    A copy to the parallel file system (a checkpoint write, models/checkpoint.hpp) runs on the
//    stream its task names (COPY_OUT for a save, STORAGE for a background flush) and, in the SimGrid
//    backend, crosses the GPU's rail NIC and its node's storage link (network/topology.hpp).
//  - A COMPUTE task on stream HOST runs on the node's CPUs (a CPU optimizer step): its `bytes` are
//    host-memory traffic and its `flops` CPU work, timed from the cluster's host description.
//  - READY POOL (Program::pool; message-driven execution, AxoNN: Singh & Bhatele 2022): the blocks
//    of a pool (a pipeline stage's passes) run in an order the executor picks at run time, not in
//    program order. Each stream runs its tasks before the pool, then the tasks on it of each issued
//    block in issue order (program order within a block), then its tasks after the pool. The pool's
//    loose tasks (in its range but in no block: the receives that bring the blocks' inputs) run in
//    program order among themselves, beside the other tasks of their stream (receives posted
//    ahead, like MPI_Irecv), from the start of the iteration.
//    The pool opens when the COMPUTE stream reaches it, at time `open`; a block is issued once the
//    COMPUTE stream has run the COMPUTE-stream tasks of every block issued before. The candidates
//    are the first unissued block of each queue (PoolBlock::queue) whose trigger has ended (its
//    input has arrived, at the trigger's end; a block without trigger at `open`), and that, if it
//    opens a unit of the in-flight limit, finds fewer than in_flight_limit open. With `free` the
//    end of the COMPUTE stream's last task, the block issued is, at time
//    t = max(free, earliest arrival of a candidate), the candidate that arrived first among those
//    arrived by t, lower queue first on ties. No task of a block starts before its block's issue.
//    Whatever arrives later than t cannot change the choice, so the order is decided as the
//    simulated clock reaches t: by arrivals, contention included. A communicator that blocks of two
//    queues call has its calls numbered in issue order; the ranks of such a communicator decide
//    together (their candidates' arrivals and their COMPUTE streams' ends are the latest among
//    them), so that they issue the same blocks. Program order is the pool's default order: a
//    valid fixed order, which a backend without pools (the emulator) runs as is.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/core/units.hpp"

namespace trainsim::core {

// Parallel axes, in rank-layout order from fastest- to slowest-varying (Megatron's "tp-cp-ep-dp-pp"):
// ranks of a tensor-parallel group are adjacent, so they share a node.
enum class Axis : uint8_t { TENSOR = 0, CONTEXT, EXPERT, DATA, PIPELINE };
inline constexpr int AXIS_COUNT = 5;
std::string_view to_string(Axis a);  // "tensor", "context", "expert", "data", "pipeline"

class ParallelLayout {
 public:
  ParallelLayout() = default;
  // REQUIRES: every size >= 1. Index with static_cast<int>(Axis).
  explicit ParallelLayout(std::array<int, AXIS_COUNT> sizes);

  int size(Axis a) const { return sizes_[static_cast<int>(a)]; }
  const std::array<int, AXIS_COUNT>& sizes() const { return sizes_; }
  int world_size() const { return world_size_; }

  std::array<int, AXIS_COUNT> coords(int rank) const;
  int rank_of(const std::array<int, AXIS_COUNT>& coords) const;
  int coord(int rank, Axis a) const { return (rank / stride_[static_cast<int>(a)]) % size(a); }
  // The rank whose coordinate on `a` is (mine + offset) mod size(a), other coordinates equal.
  int peer(int rank, Axis a, int offset) const;

 private:
  std::array<int, AXIS_COUNT> sizes_{1, 1, 1, 1, 1};
  std::array<int, AXIS_COUNT> stride_{1, 1, 1, 1, 1};
  int world_size_ = 1;
};

// A kind of communicator: the ranks that share all coordinates except those on `axis` and on
// `extra_axes`, restricted to the coordinates in `members` on `axis` (empty: the whole axis).
// E.g. {"tensor", TENSOR} is each rank's tensor-parallel group; {"embedding", PIPELINE, {0, p-1}} joins
// first and last stage (tied embeddings); {"data+expert", DATA, {}, {EXPERT}} reduces dense gradients
// over every replica. `axis` is the one the report attributes the group's traffic to.
//
// `cut` splits `axis` into consecutive blocks of `block` coordinates (hybrid sharding, HSDP:
// parallelism.shard_group): BLOCK keeps the coordinates of the rank's own block (the shard group,
// adjacent ranks), STRIDED those at the rank's position in every block (the replica group, one rank
// of each block). E.g. DATA of size 8 cut in blocks of 4: coordinate 5's BLOCK group is {4, 5, 6, 7},
// its STRIDED group {1, 5}. Every rank is in exactly one group of such a kind; extra_axes are spanned
// whole. REQUIRES: members empty, block dividing the axis's size and the axis not in
// Workload::symmetric_axes when cut is not WHOLE (Workload::validate checks).
enum class AxisCut : uint8_t { WHOLE = 0, BLOCK, STRIDED };
std::string_view to_string(AxisCut c);  // "whole", "block", "strided"

struct GroupKind {
  std::string name;
  Axis axis = Axis::DATA;
  std::vector<int> members;      // REQUIRES: empty when extra_axes is not
  std::vector<Axis> extra_axes;
  AxisCut cut = AxisCut::WHOLE;
  int block = 0;                 // coordinates per block when cut is not WHOLE

  // Ranks of the group of this kind that contains `rank`, in coordinate order. REQUIRES: rank is a
  // member (its coordinate on `axis` is in `members`, or members is empty).
  std::vector<int> ranks_of(const ParallelLayout& layout, int rank) const;
  int size(const ParallelLayout& layout) const;
  bool contains(const ParallelLayout& layout, int rank) const;
};

enum class TaskKind : uint8_t { COMPUTE, COLLECTIVE, SEND, RECV, COPY, MEMORY };

// Streams of one GPU. Communication of each parallel axis gets its own stream so that the report can
// attribute exposed communication. Pipeline traffic has one stream per direction (activations to
// the next stage / from the previous one; gradients the other way): with a single serialized p2p
// stream two neighbouring stages can each wait on the other's send. COPY is the host<->device copy
// engine (and, in generated workloads, every transfer toward the GPU or host memory); COPY_OUT the
// second copy engine, for transfers away from the GPU (device to host, to NVMe), so that both
// directions overlap as on GPUs with two copy engines. HOST is the rank's share of its node's CPUs
// (the CPU optimizer step of an offloaded optimizer). STORAGE is the background writer of checkpoints
// (the flush of a snapshot from host memory to the parallel file system, models/checkpoint.hpp).
enum class Stream : uint8_t {
  COMPUTE = 0, TENSOR_COMM, CONTEXT_COMM, EXPERT_COMM, DATA_COMM, PIPELINE_FORWARD, PIPELINE_BACKWARD, COPY,
  COPY_OUT, HOST, STORAGE
};
inline constexpr int STREAM_COUNT = 11;
std::string_view to_string(Stream s);
// The communication stream of an axis (PIPELINE_FORWARD for the pipeline axis).
Stream comm_stream(Axis a);
// The axis whose traffic a stream carries; false for COMPUTE, COPY, COPY_OUT and HOST.
bool axis_of(Stream s, Axis& out);

// What a compute task is, for choosing its efficiency (sim/engine's compute model).
// ATTENTION is an unfused core attention (score matrix through HBM); FLASH_ATTENTION a fused
// FlashAttention-style kernel (tensor-core bound, its own efficiency).
enum class OpClass : uint8_t { GEMM = 0, ATTENTION, ELEMENTWISE, NORM, EMBEDDING, OPTIMIZER, FLASH_ATTENTION };
inline constexpr int OP_CLASS_COUNT = 7;
std::string_view to_string(OpClass c);

// Which part of training a task belongs to, for the report's breakdown.
enum class Phase : uint8_t { FORWARD = 0, BACKWARD, RECOMPUTE, OPTIMIZER };
inline constexpr int PHASE_COUNT = 4;
std::string_view to_string(Phase p);

enum class CollectiveOp : uint8_t { ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, BROADCAST, REDUCE, ALL_TO_ALL };
inline constexpr int COLLECTIVE_OP_COUNT = 6;
std::string_view to_string(CollectiveOp op);  // "all_reduce", "reduce_scatter", ...
bool parse_collective_op(std::string_view text, CollectiveOp& out);  // the inverse of to_string
// nccl-tests' bus-bandwidth factor (busbw = algbw * factor, algbw = size / time): the fraction of
// `size` that each rank's busiest link carries. all_reduce 2(n-1)/n; all_gather, reduce_scatter and
// all_to_all (n-1)/n; broadcast and reduce 1 (nccl-tests doc/PERFORMANCE.md). REQUIRES: ranks >= 1.
double bus_bandwidth_factor(CollectiveOp op, int ranks);
// Steps of NCCL's ring on `ranks` members, each paying one per-step latency: 2(n-1) for all_reduce
// (reduce-scatter then all-gather), n-1 for the others.
double ring_steps(CollectiveOp op, int ranks);

// The matrix products a GEMM compute task runs, for the compute model's tile and wave quantization
// (sim/engine/compute_model.hpp): `count` independent products [m x k]·[k x n] (a grouped GEMM of
// `count` local experts, m rows each). A forward (or recompute) task runs them; the backward task of
// the same op runs each one's data gradient ([m x n]·[n x k], output m x k) and weight gradient
// ([k x m]·[m x n], output k x n), half of its FLOPs each. count == 0: no shape is known (the
// efficiency then depends on the FLOPs only). The task's `flops` stay the FLOP count of record.
struct GemmShape {
  float m = 0;
  float n = 0;
  float k = 0;
  uint32_t count = 0;
};

// Where a COPY task moves its bytes: between the GPU, its node's host memory and its node's NVMe
// drives (ZeRO-Infinity's NVMe offload stages through host memory: NVMe <-> host <-> GPU).
// Checkpoints (models/checkpoint.hpp) also write to the cluster's parallel file system
// (cluster.storage): from host memory (the flush of a snapshot) or straight from the GPU (a
// synchronous save); these leave the node through its NICs or its storage link.
enum class CopyDirection : uint8_t {
  HOST_TO_DEVICE, DEVICE_TO_HOST, NVME_TO_DEVICE, DEVICE_TO_NVME, NVME_TO_HOST, HOST_TO_NVME, HOST_TO_STORAGE,
  DEVICE_TO_STORAGE
};
inline constexpr int COPY_DIRECTION_COUNT = 8;
std::string_view to_string(CopyDirection d);  // "host_to_device", "device_to_host", "nvme_to_device", ...
// Whether a copy moves data away from the GPU or host memory toward slower storage (the COPY_OUT
// stream's direction): DEVICE_TO_HOST, DEVICE_TO_NVME, HOST_TO_NVME, HOST_TO_STORAGE, DEVICE_TO_STORAGE.
bool outbound(CopyDirection d);
// Whether a copy goes to the parallel file system: HOST_TO_STORAGE, DEVICE_TO_STORAGE.
bool to_storage(CopyDirection d);

// Which memory a MEMORY task allocates or frees.
enum class MemorySpace : uint8_t { DEVICE, HOST };

// The sparse kernel a GEMM task runs on its pruned weight (optimizations.pruning; NONE: a dense GEMM,
// also for pruned weights whose zeros are multiplied as such). The task's `flops` stay the dense
// count; the compute model (sim/engine/compute_model.hpp) turns the kind, Task::density and
// Task::sparse_block into a speedup of the passes that can use the kernel:
//   STRUCTURED_2_4  2:4 weights on sparse tensor cores: forward and data gradient (transposable
//                   masks, as PyTorch's SemiSparseLinear / xFormers sparsify24 build them); the weight
//                   gradient is a dense GEMM
//   UNSTRUCTURED    a sparse kernel for unstructured weights: SpMM forward and data gradient, SDDMM
//                   weight gradient (only the kept entries), at the profile's efficiency curve
//   BLOCK           a block-sparse kernel on sparse_block x sparse_block blocks: the three passes
enum class GemmSparsity : uint8_t { NONE = 0, STRUCTURED_2_4, UNSTRUCTURED, BLOCK };
std::string_view to_string(GemmSparsity s);  // "none", "2:4", "unstructured", "block"

// Which part of a backward pass a COMPUTE task of phase BACKWARD runs. BOTH: the whole backward (a
// GEMM's data gradient and weight gradient, half of its FLOPs each). A zero-bubble schedule (Qi et al.
// 2024) splits it: INPUT is the input-gradient pass B (a GEMM's data gradient [m x n]·[n x k]; every
// op without weights), WEIGHT the weight-gradient pass W (a GEMM's [k x m]·[m x n]); the task's
// `flops` are then those of that part alone.
enum class BackwardPart : uint8_t { BOTH = 0, INPUT, WEIGHT };

enum class Precision : uint8_t { FP32, TF32, BF16, FP16, FP8 };
inline constexpr int PRECISION_COUNT = 5;
std::string_view to_string(Precision p);

struct Task {
  TaskKind kind = TaskKind::COMPUTE;
  Stream stream = Stream::COMPUTE;
  Phase phase = Phase::FORWARD;
  OpClass op_class = OpClass::GEMM;             // COMPUTE
  CollectiveOp collective = CollectiveOp::ALL_REDUCE;  // COLLECTIVE
  CopyDirection copy = CopyDirection::HOST_TO_DEVICE;  // COPY
  Axis peer_axis = Axis::PIPELINE;              // SEND/RECV: the peer is layout.peer(rank, peer_axis, peer_offset)
  MemorySpace memory_space = MemorySpace::DEVICE;  // MEMORY: device memory, or the node's host memory (not
                                                // timing: left out of timing_fingerprint)
  int16_t peer_offset = 0;
  uint8_t tag = 0;                              // SEND/RECV: matching channel (see above)
  BackwardPart gradient = BackwardPart::BOTH;   // COMPUTE, phase BACKWARD: which part (above)
  uint16_t group = 0;                           // COLLECTIVE: index into Workload::groups
  uint16_t layer = 0;                           // for labels and timelines (0 when not a layer op)
  uint32_t micro_batch = 0;
  uint32_t name = 0;                            // index into Workload::names, e.g. "attention"
  double flops = 0;                             // COMPUTE: floating-point operations
  double seconds = 0;                           // COMPUTE, COPY: a measured duration (trace replay); when
                                                // > 0 it replaces the compute model's max(FLOPs, bytes)
                                                // time, or the copy's bytes over its route
  double bytes = 0;                             // COMPUTE: HBM traffic; COLLECTIVE: buffer size per rank
                                                // (nccl-tests' "size"); SEND/RECV/COPY: payload;
                                                // MEMORY: allocation (> 0) or free (< 0)
  GemmShape gemm;                               // COMPUTE, GEMM class: its shape (count 0: unknown)
  Precision precision = Precision::BF16;        // COMPUTE: operand precision, when has_precision; else the
  bool has_precision = false;                   // workload's (FP8 training keeps attention and the
                                                // output layer in BF16: Transformer Engine)
  GemmSparsity sparsity = GemmSparsity::NONE;   // COMPUTE, GEMM class: sparse kernel on its weight
  uint8_t sparse_block = 0;                     // BLOCK: block size (2-128)
  uint32_t dep_begin = 0;                       // dependencies: Program::deps[dep_begin, +dep_count)
  uint32_t dep_count = 0;
  float density = 1;                            // sparsity != NONE: kept fraction of the weight, in (0, 1]
};

inline constexpr uint32_t NO_TASK = UINT32_MAX;
inline constexpr uint32_t LOOSE_TASK = UINT32_MAX;  // ReadyPool::block_of: in no block

// A block of a ready pool (the READY POOL semantics above): one pipeline pass.
struct PoolBlock {
  uint32_t trigger = NO_TASK;  // the task whose end is the block's input arrival (a loose receive, or a task
                               // of another block); NO_TASK: its input is there when the pool opens
  uint8_t queue = 0;           // blocks of one queue are issued in program order; ties: lower queue first
  int8_t in_flight = 0;        // +1: opens a unit of the pool's in-flight limit; -1: closes one; 0: neither
};

// The tasks of a program whose order the executor picks at run time (see READY POOL above).
// E.g. a pipeline stage under AxoNN's execution: a block per forward and per backward pass (queues:
// backward 0, forward 1), forwards opening a micro-batch in flight and backwards closing it, each
// triggered by the loose receive of its activations or gradients.
struct ReadyPool {
  uint32_t begin = 0;              // the pool is Program::tasks[begin, end)
  uint32_t end = 0;
  std::vector<uint32_t> block_of;  // per task of [begin, end): its index into `blocks`, or LOOSE_TASK
  std::vector<PoolBlock> blocks;   // each holds at least one task on stream COMPUTE
  uint32_t in_flight_limit = 1;    // most blocks opened and not yet closed at once, >= 1

  bool empty() const { return blocks.empty(); }
  // Index into `blocks` of task `task`, or LOOSE_TASK (also for tasks outside [begin, end)).
  uint32_t block(uint32_t task) const {
    return task >= begin && task < end ? block_of[task - begin] : LOOSE_TASK;
  }
};

struct Program {
  std::string name;            // e.g. "stage 3"
  std::vector<Task> tasks;
  std::vector<uint32_t> deps;  // flattened dependency lists of the tasks
  Bytes static_memory;         // resident for the whole iteration (weights, gradients, optimizer states, buffers)
  Bytes static_host_memory;    // host memory one rank holds for the whole iteration (offloaded model states)
  ReadyPool pool;              // empty: every task in program order
  // The node pool whose GPUs run the program (network::ClusterConfig::pools, by index): a backend
  // prices its compute with that pool's GPU and device profile. 0 on a cluster of one GPU type.
  uint8_t node_pool = 0;

  // Appends a task with the given dependencies (indices of earlier tasks); returns its index.
  uint32_t add(Task task, std::initializer_list<uint32_t> depends_on = {});
  uint32_t add(Task task, const std::vector<uint32_t>& depends_on);
  const uint32_t* deps_of(const Task& t) const { return deps.data() + t.dep_begin; }
  // Puts the tasks from `first` on in a new issue order: order[k] is the old index of the task that
  // takes index first + k. Dependencies are renumbered; returns new_index[old - first].
  // REQUIRES: order is a permutation of [first, tasks.size()) that keeps every dependency earlier
  // than its task (checked: InternalError otherwise); no task before `first` depends on the tail;
  // the tail holds no ready pool's tasks (checked).
  std::vector<uint32_t> reorder_tail(uint32_t first, const std::vector<uint32_t>& order);
};

struct Workload {
  ParallelLayout layout;
  Precision precision = Precision::BF16;  // of compute tasks (optimizer tasks are memory-bound anyway)
  std::vector<GroupKind> groups;
  std::vector<Program> programs;
  std::vector<uint32_t> program_of_rank;  // size world_size
  std::vector<std::string> names;         // task name table
  // Axes along which every rank runs the same program and sees the same costs: a backend may
  // simulate one representative per class of such ranks (coordinate 0 on these axes).
  std::array<bool, AXIS_COUNT> symmetric_axes{};
  // One iteration is a period of a steady state in which the pipeline never drains (PipeDream,
  // PipeDream-2BW, ZB-H2: models/strategy.hpp steady_state_schedule): a backend measures each rank
  // from the start of its first COMPUTE-stream compute task to the end of its last COMPUTE-stream task,
  // the iteration time being the longest such span (ranks of later stages start later in every period, by the same skew).
  bool steady_state = false;

  // Interns a task name; returns its index (the first equal entry of `names`). Constant time: a
  // layer graph of 100,000 layers names as many tasks, which a linear search made quadratic.
  uint32_t intern(std::string_view name);
  const Program& program_of(int rank) const { return programs[program_of_rank[static_cast<size_t>(rank)]]; }
  size_t task_count() const;  // over programs (templates), not ranks
  // A 64-bit FNV-1a hash of everything a backend times: the layout, groups, precision, symmetric
  // axes, which program each rank runs, and every task's kind, stream, class, sizes, peers and
  // dependencies. Memory (MEMORY tasks' bytes, static_memory) and names are left out, so two
  // workloads with equal fingerprints simulate to the same time on the same cluster, whatever
  // their memory (search re-checks one of them with SimGrid).
  uint64_t timing_fingerprint() const;
  // Throws InternalError if a dependency points forward, a group index or peer is invalid,
  // program_of_rank does not cover the layout, or a ready pool is malformed: a block without a
  // COMPUTE-stream task, a trigger in its own block, a send/recv channel (kind, peer, tag) that
  // loose tasks and blocks share or that blocks of two queues share (its order would depend on the
  // issue order on one side only). Builders call it; tests rely on it.
  void validate() const;

 private:
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // intern's index of `names`: the entries before names_indexed_ (names written directly are indexed
  // on the next intern).
  std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> name_index_;
  size_t names_indexed_ = 0;
};

}  // namespace trainsim::core
