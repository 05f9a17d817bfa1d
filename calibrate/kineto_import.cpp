#include "calibrate/kineto_import.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <unordered_map>
#include <fmt/format.h>
#include <string_view>
#include <tuple>
#include <utility>

#include "calibrate/op_costs.hpp"
#include "calibrate/trace_summary.hpp"
#include "sim/core/error.hpp"
#include "sim/core/trace_io.hpp"

namespace trainsim::calibrate {
namespace {

using core::InputError;
using core::Json;

// Bounds of an event's times (EventReader::interval): ts up to year 2096 in epoch microseconds, so
// that ts + dur in nanoseconds stays below 2^63.
constexpr double MAX_TS_US = 4e15;
constexpr double MAX_DUR_US = 1e12;

// A JSON number as an integer: a float must be finite and within int64 (a cast outside is undefined
// behaviour); anything else is an input error at `pointer`.
int64_t integer_value(const Json& v, const std::string& origin, const std::string& pointer) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
  if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
  }
  throw InputError::expected(origin, pointer, "an integer within 64 bits", core::describe_json(v));
}

// Reading one event: every accessor names the event's JSON pointer in its errors.
class EventReader {
 public:
  EventReader(const Json& event, const std::string& origin, std::string pointer, uint64_t base_ns)
      : event_(event), origin_(origin), pointer_(std::move(pointer)), base_ns_(base_ns) {}

  std::string name() const { return string_at(event_, "name"); }
  const Json& args() const {
    static const Json EMPTY = Json::object();
    const auto it = event_.find("args");
    return it != event_.end() && it->is_object() ? *it : EMPTY;
  }
  // "ts" and "ts" + "dur" in trace-clock nanoseconds.
  std::pair<uint64_t, uint64_t> interval() const {
    const double ts = required_number("ts");
    const double dur = event_.contains("dur") ? required_number("dur") : 0.0;
    if (ts < 0 || dur < 0) {
      throw InputError(origin_, pointer_, fmt::format("negative time: ts {} dur {}", ts, dur));
    }
    // Kineto's clock is microseconds since the epoch or since the process started; beyond these
    // bounds the nanosecond conversion would overflow (a header is never trusted).
    if (ts > MAX_TS_US || dur > MAX_DUR_US) {
      throw InputError(origin_, pointer_,
                       fmt::format("expected ts at most {:.0e} us and dur at most {:.0e} us (11.6 days), found ts {} dur {}",
                                   MAX_TS_US, MAX_DUR_US, ts, dur));
    }
    const uint64_t start = base_ns_ + static_cast<uint64_t>(std::llround(ts * 1000.0));
    return {start, start + static_cast<uint64_t>(std::llround(dur * 1000.0))};
  }
  int64_t arg_integer(const char* key, int64_t fallback) const {
    const Json& a = args();
    const auto it = a.find(key);
    if (it == a.end() || !it->is_number()) return fallback;
    return integer_value(*it, origin_, core::append_pointer(core::append_pointer(pointer_, "args"), key));
  }
  std::string arg_string(const char* key) const { return string_at(args(), key); }

 private:
  static std::string string_at(const Json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  }
  double required_number(const char* key) const {
    const auto it = event_.find(key);
    if (it == event_.end() || !it->is_number()) {
      throw InputError::expected(origin_, core::append_pointer(pointer_, key), "a number (microseconds)",
                                 it == event_.end() ? "nothing" : core::describe_json(*it));
    }
    return it->get<double>();
  }

  const Json& event_;
  const std::string& origin_;
  std::string pointer_;
  uint64_t base_ns_;
};

