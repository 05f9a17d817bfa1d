#include "sim/core/workload.hpp"

#include <type_traits>

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <tuple>

#include "sim/core/error.hpp"

namespace trainsim::core {

std::string_view to_string(Axis a) {
  switch (a) {
    case Axis::TENSOR: return "tensor";
    case Axis::CONTEXT: return "context";
    case Axis::EXPERT: return "expert";
    case Axis::DATA: return "data";
    case Axis::PIPELINE: return "pipeline";
  }
  return "?";
}

std::string_view to_string(AxisCut c) {
  switch (c) {
    case AxisCut::WHOLE: return "whole";
    case AxisCut::BLOCK: return "block";
    case AxisCut::STRIDED: return "strided";
  }
  return "?";
}

std::string_view to_string(Stream s) {
  switch (s) {
    case Stream::COMPUTE: return "compute";
    case Stream::TENSOR_COMM: return "tensor_comm";
    case Stream::CONTEXT_COMM: return "context_comm";
    case Stream::EXPERT_COMM: return "expert_comm";
    case Stream::DATA_COMM: return "data_comm";
    case Stream::PIPELINE_FORWARD: return "pipeline_forward";
    case Stream::PIPELINE_BACKWARD: return "pipeline_backward";
    case Stream::COPY: return "copy";
    case Stream::COPY_OUT: return "copy_out";
    case Stream::HOST: return "host";
    case Stream::STORAGE: return "storage";
  }
  return "?";
}

Stream comm_stream(Axis a) {
  switch (a) {
    case Axis::TENSOR: return Stream::TENSOR_COMM;
    case Axis::CONTEXT: return Stream::CONTEXT_COMM;
    case Axis::EXPERT: return Stream::EXPERT_COMM;
    case Axis::DATA: return Stream::DATA_COMM;
    case Axis::PIPELINE: return Stream::PIPELINE_FORWARD;
  }
  return Stream::COMPUTE;
}

bool axis_of(Stream s, Axis& out) {
  switch (s) {
    case Stream::TENSOR_COMM: out = Axis::TENSOR; return true;
    case Stream::CONTEXT_COMM: out = Axis::CONTEXT; return true;
    case Stream::EXPERT_COMM: out = Axis::EXPERT; return true;
    case Stream::DATA_COMM: out = Axis::DATA; return true;
    case Stream::PIPELINE_FORWARD:
    case Stream::PIPELINE_BACKWARD: out = Axis::PIPELINE; return true;
    case Stream::COMPUTE:
    case Stream::COPY:
    case Stream::COPY_OUT:
    case Stream::HOST:
    case Stream::STORAGE: return false;
  }
  return false;
}

std::string_view to_string(CopyDirection d) {
  switch (d) {
    case CopyDirection::HOST_TO_DEVICE: return "host_to_device";
    case CopyDirection::DEVICE_TO_HOST: return "device_to_host";
    case CopyDirection::NVME_TO_DEVICE: return "nvme_to_device";
    case CopyDirection::DEVICE_TO_NVME: return "device_to_nvme";
    case CopyDirection::NVME_TO_HOST: return "nvme_to_host";
    case CopyDirection::HOST_TO_NVME: return "host_to_nvme";
    case CopyDirection::HOST_TO_STORAGE: return "host_to_storage";
    case CopyDirection::DEVICE_TO_STORAGE: return "device_to_storage";
  }
  return "?";
}

std::string_view to_string(GemmSparsity s) {
  switch (s) {
    case GemmSparsity::NONE: return "none";
    case GemmSparsity::STRUCTURED_2_4: return "2:4";
    case GemmSparsity::UNSTRUCTURED: return "unstructured";
    case GemmSparsity::BLOCK: return "block";
  }
  return "?";
}

bool outbound(CopyDirection d) {
  return d == CopyDirection::DEVICE_TO_HOST || d == CopyDirection::DEVICE_TO_NVME || d == CopyDirection::HOST_TO_NVME ||
         to_storage(d);
}

bool to_storage(CopyDirection d) {
  return d == CopyDirection::HOST_TO_STORAGE || d == CopyDirection::DEVICE_TO_STORAGE;
}

// A task is 80 bytes (the sparse kernel fields sit in what was padding): workload memory grows by
// about TASK_BYTES per task (sim/plan/scenario.hpp), so keep it from growing by accident.
static_assert(sizeof(Task) <= 80, "Task grew: update TASK_BYTES and the max_tasks documentation");

std::string_view to_string(OpClass c) {
  switch (c) {
    case OpClass::GEMM: return "gemm";
    case OpClass::ATTENTION: return "attention";
    case OpClass::ELEMENTWISE: return "elementwise";
    case OpClass::NORM: return "norm";
    case OpClass::EMBEDDING: return "embedding";
    case OpClass::OPTIMIZER: return "optimizer";
    case OpClass::FLASH_ATTENTION: return "flash_attention";
  }
  return "?";
}

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::FORWARD: return "forward";
    case Phase::BACKWARD: return "backward";
    case Phase::RECOMPUTE: return "recompute";
    case Phase::OPTIMIZER: return "optimizer";
  }
  return "?";
}

