#include "tracer/record/events.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include "tracer/record/wire.hpp"

namespace trainsim::tracer {
namespace {

// Field numbers of Record's oneof (trace.proto).
enum RecordField : uint32_t {
  HEADER = 1, KERNEL = 2, MEMCPY = 3, MEMSET = 4, COLLECTIVE = 5, P2P = 6, GEMM = 7,
  EXTERNAL_CORRELATION = 8, MARKER = 9, DEVICE = 10, CONTEXT = 11, STREAM = 12, STATUS = 13, LIBRARY = 14
};

// An enum field's wire value.
uint64_t enum_value(auto value) { return static_cast<uint64_t>(value); }

std::string normalize(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c != '_' && c != ' ') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

// Encodes `fill`'s fields as Record{field = ...} and frames it.
template <class Fill>
void append_framed_record(uint32_t field, std::string& out, Fill fill) {
  std::string body;
  WireEncoder w(body);
  const size_t token = w.begin_message(field);
  fill(w);
  w.end_message(token);
  append_framed(body, out);
}

void write_device(WireEncoder& w, const DeviceInfo& d) {
  w.uint(1, d.id);
  w.string(2, d.name);
  w.string(3, d.uuid);
  w.uint(4, d.sm_count);
  w.uint(5, d.global_memory_bytes);
  w.uint(6, d.global_memory_bandwidth_bytes_per_s);
  w.uint(7, d.core_clock_khz);
  w.uint(8, d.compute_capability_major);
  w.uint(9, d.compute_capability_minor);
  w.uint(10, d.l2_cache_bytes);
  w.uint(11, d.max_threads_per_block);
  w.uint(12, d.shared_memory_per_block_bytes);
  w.uint(13, d.max_warps_per_sm);
}

void write_dim3(WireEncoder& w, uint32_t field, const Dim3& d) {
  if (d.x == 0 && d.y == 0 && d.z == 0) return;
  const size_t token = w.begin_message(field);
  w.sint(1, d.x);
  w.sint(2, d.y);
  w.sint(3, d.z);
  w.end_message(token);
}

}  // namespace

uint32_t data_type_size(DataType t) {
  switch (t) {
    case DataType::INT8: case DataType::UINT8: case DataType::FLOAT8_E4M3: case DataType::FLOAT8_E5M2: return 1;
    case DataType::FLOAT16: case DataType::BFLOAT16: return 2;
    case DataType::INT32: case DataType::UINT32: case DataType::FLOAT32: return 4;
    case DataType::INT64: case DataType::UINT64: case DataType::FLOAT64: return 8;
    case DataType::UNKNOWN: return 0;
  }
  return 0;
}

DataType data_type_from_name(const std::string& name) {
  static const std::pair<const char*, DataType> NAMES[] = {
      // NCCL (ncclDataType_t names, as the profiler plugin reports them), lower-cased, "nccl" dropped.
      {"int8", DataType::INT8}, {"char", DataType::INT8}, {"uint8", DataType::UINT8},
      {"int32", DataType::INT32}, {"int", DataType::INT32}, {"uint32", DataType::UINT32},
      {"int64", DataType::INT64}, {"uint64", DataType::UINT64}, {"float16", DataType::FLOAT16},
      {"half", DataType::FLOAT16}, {"float32", DataType::FLOAT32}, {"float", DataType::FLOAT32},
      {"float64", DataType::FLOAT64}, {"double", DataType::FLOAT64}, {"bfloat16", DataType::BFLOAT16},
      {"float8e4m3", DataType::FLOAT8_E4M3}, {"float8e5m2", DataType::FLOAT8_E5M2},
      // PyTorch scalar type names (Kineto's "dtype" arg).
      {"byte", DataType::UINT8}, {"long", DataType::INT64}, {"float8e4m3fn", DataType::FLOAT8_E4M3},
      {"bool", DataType::UINT8}};
  std::string n = normalize(name);
  if (n.rfind("nccl", 0) == 0) n = n.substr(4);
  for (const auto& [key, type] : NAMES) {
    if (n == key) return type;
  }
  return DataType::UNKNOWN;
}

CollectiveOp collective_op_from_name(const std::string& name) {
  static const std::pair<const char*, CollectiveOp> NAMES[] = {
      {"allreduce", CollectiveOp::ALL_REDUCE}, {"allreducecoalesced", CollectiveOp::ALL_REDUCE},
      {"reducescatter", CollectiveOp::REDUCE_SCATTER}, {"reducescatterbase", CollectiveOp::REDUCE_SCATTER},
      {"reducescattertensor", CollectiveOp::REDUCE_SCATTER},
      {"reducescattertensorcoalesced", CollectiveOp::REDUCE_SCATTER},
      {"allgather", CollectiveOp::ALL_GATHER}, {"allgatherbase", CollectiveOp::ALL_GATHER},
      {"allgatherintotensor", CollectiveOp::ALL_GATHER}, {"allgatherintotensorcoalesced", CollectiveOp::ALL_GATHER},
      {"allgathercoalesced", CollectiveOp::ALL_GATHER},
      {"broadcast", CollectiveOp::BROADCAST}, {"bcast", CollectiveOp::BROADCAST},
      {"reduce", CollectiveOp::REDUCE}, {"alltoall", CollectiveOp::ALL_TO_ALL},
      {"alltoallbase", CollectiveOp::ALL_TO_ALL}, {"alltoallv", CollectiveOp::ALL_TO_ALL}};
  std::string n = normalize(name);
  if (n.rfind("nccl", 0) == 0) n = n.substr(4);
  for (const auto& [key, op] : NAMES) {
    if (n == key) return op;
  }
  return CollectiveOp::UNKNOWN;
}

uint64_t collective_bytes(CollectiveOp op, uint64_t count, DataType type, int comm_size) {
  const uint64_t bytes = count * data_type_size(type);
  if ((op == CollectiveOp::ALL_GATHER || op == CollectiveOp::REDUCE_SCATTER || op == CollectiveOp::ALL_TO_ALL) &&
      comm_size > 0) {
    return bytes * static_cast<uint64_t>(comm_size);
  }
  return bytes;
}

void append_record(const HeaderInfo& h, std::string& out) {
  append_framed_record(HEADER, out, [&](WireEncoder& w) {
    w.string(1, "trainsim.trace");
    w.uint(2, 1);
    w.uint(3, enum_value(h.producer));
    w.string(4, h.producer_version);
    w.uint(5, enum_value(h.clock));
    const size_t anchor = w.begin_message(6);
    w.uint(1, h.clock_anchor.trace_clock_ns);
    w.uint(2, h.clock_anchor.realtime_ns);
    w.end_message(anchor);
    w.sint(7, h.world_size);
    w.sint(8, h.rank);
    w.sint(9, h.local_rank);
    w.string(10, h.hostname);
    w.uint(11, h.pid);
    w.uint(12, h.cuda_driver_version);
    w.uint(13, h.cuda_runtime_version);
    w.uint(14, h.cupti_api_version);
    w.uint(15, h.nccl_version);
    for (const DeviceInfo& d : h.devices) {
      const size_t dev = w.begin_message(16);
      write_device(w, d);
      w.end_message(dev);
    }
    w.string(17, h.command_line);
  });
}

void append_record(const DeviceInfo& d, std::string& out) {
  append_framed_record(DEVICE, out, [&](WireEncoder& w) { write_device(w, d); });
}

void append_record(const ContextInfo& c, std::string& out) {
  append_framed_record(CONTEXT, out, [&](WireEncoder& w) {
    w.uint(1, c.context_id);
    w.uint(2, c.device_id);
    w.uint(3, c.null_stream_id);
  });
}

void append_record(const StreamInfo& s, std::string& out) {
  append_framed_record(STREAM, out, [&](WireEncoder& w) {
    w.uint(1, s.stream_id);
    w.uint(2, s.context_id);
    w.sint(3, s.priority);
    w.boolean(4, s.non_blocking);
  });
}

void append_record(const KernelEvent& k, std::string& out) {
  append_framed_record(KERNEL, out, [&](WireEncoder& w) {
    w.string(1, k.name);
    w.uint(2, k.device_id);
    w.uint(3, k.context_id);
    w.uint(4, k.stream_id);
    w.uint(5, k.correlation_id);
    w.uint(6, k.start_ns);
    w.uint(7, k.end_ns);
    write_dim3(w, 8, k.grid);
    write_dim3(w, 9, k.block);
    w.uint(10, k.registers_per_thread);
    w.uint(11, k.static_shared_memory_bytes);
    w.uint(12, k.dynamic_shared_memory_bytes);
    w.uint(13, k.graph_id);
    w.uint(14, k.graph_node_id);
  });
}

void append_record(const MemcpyEvent& m, std::string& out) {
  append_framed_record(MEMCPY, out, [&](WireEncoder& w) {
    w.uint(1, enum_value(m.kind));
    w.uint(2, m.bytes);
    w.uint(3, enum_value(m.src_kind));
    w.uint(4, enum_value(m.dst_kind));
    w.uint(5, m.device_id);
    w.uint(6, m.context_id);
    w.uint(7, m.stream_id);
    w.uint(8, m.correlation_id);
    w.uint(9, m.start_ns);
    w.uint(10, m.end_ns);
    w.uint(11, m.src_device_id);
    w.uint(12, m.dst_device_id);
  });
}

void append_record(const MemsetEvent& m, std::string& out) {
  append_framed_record(MEMSET, out, [&](WireEncoder& w) {
    w.uint(1, m.bytes);
    w.uint(2, m.value);
    w.uint(3, enum_value(m.memory_kind));
    w.uint(4, m.device_id);
    w.uint(5, m.context_id);
    w.uint(6, m.stream_id);
    w.uint(7, m.correlation_id);
    w.uint(8, m.start_ns);
    w.uint(9, m.end_ns);
  });
}

void append_record(const CollectiveEvent& c, std::string& out) {
  append_framed_record(COLLECTIVE, out, [&](WireEncoder& w) {
    w.uint(1, enum_value(c.op));
    w.string(2, c.op_name);
    w.uint(3, c.bytes);
    w.uint(4, c.count);
    w.uint(5, enum_value(c.data_type));
    w.uint(6, c.comm.comm_hash);
    w.string(7, c.comm.comm_name);
    w.sint(8, c.comm.comm_size);
    w.sint(9, c.comm.rank);
    w.sint(10, c.root);
    w.uint(11, c.comm.stream);
    w.uint(12, c.comm.start_ns);
    w.uint(13, c.comm.end_ns);
    w.uint(14, enum_value(c.comm.timing));
    w.uint(15, c.comm.enqueue_ns);
    w.uint(16, c.seq_number);
    w.string(17, c.algorithm);
    w.string(18, c.protocol);
    w.uint(19, c.comm.channels);
    w.uint(20, enum_value(c.comm.source));
    w.uint(21, c.comm.correlation_id);
    w.packed_int32(22, c.group_ranks.data(), c.group_ranks.size());
  });
}

void append_record(const P2pEvent& p, std::string& out) {
  append_framed_record(P2P, out, [&](WireEncoder& w) {
    w.uint(1, enum_value(p.direction));
    w.sint(2, p.peer);
    w.uint(3, p.bytes);
    w.uint(4, p.count);
    w.uint(5, enum_value(p.data_type));
    w.uint(6, p.comm.comm_hash);
    w.string(7, p.comm.comm_name);
    w.sint(8, p.comm.comm_size);
    w.sint(9, p.comm.rank);
    w.uint(10, p.comm.stream);
    w.uint(11, p.comm.start_ns);
    w.uint(12, p.comm.end_ns);
    w.uint(13, enum_value(p.comm.timing));
    w.uint(14, p.comm.enqueue_ns);
    w.uint(15, p.comm.channels);
    w.uint(16, enum_value(p.comm.source));
    w.uint(17, p.comm.correlation_id);
  });
}

void append_record(const GemmEvent& g, std::string& out) {
  append_framed_record(GEMM, out, [&](WireEncoder& w) {
    w.uint(1, enum_value(g.api));
    w.uint(2, g.m);
    w.uint(3, g.n);
    w.uint(4, g.k);
    w.boolean(5, g.transpose_a);
    w.boolean(6, g.transpose_b);
    w.uint(7, enum_value(g.a_type));
    w.uint(8, enum_value(g.b_type));
    w.uint(9, enum_value(g.c_type));
    w.string(10, g.compute_type);
    w.uint(11, g.batch_count);
    w.uint(12, g.lda);
    w.uint(13, g.ldb);
    w.uint(14, g.ldc);
    w.uint(15, g.correlation_id);
    w.uint(16, g.stream);
    w.uint(17, g.enqueue_ns);
    w.uint(18, g.start_ns);
    w.uint(19, g.end_ns);
  });
}

void append_record(const ExternalCorrelationEvent& c, std::string& out) {
  append_framed_record(EXTERNAL_CORRELATION, out, [&](WireEncoder& w) {
    w.uint(1, c.external_kind);
    w.uint(2, c.external_id);
    w.uint(3, c.correlation_id);
  });
}

void append_record(const MarkerEvent& m, std::string& out) {
  append_framed_record(MARKER, out, [&](WireEncoder& w) {
    w.string(1, m.name);
    w.string(2, m.domain);
    w.uint(3, m.start_ns);
    w.uint(4, m.end_ns);
    w.sint(5, m.iteration);
  });
}

void append_record(const LibraryInfo& l, std::string& out) {
  append_framed_record(LIBRARY, out, [&](WireEncoder& w) {
    w.string(1, l.name);
    w.uint(2, l.version);
    w.string(3, l.path);
  });
}

void append_record(const TracerStatusEvent& s, std::string& out) {
  append_framed_record(STATUS, out, [&](WireEncoder& w) {
    w.uint(1, s.time_ns);
    w.uint(2, s.dropped_records);
    w.uint(3, s.records_written);
    w.uint(4, s.unsupported_records);
    for (const std::string& err : s.errors) w.string(5, err);
    w.boolean(6, s.final);
  });
}

}  // namespace trainsim::tracer