uint32_t u32(int64_t v) { return v > 0 ? static_cast<uint32_t>(v) : 0; }
uint64_t u64(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

// c10d's collective names (Kineto's "Collective name" arg).
trace::CollectiveOp collective_op(const std::string& name) {
  static const std::pair<std::string_view, trace::CollectiveOp> NAMES[] = {
      {"allreduce", trace::COLLECTIVE_OP_ALL_REDUCE}, {"allreduce_coalesced", trace::COLLECTIVE_OP_ALL_REDUCE},
      {"reduce_scatter", trace::COLLECTIVE_OP_REDUCE_SCATTER},
      {"_reduce_scatter_base", trace::COLLECTIVE_OP_REDUCE_SCATTER},
      {"reduce_scatter_tensor_coalesced", trace::COLLECTIVE_OP_REDUCE_SCATTER},
      {"allgather", trace::COLLECTIVE_OP_ALL_GATHER}, {"_allgather_base", trace::COLLECTIVE_OP_ALL_GATHER},
      {"all_gather", trace::COLLECTIVE_OP_ALL_GATHER}, {"allgather_coalesced", trace::COLLECTIVE_OP_ALL_GATHER},
      {"allgather_into_tensor_coalesced", trace::COLLECTIVE_OP_ALL_GATHER},
      {"broadcast", trace::COLLECTIVE_OP_BROADCAST}, {"reduce", trace::COLLECTIVE_OP_REDUCE},
      {"all_to_all", trace::COLLECTIVE_OP_ALL_TO_ALL}, {"alltoall", trace::COLLECTIVE_OP_ALL_TO_ALL},
      {"alltoall_base", trace::COLLECTIVE_OP_ALL_TO_ALL}};
  for (const auto& [key, op] : NAMES) {
    if (name == key) return op;
  }
  return trace::COLLECTIVE_OP_UNKNOWN;
}

// PyTorch scalar type names (Kineto's "dtype" arg) and their sizes.
std::pair<trace::DataType, uint32_t> data_type(const std::string& name) {
  static const std::tuple<std::string_view, trace::DataType, uint32_t> TYPES[] = {
      {"Float", trace::DATA_TYPE_FLOAT32, 4}, {"BFloat16", trace::DATA_TYPE_BFLOAT16, 2},
      {"Half", trace::DATA_TYPE_FLOAT16, 2}, {"Double", trace::DATA_TYPE_FLOAT64, 8},
      {"Int", trace::DATA_TYPE_INT32, 4}, {"Long", trace::DATA_TYPE_INT64, 8}, {"Byte", trace::DATA_TYPE_UINT8, 1},
      {"Char", trace::DATA_TYPE_INT8, 1}, {"Bool", trace::DATA_TYPE_UINT8, 1},
      {"Float8_e4m3fn", trace::DATA_TYPE_FLOAT8_E4M3, 1}, {"Float8_e5m2", trace::DATA_TYPE_FLOAT8_E5M2, 1}};
  for (const auto& [key, type, size] : TYPES) {
    if (name == key) return {type, size};
  }
  return {trace::DATA_TYPE_UNKNOWN, 0};
}

// "Process Group Ranks": a JSON array, or (as Kineto writes it) a string "[0, 1, 2]".
std::vector<int32_t> group_ranks(const Json& args) {
  const auto it = args.find("Process Group Ranks");
  if (it == args.end()) return {};
  Json list = *it;
  if (it->is_string()) list = Json::parse(it->get<std::string>(), nullptr, false);
  std::vector<int32_t> out;
  if (!list.is_array()) return out;
  for (const Json& r : list) {
    if (r.is_number_integer()) out.push_back(r.get<int32_t>());
  }
  return out;
}

trace::MemoryKind memory_kind(std::string_view word) {
  if (word == "Pageable") return trace::MEMORY_KIND_PAGEABLE;
  if (word == "Pinned") return trace::MEMORY_KIND_PINNED;
  if (word == "Device") return trace::MEMORY_KIND_DEVICE;
  if (word == "Array") return trace::MEMORY_KIND_ARRAY;
  if (word == "Managed") return trace::MEMORY_KIND_MANAGED;
  return trace::MEMORY_KIND_UNKNOWN;
}

// "Memcpy HtoD (Pageable -> Device)"
void parse_memcpy_name(const std::string& name, trace::Memcpy& m) {
  static const std::pair<std::string_view, trace::MemcpyKind> KINDS[] = {
      {"HtoD", trace::MEMCPY_KIND_HTOD}, {"DtoH", trace::MEMCPY_KIND_DTOH}, {"DtoD", trace::MEMCPY_KIND_DTOD},
      {"HtoH", trace::MEMCPY_KIND_HTOH}, {"PtoP", trace::MEMCPY_KIND_PTOP}};
  for (const auto& [key, kind] : KINDS) {
    if (name.find(key) != std::string::npos) m.set_kind(kind);
  }
  const size_t open = name.find('('), arrow = name.find(" -> "), close = name.find(')');
  if (open != std::string::npos && arrow != std::string::npos && close != std::string::npos && open < arrow &&
      arrow < close) {
    m.set_src_kind(memory_kind(std::string_view(name).substr(open + 1, arrow - open - 1)));
    m.set_dst_kind(memory_kind(std::string_view(name).substr(arrow + 4, close - arrow - 4)));
  }
}

void set_dim3(const Json& args, const char* key, trace::Dim3* out) {
  const auto it = args.find(key);
  if (it == args.end() || !it->is_array() || it->size() != 3) return;
  out->set_x((*it)[0].is_number_integer() ? (*it)[0].get<int32_t>() : 0);
  out->set_y((*it)[1].is_number_integer() ? (*it)[1].get<int32_t>() : 0);
  out->set_z((*it)[2].is_number_integer() ? (*it)[2].get<int32_t>() : 0);
}

// NCCL_VERSION_CODE of "2.21.5" (X * 10000 + Y * 100 + Z since NCCL 2.9); 0 when unparsable.
uint32_t nccl_version_code(const std::string& text) {
  unsigned major = 0, minor = 0, patch = 0;
  if (std::sscanf(text.c_str(), "%u.%u.%u", &major, &minor, &patch) != 3) return 0;
  return major * 10000 + minor * 100 + patch;
}

// "ProfilerStep#N" -> N; -1 otherwise.
int64_t iteration_of(const std::string& name) {
  static constexpr std::string_view PREFIX = "ProfilerStep#";
  if (name.rfind(PREFIX, 0) != 0) return -1;
  int64_t step = -1;
  const char* last = name.data() + name.size();
  const auto [ptr, ec] = std::from_chars(name.data() + PREFIX.size(), last, step);
  return ec == std::errc() && ptr == last && step >= 0 ? step : -1;
}

void read_header(const Json& doc, const std::string& origin, trace::Header& h) {
  h.set_magic(core::TRACE_MAGIC);
  h.set_format_version(core::TRACE_FORMAT_VERSION);
  h.set_producer(trace::PRODUCER_KINETO_IMPORT);
  h.set_producer_version("trainsim import-kineto 0.1.0");
  h.set_clock(trace::TRACE_CLOCK_KINETO);
  h.set_source_file(origin);
  h.set_rank(-1);
  h.set_local_rank(-1);
  h.set_world_size(-1);
  if (const auto it = doc.find("distributedInfo"); it != doc.end() && it->is_object()) {
    // Never trust the header: a rank or world size beyond core::TRACE_MAX_WORLD_SIZE (or one that
    // does not fit an int32) is an input error, not a value silently cut to 32 bits.
    const auto bounded = [&](const char* key, int64_t lowest, int64_t highest) -> int32_t {
      const Json& v = (*it)[key];
      const int64_t value = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                                ? INT64_MAX
                                : v.get<int64_t>();
      if (value < lowest || value > highest) {
        throw InputError(origin, std::string("/distributedInfo/") + key,
                         fmt::format("expected an integer from {} to {} (TRACE_MAX_WORLD_SIZE is {} ranks), got {}",
                                     lowest, highest, core::TRACE_MAX_WORLD_SIZE, v.dump()));
      }
      return static_cast<int32_t>(value);
    };
    if (it->contains("world_size") && (*it)["world_size"].is_number_integer()) {
      h.set_world_size(bounded("world_size", 1, core::TRACE_MAX_WORLD_SIZE));
    }
    if (it->contains("rank") && (*it)["rank"].is_number_integer()) {
      h.set_rank(bounded("rank", 0, h.world_size() > 0 ? h.world_size() - 1 : core::TRACE_MAX_WORLD_SIZE - 1));
    }
    if (it->contains("nccl_version") && (*it)["nccl_version"].is_string()) {
      h.set_nccl_version(nccl_version_code((*it)["nccl_version"].get<std::string>()));
    }
  }
  if (const auto it = doc.find("cuda_runtime_version"); it != doc.end() && it->is_number_integer()) {
    h.set_cuda_runtime_version(it->get<uint32_t>());
  }
  if (const auto it = doc.find("cuda_driver_version"); it != doc.end() && it->is_number_integer()) {
    h.set_cuda_driver_version(it->get<uint32_t>());
  }
  if (const auto it = doc.find("deviceProperties"); it != doc.end() && it->is_array()) {
    for (const Json& p : *it) {
      if (!p.is_object()) continue;
      trace::Device* d = h.add_devices();
      const std::string device_pointer = core::append_pointer("/deviceProperties", static_cast<size_t>(h.devices_size() - 1));
      auto num = [&](const char* key) -> int64_t {
        return p.contains(key) && p[key].is_number() ? integer_value(p[key], origin, core::append_pointer(device_pointer, key)) : 0;
      };
      d->set_id(u32(num("id")));
      if (p.contains("name") && p["name"].is_string()) d->set_name(p["name"].get<std::string>());
      d->set_sm_count(u32(num("numSms")));
      d->set_global_memory_bytes(u64(num("totalGlobalMem")));
      d->set_compute_capability_major(u32(num("computeMajor")));
      d->set_compute_capability_minor(u32(num("computeMinor")));
      d->set_max_threads_per_block(u32(num("maxThreadsPerBlock")));
      d->set_shared_memory_per_block_bytes(u32(num("sharedMemPerBlock")));
      const int64_t warp = num("warpSize");
      if (warp > 0) d->set_max_warps_per_sm(u32(num("maxThreadsPerMultiprocessor") / warp));
    }
  }
}

// Returns the kernel's interval.
std::pair<uint64_t, uint64_t> add_kernel(const EventReader& e, std::vector<trace::Record>& out) {
  const auto [start, end] = e.interval();
  const Json& args = e.args();
  trace::Record rec;
  trace::Kernel* k = rec.mutable_kernel();
  k->set_name(e.name());
  k->set_device_id(u32(e.arg_integer("device", 0)));
  k->set_context_id(u32(e.arg_integer("context", 0)));
  k->set_stream_id(u32(e.arg_integer("stream", 0)));
  k->set_correlation_id(u32(e.arg_integer("correlation", 0)));
  k->set_start_ns(start);
  k->set_end_ns(end);
  set_dim3(args, "grid", k->mutable_grid());
  set_dim3(args, "block", k->mutable_block());
  k->set_registers_per_thread(u32(e.arg_integer("registers per thread", 0)));
  // Kineto reports one "shared memory" figure: static and dynamic together.
  k->set_static_shared_memory_bytes(u32(e.arg_integer("shared memory", 0)));
  out.push_back(std::move(rec));

  const std::string collective = e.arg_string("Collective name");
  if (collective.empty()) return {start, end};
  const auto [type, size] = data_type(e.arg_string("dtype"));
  const uint64_t in = u64(e.arg_integer("In msg nelems", 0));
  const uint64_t out_elems = u64(e.arg_integer("Out msg nelems", 0));
  const int32_t group_size = static_cast<int32_t>(e.arg_integer("Group size", 0));
  trace::Record comm;
  if (collective == "send" || collective == "recv") {
    trace::P2p* p = comm.mutable_p2p();
    p->set_direction(collective == "send" ? trace::P2P_DIRECTION_SEND : trace::P2P_DIRECTION_RECV);
    p->set_peer(-1);
    p->set_count(collective == "send" ? in : out_elems);
    p->set_bytes(p->count() * size);
    p->set_data_type(type);
    p->set_comm_name(e.arg_string("Process Group Name"));
    p->set_comm_size(group_size);
    p->set_stream(u64(e.arg_integer("stream", 0)));
    p->set_start_ns(start);
    p->set_end_ns(end);
    p->set_timing(trace::TIMING_GPU_KERNEL);
    p->set_source(trace::SOURCE_KINETO);
  } else {
    trace::Collective* c = comm.mutable_collective();
    c->set_op(collective_op(collective));
    c->set_op_name(collective);
    c->set_count(in);
    c->set_bytes(std::max(in, out_elems) * size);  // nccl-tests' size: the larger buffer
    c->set_data_type(type);
    c->set_comm_name(e.arg_string("Process Group Name"));
    c->set_comm_size(group_size);
    c->set_rank(-1);
    c->set_root(-1);
    c->set_stream(u64(e.arg_integer("stream", 0)));
    c->set_start_ns(start);
    c->set_end_ns(end);
    c->set_timing(trace::TIMING_GPU_KERNEL);
    c->set_source(trace::SOURCE_KINETO);
    for (int32_t r : group_ranks(args)) c->add_group_ranks(r);
  }
  out.push_back(std::move(comm));
  return {start, end};
}


// ---- Linking kernels to the CPU ops that launched them ----------------------------------------

// A CPU op (cat "cpu_op"), a CUDA runtime call (cat "cuda_runtime" / "cuda_driver") or a kernel, as
// far as linking needs them.
struct CpuOpEvent {
  std::string thread;  // "pid/tid"
  uint64_t start = 0, end = 0;
  int64_t external_id = 0;
  const Json* event = nullptr;
  int parent = -1;     // the innermost op enclosing this one on its thread
};

struct LaunchEvent {
  std::string thread;
  uint64_t start = 0;
  int64_t external_id = 0;
};

struct KernelEvent {
  uint32_t correlation = 0;
  int64_t external_id = 0;
  std::string name;
  uint64_t start = 0, end = 0;
};

std::string thread_key(const Json& ev) {
  const auto pid = ev.find("pid"), tid = ev.find("tid");
  return (pid == ev.end() ? std::string() : pid->dump()) + "/" + (tid == ev.end() ? std::string() : tid->dump());
}

// What a CPU op costs, decided once per op.
struct Costed {
  std::optional<trace::Gemm> gemm;
  std::optional<trace::Operation> operation;
  bool any() const { return gemm || operation; }
};

class OpLinker {
 public:
  explicit OpLinker(std::vector<CpuOpEvent> ops) : ops_(std::move(ops)) {
    // Per thread, by start (an enclosing op first): a stack gives each op its parent.
    std::sort(ops_.begin(), ops_.end(), [](const CpuOpEvent& a, const CpuOpEvent& b) {
      return std::tie(a.thread, a.start, b.end) < std::tie(b.thread, b.start, a.end);
    });
    std::vector<int> stack;
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (i > 0 && ops_[i].thread != ops_[i - 1].thread) stack.clear();
      while (!stack.empty() && ops_[static_cast<size_t>(stack.back())].end <= ops_[i].start) stack.pop_back();
      ops_[i].parent = stack.empty() ? -1 : stack.back();
      stack.push_back(static_cast<int>(i));
      if (ops_[i].external_id > 0) by_external_.try_emplace(ops_[i].external_id, static_cast<int>(i));
    }
    costed_.resize(ops_.size());
    decided_.assign(ops_.size(), false);
  }

  // The op a kernel belongs to (-1: none), from its external id or its launch's.
  int op_of(const KernelEvent& k, const std::unordered_map<uint32_t, LaunchEvent>& launches) const {
    if (auto it = by_external_.find(k.external_id); k.external_id > 0 && it != by_external_.end()) return it->second;
    const auto launch = launches.find(k.correlation);
    if (launch == launches.end()) return -1;
    if (auto it = by_external_.find(launch->second.external_id); launch->second.external_id > 0 && it != by_external_.end()) {
      return it->second;
    }
    return enclosing(launch->second.thread, launch->second.start);
  }

  // The costed op a kernel's time counts for: its own op when costed; else the nearest costed
  // ancestor, when that is a GEMM (for a GEMM kernel) or an attention op (for an attention kernel).
  int costed_op_for(int op, TimeCategory kernel) {
    for (int i = op; i >= 0; i = ops_[static_cast<size_t>(i)].parent) {
      const Costed& c = costed(i);
      if (!c.any()) continue;
      if (i == op) return i;
      const bool attention = c.operation && c.operation->kind() == trace::OPERATION_KIND_ATTENTION;
      if ((c.gemm && kernel == TimeCategory::GEMM) || (attention && kernel == TimeCategory::ATTENTION)) return i;
      return -1;
    }
    return -1;
  }

  const Costed& costed(int i) {
    const size_t u = static_cast<size_t>(i);
    if (!decided_[u]) {
      decided_[u] = true;
      const Json& ev = *ops_[u].event;
      const auto name = ev.find("name");
      const auto args = ev.find("args");
      if (name != ev.end() && name->is_string() && args != ev.end() && args->is_object()) {
        const CpuOp op = read_cpu_op(name->get<std::string>(), *args);
        costed_[u].gemm = gemm_of(op);
        if (!costed_[u].gemm) costed_[u].operation = operation_of(op);
      }
    }
    return costed_[u];
  }
  const CpuOpEvent& op(int i) const { return ops_[static_cast<size_t>(i)]; }

 private:
  int enclosing(const std::string& thread, uint64_t t) const {
    auto it = std::upper_bound(ops_.begin(), ops_.end(), std::pair{&thread, t},
                               [](const std::pair<const std::string*, uint64_t>& key, const CpuOpEvent& o) {
                                 return std::tie(*key.first, key.second) < std::tie(o.thread, o.start);
                               });
    if (it == ops_.begin()) return -1;
    int i = static_cast<int>(std::prev(it) - ops_.begin());
    if (ops_[static_cast<size_t>(i)].thread != thread) return -1;
    while (i >= 0 && ops_[static_cast<size_t>(i)].end < t) i = ops_[static_cast<size_t>(i)].parent;
    return i;
  }

  std::vector<CpuOpEvent> ops_;
  std::unordered_map<int64_t, int> by_external_;
  std::vector<Costed> costed_;
  std::vector<bool> decided_;
};

