#pragma once
// CUPTI activity records, CUDA-free: mirrors of the fields the tracer reads from each CUPTI 13
// record kind, their conversion into trace events, and the walk over one completed activity buffer.
//
// The CUDA half (tracer/cuda/cupti_decode.cpp) copies the fields out of the real structs
// (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, ...); everything after that happens here and is
// tested without CUDA: kind and enum mapping, demangling, NVTX start/end pairing, invalid
// timestamps, and the accounting of records the tracer does not convert.
//
// Example (how the buffer-completed callback uses it):
//   ActivityConverter converter;
//   std::string out;
//   WalkResult r = walk_activity_buffer(buffer, valid_size, cupti_next_record, decode_cupti_record,
//                                       converter, out);
//   session.append(out);

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <variant>

#include "tracer/record/events.hpp"

namespace trainsim::tracer {

// CUpti_ActivityKind values of the kinds the tracer enables (cupti_activity.h, CUPTI 13).
enum class ActivityKind : uint32_t {
  MEMCPY = 1, MEMSET = 2, DRIVER = 4, RUNTIME = 5, DEVICE = 8, CONTEXT = 9, CONCURRENT_KERNEL = 10, MARKER = 12,
  MEMCPY2 = 22, STREAM = 37, EXTERNAL_CORRELATION = 39
};

struct CuptiKernel {           // CUpti_ActivityKernel10
  const char* name = nullptr;  // mangled; owned by CUPTI
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  uint16_t registers_per_thread = 0;
  int32_t static_shared_memory = 0;
  int32_t dynamic_shared_memory = 0;
  uint32_t graph_id = 0;
  uint64_t graph_node_id = 0;
};

struct CuptiMemcpy {           // CUpti_ActivityMemcpy6, or CUpti_ActivityMemcpyPtoP4 (peer = true)
  uint8_t copy_kind = 0;       // CUpti_ActivityMemcpyKind
  uint8_t src_kind = 0;        // CUpti_ActivityMemoryKind
  uint8_t dst_kind = 0;
  uint64_t bytes = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  bool peer = false;
  uint32_t src_device_id = 0;
  uint32_t dst_device_id = 0;
};

struct CuptiMemset {           // CUpti_ActivityMemset4
  uint32_t value = 0;
  uint64_t bytes = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint16_t memory_kind = 0;
};

struct CuptiDevice {           // CUpti_ActivityDevice5
  uint32_t id = 0;
  const char* name = nullptr;
  uint8_t uuid[16] = {};
  uint64_t global_memory_bandwidth_kbps = 0;  // KiB/s, as CUPTI reports it
  uint64_t global_memory_size = 0;
  uint32_t l2_cache_size = 0;
  uint32_t core_clock_khz = 0;
  uint32_t multiprocessors = 0;
  uint32_t max_warps_per_multiprocessor = 0;
  uint32_t max_shared_memory_per_block = 0;
  uint32_t max_threads_per_block = 0;
  uint32_t compute_capability_major = 0;
  uint32_t compute_capability_minor = 0;
};

struct CuptiContext {          // CUpti_ActivityContext3
  uint32_t context_id = 0;
  uint32_t device_id = 0;
  uint16_t null_stream_id = 0;
};

struct CuptiStream {           // CUpti_ActivityStream
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t priority = 0;
  uint32_t flag = 0;           // CUpti_ActivityStreamFlag
};

struct CuptiMarker {           // CUpti_ActivityMarker2
  uint32_t flags = 0;          // CUPTI_ACTIVITY_FLAG_MARKER_*
  uint64_t timestamp = 0;
  uint32_t id = 0;
  const char* name = nullptr;  // null on END records
  const char* domain = nullptr;
};

struct CuptiExternalCorrelation {  // CUpti_ActivityExternalCorrelation
  uint32_t external_kind = 0;
  uint64_t external_id = 0;
  uint32_t correlation_id = 0;
};

// A driver or runtime API record (CUpti_ActivityAPI). The tracer enables these kinds only because
// CUPTI writes an external correlation record just before an API record ("the activity API record
// will be preceded by a CUpti_ActivityExternalCorrelation record", cuptiActivityPushExternalCorrelationId
// in cupti_activity.h): without them no kernel is joined to the NCCL or cuBLAS call that launched it,
// as the first traces on a GPU showed (H200, CUPTI 13.0: not one such record; docs/gpu-runs.md).
// They are consumed, not written: kernel records carry the same correlation id.
struct CuptiApiCall {};

// One decoded record; std::monostate for a kind the tracer does not convert.
using CuptiActivity = std::variant<std::monostate, CuptiKernel, CuptiMemcpy, CuptiMemset, CuptiDevice,
                                   CuptiContext, CuptiStream, CuptiMarker, CuptiExternalCorrelation, CuptiApiCall>;

// Marker flag bits (CUpti_ActivityFlag).
inline constexpr uint32_t MARKER_INSTANTANEOUS = 1u << 0;
inline constexpr uint32_t MARKER_START = 1u << 1;
inline constexpr uint32_t MARKER_END = 1u << 2;

// The demangled form of a C++ symbol, or `name` itself when it is not a mangled name.
std::string demangle(const char* name);
// ProfilerStep#N (PyTorch's profiler and its NVTX ranges) -> N; -1 for any other name.
int64_t iteration_of(const std::string& name);

// Converts decoded activities into framed Records. Stateful: NVTX ranges arrive as a START record
// and an END record (possibly in different buffers) and are written once both are seen.
class ActivityConverter {
 public:
  struct Counts {
    uint64_t records = 0;               // framed records appended
    uint64_t unsupported = 0;           // activities of kinds not converted
    uint64_t invalid_timestamps = 0;    // activities dropped because end < start or start == 0
  };

  void convert(const CuptiActivity& activity, std::string& out);
  const Counts& counts() const { return counts_; }
  // NVTX ranges started but not (yet) ended.
  size_t open_markers() const { return open_markers_.size(); }

 private:
  struct OpenMarker {
    std::string name;
    std::string domain;
    uint64_t start = 0;
  };
  void convert_marker(const CuptiMarker& m, std::string& out);

  Counts counts_;
  std::unordered_map<uint32_t, OpenMarker> open_markers_;
};

// How the buffer walk advances: cuptiActivityGetNextRecord in the tracer, a synthetic cursor in
// tests. Sets *record to the next record after `*record` (the first when it is null).
enum class NextStatus { OK, END, ERROR };
using NextRecordFn = NextStatus (*)(uint8_t* buffer, size_t valid_size, void** record);
// Decodes one record into its mirror; returns std::monostate for unconverted kinds.
using DecodeFn = CuptiActivity (*)(const void* record);

struct WalkResult {
  uint64_t activities = 0;   // records visited
  bool error = false;        // the walk stopped on an error before the end of the buffer
};

// Visits every record of a completed CUPTI activity buffer, converting each into `out`.
WalkResult walk_activity_buffer(uint8_t* buffer, size_t valid_size, NextRecordFn next, DecodeFn decode,
                                ActivityConverter& converter, std::string& out);

}  // namespace trainsim::tracer