std::string_view to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::ALL_REDUCE: return "all_reduce";
    case CollectiveOp::REDUCE_SCATTER: return "reduce_scatter";
    case CollectiveOp::ALL_GATHER: return "all_gather";
    case CollectiveOp::BROADCAST: return "broadcast";
    case CollectiveOp::REDUCE: return "reduce";
    case CollectiveOp::ALL_TO_ALL: return "all_to_all";
  }
  return "?";
}

bool parse_collective_op(std::string_view text, CollectiveOp& out) {
  for (int o = 0; o < COLLECTIVE_OP_COUNT; ++o) {
    if (text == to_string(static_cast<CollectiveOp>(o))) {
      out = static_cast<CollectiveOp>(o);
      return true;
    }
  }
  return false;
}

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::TF32: return "tf32";
    case Precision::BF16: return "bf16";
    case Precision::FP16: return "fp16";
    case Precision::FP8: return "fp8";
  }
  return "?";
}

double ring_steps(CollectiveOp op, int ranks) { return (op == CollectiveOp::ALL_REDUCE ? 2.0 : 1.0) * (ranks - 1); }

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  TRAINSIM_CHECK(ranks >= 1, "a communicator has at least one rank");
  const double n = ranks;
  switch (op) {
    case CollectiveOp::ALL_REDUCE: return 2.0 * (n - 1) / n;
    case CollectiveOp::REDUCE_SCATTER:
    case CollectiveOp::ALL_GATHER:
    case CollectiveOp::ALL_TO_ALL: return (n - 1) / n;
    case CollectiveOp::BROADCAST:
    case CollectiveOp::REDUCE: return 1.0;
  }
  return 1.0;
}

ParallelLayout::ParallelLayout(std::array<int, AXIS_COUNT> sizes) : sizes_(sizes) {
  int stride = 1;
  for (int i = 0; i < AXIS_COUNT; ++i) {
    TRAINSIM_CHECK(sizes_[static_cast<size_t>(i)] >= 1, "parallel sizes must be positive");
    stride_[static_cast<size_t>(i)] = stride;
    stride *= sizes_[static_cast<size_t>(i)];
  }
  world_size_ = stride;
}

std::array<int, AXIS_COUNT> ParallelLayout::coords(int rank) const {
  std::array<int, AXIS_COUNT> c{};
  for (int i = 0; i < AXIS_COUNT; ++i) c[static_cast<size_t>(i)] = coord(rank, static_cast<Axis>(i));
  return c;
}

int ParallelLayout::rank_of(const std::array<int, AXIS_COUNT>& coords) const {
  int rank = 0;
  for (int i = 0; i < AXIS_COUNT; ++i) rank += coords[static_cast<size_t>(i)] * stride_[static_cast<size_t>(i)];
  return rank;
}

int ParallelLayout::peer(int rank, Axis a, int offset) const {
  const int n = size(a);
  const int c = coord(rank, a);
  const int target = ((c + offset) % n + n) % n;
  return rank + (target - c) * stride_[static_cast<int>(a)];
}

namespace {
// A cut axis (GroupKind::cut) splits into whole blocks, on a kind without a member subset.
void check_cut(const GroupKind& g, const ParallelLayout& layout) {
  TRAINSIM_CHECK(g.cut == AxisCut::WHOLE || (g.members.empty() && g.block >= 1 && layout.size(g.axis) % g.block == 0),
                 fmt::format("group kind {} cuts the {} axis of size {} in blocks of {}", g.name, to_string(g.axis),
                             layout.size(g.axis), g.block));
}
}  // namespace