bool contains_ci(std::string_view text, std::string_view word) {
  auto lower = [](char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); };
  return std::search(text.begin(), text.end(), word.begin(), word.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != text.end();
}

// A GEMM's types when the op did not record them, and FP32's compute type, from the cuBLAS/CUTLASS
// kernel names ("..._bf16_...", "..._tf32_...", "..._e4m3_...", "..._f16_..."/"h16").
void complete_gemm_types(trace::Gemm& g, const std::vector<const KernelEvent*>& kernels) {
  bool tf32 = false;
  trace::DataType named = trace::DATA_TYPE_UNKNOWN;
  for (const KernelEvent* k : kernels) {
    tf32 = tf32 || contains_ci(k->name, "tf32");
    if (named != trace::DATA_TYPE_UNKNOWN) continue;
    if (contains_ci(k->name, "bf16")) named = trace::DATA_TYPE_BFLOAT16;
    else if (contains_ci(k->name, "e4m3")) named = trace::DATA_TYPE_FLOAT8_E4M3;
    else if (contains_ci(k->name, "f16") || contains_ci(k->name, "h16")) named = trace::DATA_TYPE_FLOAT16;
  }
  if (g.a_type() == trace::DATA_TYPE_UNKNOWN && named != trace::DATA_TYPE_UNKNOWN) {
    g.set_a_type(named);
    g.set_b_type(named);
    g.set_c_type(named);
  }
  g.set_compute_type(g.a_type() == trace::DATA_TYPE_FLOAT32 && tf32 ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F");
}

// Appends a Gemm or Operation record per costed op that launched kernels, and an
// ExternalCorrelation per kernel linking it to that op (the tracer's convention, so one fitting
// step reads both).
void link_kernels(std::vector<CpuOpEvent> cpu_ops, const std::unordered_map<uint32_t, LaunchEvent>& launches,
                  const std::vector<KernelEvent>& kernels, KinetoImport& t) {
  if (cpu_ops.empty() || kernels.empty()) return;
  OpLinker linker(std::move(cpu_ops));
  std::map<int, std::vector<const KernelEvent*>> by_op;  // ordered: records come out in a fixed order
  for (const KernelEvent& k : kernels) {
    if (k.correlation == 0) continue;
    const int op = linker.op_of(k, launches);
    if (op < 0) continue;
    const int costed = linker.costed_op_for(op, categorize_kernel(k.name));
    if (costed >= 0) by_op[costed].push_back(&k);
  }
  int64_t next_id = 1;
  for (const auto& [i, ks] : by_op) next_id = std::max(next_id, linker.op(i).external_id + 1);
  for (const auto& [i, ks] : by_op) {
    const Costed& c = linker.costed(i);
    const uint64_t id = static_cast<uint64_t>(linker.op(i).external_id > 0 ? linker.op(i).external_id : next_id++);
    trace::Record rec;
    if (c.gemm) {
      trace::Gemm* g = rec.mutable_gemm();
      *g = *c.gemm;
      complete_gemm_types(*g, ks);
      g->set_correlation_id(id);
      g->set_start_ns(ks.front()->start);
      g->set_end_ns(ks.back()->end);
    } else {
      *rec.mutable_operation() = *c.operation;
      rec.mutable_operation()->set_external_id(id);
    }
    t.records.push_back(std::move(rec));
    for (const KernelEvent* k : ks) {
      trace::Record link;
      link.mutable_external_correlation()->set_external_id(id);
      link.mutable_external_correlation()->set_correlation_id(k->correlation);
      t.records.push_back(std::move(link));
    }
    ++t.costed_ops;
    t.linked_kernels += ks.size();
  }
}

}  // namespace

