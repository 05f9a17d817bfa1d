#pragma once
// The events the tracer records, as plain structs, and their encoding as trace.proto Records
// (sim/core/trace.proto documents every field; the structs use the same names and units). The
// enum values equal trace.proto's; tests hold the two together through libprotobuf's parser.
//
// Example:
//   KernelEvent k;
//   k.name = "gemm"; k.start_ns = 10; k.end_ns = 20;
//   std::string bytes;
//   append_record(k, bytes);   // a framed Record, ready to be appended to a trace file

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::tracer {

enum class Producer : uint32_t { UNKNOWN = 0, TRACER = 1, KINETO_IMPORT = 2 };
enum class TraceClock : uint32_t { UNKNOWN = 0, CUPTI = 1, REALTIME = 2, KINETO = 3 };
enum class MemcpyKind : uint32_t { UNKNOWN = 0, HTOD, DTOH, HTOA, ATOH, ATOA, ATOD, DTOA, DTOD, HTOH, PTOP };
enum class MemoryKind : uint32_t {
  UNKNOWN = 0, PAGEABLE, PINNED, DEVICE, ARRAY, MANAGED, DEVICE_STATIC, MANAGED_STATIC
};
enum class CollectiveOp : uint32_t {
  UNKNOWN = 0, ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, BROADCAST, REDUCE, ALL_TO_ALL
};
enum class DataType : uint32_t {
  UNKNOWN = 0, INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16,
  FLOAT8_E4M3, FLOAT8_E5M2
};
enum class Source : uint32_t { UNKNOWN = 0, NCCL_PROFILER = 1, NCCL_WRAPPER = 2, KINETO = 3 };
enum class Timing : uint32_t { UNKNOWN = 0, ENQUEUE = 1, PROXY = 2, KERNEL_CHANNEL = 3, GPU_KERNEL = 4 };
enum class P2pDirection : uint32_t { UNKNOWN = 0, SEND = 1, RECV = 2 };
enum class GemmApi : uint32_t {
  UNKNOWN = 0, CUBLASLT_MATMUL = 1, CUBLAS_GEMM_EX = 2, CUBLAS_GEMM_STRIDED_BATCHED_EX = 3, CUBLAS_SGEMM = 4
};

// Bytes per element; 0 for UNKNOWN.
uint32_t data_type_size(DataType t);
// NCCL's datatype names as its profiler reports them ("ncclFloat32", "ncclBfloat16", ...) and the
// short names of PyTorch traces ("Float", "BFloat16", "Half", ...). UNKNOWN for anything else.
DataType data_type_from_name(const std::string& name);
// NCCL's function names ("AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce",
// "AllToAll"; case-insensitive, "_"-insensitive) and c10d's ("allreduce", "_reduce_scatter_base",
// "all_gather_into_tensor", "alltoall_base", ...). UNKNOWN for anything else.
CollectiveOp collective_op_from_name(const std::string& name);
// nccl-tests' "size" of a collective from the NCCL API count: the counts of all_gather (send),
// reduce_scatter (receive) and all_to_all (per peer) are per rank, so their size is
// count * comm_size elements; all_reduce, broadcast and reduce move `count` elements.
uint64_t collective_bytes(CollectiveOp op, uint64_t count, DataType type, int comm_size);

struct ClockAnchor {
  uint64_t trace_clock_ns = 0;
  uint64_t realtime_ns = 0;
};

struct DeviceInfo {
  uint32_t id = 0;
  std::string name;
  std::string uuid;
  uint32_t sm_count = 0;
  uint64_t global_memory_bytes = 0;
  uint64_t global_memory_bandwidth_bytes_per_s = 0;
  uint32_t core_clock_khz = 0;
  uint32_t compute_capability_major = 0;
  uint32_t compute_capability_minor = 0;
  uint32_t l2_cache_bytes = 0;
  uint32_t max_threads_per_block = 0;
  uint32_t shared_memory_per_block_bytes = 0;
  uint32_t max_warps_per_sm = 0;
};

struct HeaderInfo {
  Producer producer = Producer::TRACER;
  std::string producer_version;
  TraceClock clock = TraceClock::UNKNOWN;
  ClockAnchor clock_anchor;
  int32_t world_size = -1;
  int32_t rank = -1;
  int32_t local_rank = -1;
  std::string hostname;
  uint32_t pid = 0;
  uint32_t cuda_driver_version = 0;
  uint32_t cuda_runtime_version = 0;
  uint32_t cupti_api_version = 0;
  uint32_t nccl_version = 0;
  std::vector<DeviceInfo> devices;
  std::string command_line;
};

struct ContextInfo {
  uint32_t context_id = 0;
  uint32_t device_id = 0;
  uint32_t null_stream_id = 0;
};

struct StreamInfo {
  uint32_t stream_id = 0;
  uint32_t context_id = 0;
  int32_t priority = 0;
  bool non_blocking = false;
};

struct Dim3 {
  int32_t x = 0;
  int32_t y = 0;
  int32_t z = 0;
};

struct KernelEvent {
  std::string name;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  Dim3 grid;
  Dim3 block;
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_memory_bytes = 0;
  uint32_t dynamic_shared_memory_bytes = 0;
  uint32_t graph_id = 0;
  uint64_t graph_node_id = 0;
};

struct MemcpyEvent {
  MemcpyKind kind = MemcpyKind::UNKNOWN;
  uint64_t bytes = 0;
  MemoryKind src_kind = MemoryKind::UNKNOWN;
  MemoryKind dst_kind = MemoryKind::UNKNOWN;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t src_device_id = 0;
  uint32_t dst_device_id = 0;
};

struct MemsetEvent {
  uint64_t bytes = 0;
  uint32_t value = 0;
  MemoryKind memory_kind = MemoryKind::UNKNOWN;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// Where a communication event ran and how it was timed: the fields Collective and P2p share.
struct CommTiming {
  uint64_t comm_hash = 0;
  std::string comm_name;
  int32_t comm_size = 0;
  int32_t rank = 0;
  uint64_t stream = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  Timing timing = Timing::UNKNOWN;
  uint64_t enqueue_ns = 0;
  uint32_t channels = 0;
  Source source = Source::UNKNOWN;
  uint64_t correlation_id = 0;
};

struct CollectiveEvent {
  CollectiveOp op = CollectiveOp::UNKNOWN;
  std::string op_name;
  uint64_t bytes = 0;
  uint64_t count = 0;
  DataType data_type = DataType::UNKNOWN;
  int32_t root = -1;
  uint64_t seq_number = 0;
  std::string algorithm;
  std::string protocol;
  std::vector<int32_t> group_ranks;
  CommTiming comm;
};

struct P2pEvent {
  P2pDirection direction = P2pDirection::UNKNOWN;
  int32_t peer = -1;
  uint64_t bytes = 0;
  uint64_t count = 0;
  DataType data_type = DataType::UNKNOWN;
  CommTiming comm;
};

struct GemmEvent {
  GemmApi api = GemmApi::UNKNOWN;
  uint64_t m = 0;
  uint64_t n = 0;
  uint64_t k = 0;
  bool transpose_a = false;
  bool transpose_b = false;
  DataType a_type = DataType::UNKNOWN;
  DataType b_type = DataType::UNKNOWN;
  DataType c_type = DataType::UNKNOWN;
  std::string compute_type;
  uint64_t batch_count = 1;
  uint64_t lda = 0;
  uint64_t ldb = 0;
  uint64_t ldc = 0;
  uint64_t correlation_id = 0;
  uint64_t stream = 0;
  uint64_t enqueue_ns = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

struct ExternalCorrelationEvent {
  uint32_t external_kind = 0;
  uint64_t external_id = 0;
  uint32_t correlation_id = 0;
};

struct MarkerEvent {
  std::string name;
  std::string domain;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  int64_t iteration = -1;
};

struct LibraryInfo {
  std::string name;
  uint32_t version = 0;
  std::string path;
};

struct TracerStatusEvent {
  uint64_t time_ns = 0;
  uint64_t dropped_records = 0;
  uint64_t records_written = 0;
  uint64_t unsupported_records = 0;
  std::vector<std::string> errors;
  bool final = false;
};

// Each appends one framed Record (varint length + Record{<kind> = event}) to `out`.
void append_record(const HeaderInfo& header, std::string& out);
void append_record(const DeviceInfo& device, std::string& out);
void append_record(const ContextInfo& context, std::string& out);
void append_record(const StreamInfo& stream, std::string& out);
void append_record(const KernelEvent& kernel, std::string& out);
void append_record(const MemcpyEvent& memcpy, std::string& out);
void append_record(const MemsetEvent& memset, std::string& out);
void append_record(const CollectiveEvent& collective, std::string& out);
void append_record(const P2pEvent& p2p, std::string& out);
void append_record(const GemmEvent& gemm, std::string& out);
void append_record(const ExternalCorrelationEvent& correlation, std::string& out);
void append_record(const MarkerEvent& marker, std::string& out);
void append_record(const LibraryInfo& library, std::string& out);
void append_record(const TracerStatusEvent& status, std::string& out);

}  // namespace trainsim::tracer