std::vector<int> GroupKind::ranks_of(const ParallelLayout& layout, int rank) const {
  TRAINSIM_CHECK(contains(layout, rank), fmt::format("rank {} is not in a group of kind {}", rank, name));
  TRAINSIM_CHECK(members.empty() || extra_axes.empty(), "a member subset only applies to single-axis groups");
  check_cut(*this, layout);
  std::vector<int> out;
  if (members.empty()) {
    // Every combination of coordinates on the spanned axes, `axis` fastest: on `axis`, `count`
    // coordinates `step` apart from `first`.
    const int mine = layout.coord(rank, axis);
    int first = 0, count = layout.size(axis), step = 1;
    if (cut == AxisCut::BLOCK) {
      first = mine / block * block;
      count = block;
    } else if (cut == AxisCut::STRIDED) {
      first = mine % block;
      count = layout.size(axis) / block;
      step = block;
    }
    std::array<int, AXIS_COUNT> base = layout.coords(rank);
    base[static_cast<size_t>(axis)] = first;
    for (Axis e : extra_axes) base[static_cast<size_t>(e)] = 0;
    out.push_back(layout.rank_of(base));
    auto span = [&](Axis a, int n_coords, int stride) {
      const size_t n = out.size();
      for (int c = 1; c < n_coords; ++c) {
        for (size_t i = 0; i < n; ++i) out.push_back(layout.peer(out[i], a, c * stride));
      }
    };
    span(axis, count, step);
    for (Axis e : extra_axes) span(e, layout.size(e), 1);
    std::sort(out.begin(), out.end());
  } else {
    const int mine = layout.coord(rank, axis);
    out.reserve(members.size());
    for (int c : members) out.push_back(layout.peer(rank, axis, c - mine));
  }
  return out;
}

int GroupKind::size(const ParallelLayout& layout) const {
  if (!members.empty()) return static_cast<int>(members.size());
  int n = cut == AxisCut::BLOCK ? block : cut == AxisCut::STRIDED ? layout.size(axis) / block : layout.size(axis);
  for (Axis e : extra_axes) n *= layout.size(e);
  return n;
}

bool GroupKind::contains(const ParallelLayout& layout, int rank) const {
  if (members.empty()) return true;
  return std::find(members.begin(), members.end(), layout.coord(rank, axis)) != members.end();
}

uint32_t Program::add(Task task, std::initializer_list<uint32_t> depends_on) {
  task.dep_begin = static_cast<uint32_t>(deps.size());
  task.dep_count = static_cast<uint32_t>(depends_on.size());
  deps.insert(deps.end(), depends_on.begin(), depends_on.end());
  tasks.push_back(task);
  return static_cast<uint32_t>(tasks.size() - 1);
}

uint32_t Program::add(Task task, const std::vector<uint32_t>& depends_on) {
  task.dep_begin = static_cast<uint32_t>(deps.size());
  task.dep_count = static_cast<uint32_t>(depends_on.size());
  deps.insert(deps.end(), depends_on.begin(), depends_on.end());
  tasks.push_back(task);
  return static_cast<uint32_t>(tasks.size() - 1);
}

std::vector<uint32_t> Program::reorder_tail(uint32_t first, const std::vector<uint32_t>& order) {
  const size_t n = tasks.size();
  TRAINSIM_CHECK(first <= n && order.size() == n - first, fmt::format("{}: reorder of {} tasks from {} of {}", name,
                                                                      order.size(), first, n));
  TRAINSIM_CHECK(pool.empty() || pool.end <= first, fmt::format("{}: reorder of a ready pool's tasks", name));
  std::vector<uint32_t> moved(order.size(), UINT32_MAX);
  for (size_t k = 0; k < order.size(); ++k) {
    TRAINSIM_CHECK(order[k] >= first && order[k] < n && moved[order[k] - first] == UINT32_MAX,
                   fmt::format("{}: the new order is not a permutation of the tail", name));
    moved[order[k] - first] = static_cast<uint32_t>(first + k);
  }
  std::vector<Task> tail;
  tail.reserve(order.size());
  for (uint32_t old : order) tail.push_back(tasks[old]);
  for (size_t k = 0; k < tail.size(); ++k) {
    const Task& t = tail[k];
    for (uint32_t d = t.dep_begin; d < t.dep_begin + t.dep_count; ++d) {
      if (deps[d] >= first) deps[d] = moved[deps[d] - first];
      TRAINSIM_CHECK(deps[d] < first + k, fmt::format("{}: the new order puts a task before its dependency", name));
    }
    tasks[first + k] = t;
  }
  return moved;
}