KinetoImport import_kineto_json(const Json& doc, const std::string& origin) {
  if (!doc.is_object()) throw InputError::expected(origin, "", "a Chrome trace object", core::describe_json(doc));
  const auto events = doc.find("traceEvents");
  if (events == doc.end() || !events->is_array()) {
    throw InputError(origin, "/traceEvents", "missing or not an array: not a PyTorch profiler (Kineto) trace");
  }
  KinetoImport t;
  t.source = origin;
  read_header(doc, origin, t.header);
  uint64_t base_ns = 0;
  if (const auto it = doc.find("baseTimeNanoseconds"); it != doc.end() && it->is_number_unsigned()) {
    base_ns = it->get<uint64_t>();
    if (base_ns > (uint64_t{1} << 62)) {
      throw InputError::expected(origin, "/baseTimeNanoseconds", "nanoseconds below 2^62 (year 2116)", core::describe_json(*it));
    }
    t.header.mutable_clock_anchor()->set_trace_clock_ns(base_ns);
    t.header.mutable_clock_anchor()->set_realtime_ns(base_ns);
  }
  std::vector<CpuOpEvent> cpu_ops;
  std::unordered_map<uint32_t, LaunchEvent> launches;  // by CUDA correlation id
  std::vector<KernelEvent> kernels;
  for (size_t i = 0; i < events->size(); ++i) {
    const Json& ev = (*events)[i];
    const std::string pointer = core::append_pointer("/traceEvents", i);
    if (!ev.is_object()) throw InputError::expected(origin, pointer, "an event object", core::describe_json(ev));
    const auto ph = ev.find("ph");
    const auto cat = ev.find("cat");
    if (ph == ev.end() || *ph != "X" || cat == ev.end() || !cat->is_string()) {
      ++t.skipped_events;
      continue;
    }
    const std::string category = cat->get<std::string>();
    const EventReader e(ev, origin, pointer, base_ns);
    if (category == "kernel") {
      const auto [start, end] = add_kernel(e, t.records);
      kernels.push_back({u32(e.arg_integer("correlation", 0)), e.arg_integer("External id", 0), e.name(), start, end});
    } else if (category == "cpu_op" || category == "Operator") {
      const auto [start, end] = e.interval();
      cpu_ops.push_back({thread_key(ev), start, end, e.arg_integer("External id", 0), &ev, -1});
      ++t.skipped_events;
    } else if (category == "cuda_runtime" || category == "cuda_driver" || category == "Runtime") {
      const auto [start, end] = e.interval();
      const uint32_t correlation = u32(e.arg_integer("correlation", 0));
      if (correlation > 0) launches.try_emplace(correlation, LaunchEvent{thread_key(ev), start, e.arg_integer("External id", 0)});
      ++t.skipped_events;
    } else if (category == "gpu_memcpy" || category == "gpu_memset") {
      const auto [start, end] = e.interval();
      trace::Record rec;
      if (category == "gpu_memcpy") {
        trace::Memcpy* m = rec.mutable_memcpy();
        parse_memcpy_name(e.name(), *m);
        m->set_bytes(u64(e.arg_integer("bytes", 0)));
        m->set_device_id(u32(e.arg_integer("device", 0)));
        m->set_context_id(u32(e.arg_integer("context", 0)));
        m->set_stream_id(u32(e.arg_integer("stream", 0)));
        m->set_correlation_id(u32(e.arg_integer("correlation", 0)));
        m->set_start_ns(start);
        m->set_end_ns(end);
      } else {
        trace::Memset* m = rec.mutable_memset();
        m->set_bytes(u64(e.arg_integer("bytes", 0)));
        m->set_device_id(u32(e.arg_integer("device", 0)));
        m->set_context_id(u32(e.arg_integer("context", 0)));
        m->set_stream_id(u32(e.arg_integer("stream", 0)));
        m->set_correlation_id(u32(e.arg_integer("correlation", 0)));
        m->set_start_ns(start);
        m->set_end_ns(end);
      }
      t.records.push_back(std::move(rec));
    } else if (category == "user_annotation" || category == "gpu_user_annotation") {
      const auto [start, end] = e.interval();
      trace::Record rec;
      trace::Marker* m = rec.mutable_marker();
      m->set_name(e.name());
      m->set_domain(category);
      m->set_start_ns(start);
      m->set_end_ns(end);
      m->set_iteration(iteration_of(m->name()));
      t.records.push_back(std::move(rec));
    } else {
      ++t.skipped_events;
    }
  }
  link_kernels(std::move(cpu_ops), launches, kernels, t);
  return t;
}

KinetoImport import_kineto_file(const std::string& path) { return import_kineto_json(core::load_json_file(path), path); }

std::string kineto_output_name(const KinetoImport& t) {
  std::string stem = std::filesystem::path(t.source).filename().string();
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".json") == 0) stem.resize(stem.size() - 5);
  const int32_t rank = t.header.rank();
  return (rank >= 0 ? fmt::format("rank{:05d}", rank) : std::string("norank")) + "." + stem + ".trace";
}

std::string write_kineto_import(const KinetoImport& t, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(dir, "", "cannot create the output folder: " + ec.message());
  const std::string path = (std::filesystem::path(dir) / kineto_output_name(t)).string();
  core::TraceWriter writer(path, t.header);
  for (const trace::Record& r : t.records) writer.append(r);
  writer.flush();
  return path;
}

}  // namespace trainsim::calibrate