uint32_t Workload::intern(std::string_view name) {
  if (names_indexed_ > names.size()) {  // names shrank: index them again
    name_index_.clear();
    names_indexed_ = 0;
  }
  for (; names_indexed_ < names.size(); ++names_indexed_) {
    name_index_.try_emplace(names[names_indexed_], static_cast<uint32_t>(names_indexed_));  // the first one wins
  }
  if (auto it = name_index_.find(name); it != name_index_.end()) return it->second;
  names.emplace_back(name);
  name_index_.emplace(names.back(), static_cast<uint32_t>(names.size() - 1));
  names_indexed_ = names.size();
  return static_cast<uint32_t>(names.size() - 1);
}

size_t Workload::task_count() const {
  size_t n = 0;
  for (const Program& p : programs) n += p.tasks.size();
  return n;
}

namespace {

class Fnv1a {
 public:
  template <class T>
  void add(const T& value) {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>);
    const auto* bytes = reinterpret_cast<const unsigned char*>(&value);
    for (size_t i = 0; i < sizeof(T); ++i) hash_ = (hash_ ^ bytes[i]) * 1099511628211ull;
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 14695981039346656037ull;
};

}  // namespace

namespace {

void validate_pool(const Program& prog) {
  const ReadyPool& pool = prog.pool;
  if (pool.empty()) return;
  TRAINSIM_CHECK(pool.begin <= pool.end && pool.end <= prog.tasks.size() && pool.block_of.size() == pool.end - pool.begin,
                 fmt::format("{}: the ready pool's range does not fit its tasks", prog.name));
  TRAINSIM_CHECK(pool.in_flight_limit >= 1, fmt::format("{}: a ready pool's in-flight limit must be at least 1", prog.name));
  std::vector<bool> computes(pool.blocks.size(), false);
  // A send/recv channel as the program spells it, and the queue of the blocks using it (-1: loose).
  std::map<std::tuple<TaskKind, Axis, int16_t, uint8_t>, int> channels;
  for (uint32_t i = pool.begin; i < pool.end; ++i) {
    const uint32_t b = pool.block(i);
    TRAINSIM_CHECK(b == LOOSE_TASK || b < pool.blocks.size(), fmt::format("{}: task {} names block {}", prog.name, i, b));
    const Task& t = prog.tasks[i];
    if (b != LOOSE_TASK && t.stream == Stream::COMPUTE) computes[b] = true;
    if (t.kind != TaskKind::SEND && t.kind != TaskKind::RECV) continue;
    const int queue = b == LOOSE_TASK ? -1 : pool.blocks[b].queue;
    const auto [it, added] = channels.emplace(std::make_tuple(t.kind, t.peer_axis, t.peer_offset, t.tag), queue);
    TRAINSIM_CHECK(added || it->second == queue,
                   fmt::format("{}: task {}: a send/recv channel used by two queues of a ready pool, or by a block "
                               "and a loose task",
                               prog.name, i));
  }
  for (size_t b = 0; b < pool.blocks.size(); ++b) {
    const PoolBlock& block = pool.blocks[b];
    TRAINSIM_CHECK(computes[b], fmt::format("{}: block {} of the ready pool has no COMPUTE-stream task", prog.name, b));
    TRAINSIM_CHECK(block.in_flight >= -1 && block.in_flight <= 1,
                   fmt::format("{}: block {} changes the in-flight count by {}", prog.name, b, block.in_flight));
    TRAINSIM_CHECK(block.trigger == NO_TASK || (block.trigger < prog.tasks.size() && pool.block(block.trigger) != b),
                   fmt::format("{}: block {} has trigger {}", prog.name, b, block.trigger));
  }
}

}  // namespace

uint64_t Workload::timing_fingerprint() const {
  static_assert(sizeof(Task) == 80, "Task changed: add its new timing fields to timing_fingerprint");
  Fnv1a h;
  for (int size : layout.sizes()) h.add(size);
  h.add(precision);
  for (bool s : symmetric_axes) h.add(s);
  h.add(steady_state);
  h.add(groups.size());
  for (const GroupKind& g : groups) {
    h.add(g.axis);
    h.add(g.members.size());
    for (int m : g.members) h.add(m);
    h.add(g.extra_axes.size());
    for (Axis a : g.extra_axes) h.add(a);
    h.add(g.cut);
    h.add(g.block);
  }
  for (uint32_t p : program_of_rank) h.add(p);
  h.add(programs.size());
  for (const Program& p : programs) {
    if (p.node_pool != 0) h.add(p.node_pool);  // single-type workloads keep their fingerprints
    h.add(p.tasks.size());
    for (const Task& t : p.tasks) {
      h.add(t.kind);
      h.add(t.stream);
      h.add(t.phase);
      h.add(t.op_class);
      h.add(t.collective);
      h.add(t.copy);
      h.add(t.peer_axis);
      h.add(t.peer_offset);
      h.add(t.tag);
      h.add(t.gradient);
      h.add(t.group);
      h.add(t.flops);
      h.add(t.seconds);
      h.add(t.kind == TaskKind::MEMORY ? 0.0 : t.bytes);
      h.add(t.gemm.m);
      h.add(t.gemm.n);
      h.add(t.gemm.k);
      h.add(t.gemm.count);
      h.add(t.precision);
      h.add(t.has_precision);
      h.add(t.sparsity);
      h.add(t.sparse_block);
      h.add(t.density);
      h.add(t.dep_begin);
      h.add(t.dep_count);
    }
    h.add(p.deps.size());
    for (uint32_t d : p.deps) h.add(d);
    h.add(p.pool.begin);
    h.add(p.pool.end);
    for (uint32_t b : p.pool.block_of) h.add(b);
    h.add(p.pool.blocks.size());
    for (const PoolBlock& b : p.pool.blocks) {
      h.add(b.trigger);
      h.add(b.queue);
      h.add(b.in_flight);
    }
    h.add(p.pool.in_flight_limit);
  }
  return h.value();
}

void Workload::validate() const {
  TRAINSIM_CHECK(program_of_rank.size() == static_cast<size_t>(layout.world_size()),
                 fmt::format("program_of_rank has {} entries for {} ranks", program_of_rank.size(),
                             layout.world_size()));
  for (uint32_t p : program_of_rank) TRAINSIM_CHECK(p < programs.size(), "program index out of range");
  for (const GroupKind& g : groups) {
    check_cut(g, layout);
    // A backend folding a symmetric axis simulates one representative's group and mirrors it along
    // the other axes only: the other blocks' concurrent traffic would be lost.
    TRAINSIM_CHECK(g.cut == AxisCut::WHOLE || !symmetric_axes[static_cast<size_t>(g.axis)],
                   fmt::format("group kind {} cuts the {} axis, which the workload declares symmetric", g.name,
                               to_string(g.axis)));
  }
  for (const Program& prog : programs) {
    for (size_t i = 0; i < prog.tasks.size(); ++i) {
      const Task& t = prog.tasks[i];
      TRAINSIM_CHECK(t.dep_begin + t.dep_count <= prog.deps.size(), "dependency range out of bounds");
      for (uint32_t d = 0; d < t.dep_count; ++d) {
        TRAINSIM_CHECK(prog.deps[t.dep_begin + d] < i,
                       fmt::format("{}: task {} depends on later task {}", prog.name, i, prog.deps[t.dep_begin + d]));
      }
      TRAINSIM_CHECK(t.name < names.size() || names.empty(), "task name index out of range");
      if (t.kind == TaskKind::COLLECTIVE) {
        TRAINSIM_CHECK(t.group < groups.size(), fmt::format("{}: task {} names group {}", prog.name, i, t.group));
      }
      TRAINSIM_CHECK(t.bytes >= 0 || t.kind == TaskKind::MEMORY, "negative byte count");
      TRAINSIM_CHECK(t.flops >= 0, "negative FLOP count");
      TRAINSIM_CHECK(t.seconds >= 0, "negative measured duration");
    }
    validate_pool(prog);
  }
}

}  // namespace trainsim::core
