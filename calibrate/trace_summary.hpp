#pragma once
// What one rank's trace says about where its GPU time went: `trainsim trace summary`.
//
// Per rank:
//  - the time share of each category over the traced window, or over the iterations when the trace
//    has iteration markers (ProfilerStep#N): the busy time of a category is the length of the union
//    of its intervals (two GEMMs on two streams at once count once), idle is the window minus the
//    union of everything. Categories can overlap one another (communication overlapped with
//    compute), so the shares of busy categories can add up to more than 100 %.
//  - the top kernels by total time (name, count, total, mean);
//  - collectives grouped by op, size and communicator size, with count, mean time, and nccl-tests'
//    algorithm and bus bandwidth (algbw = size / time; busbw = algbw * factor, factor 2(n-1)/n for
//    all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, 1 for broadcast and reduce;
//    https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md).
//
// Kernels are put into categories by name (categorize_kernel). A trace without communication
// kernels (`trainsim emulate`'s, or a tracer run whose CUPTI did not start) counts its Collective and
// P2p records as communication instead, unless they are timed at enqueue (TIMING_ENQUEUE: the host
// call only). Collective times come from one
// source per rank, the most exact present: the NCCL profiler plugin, then Kineto's NCCL kernels,
// then the nccl* wrapper, whose calls are timed by the kernels they launched (joined through
// ExternalCorrelation records), or by the call itself when no kernel is found.
//
// Example:
//   RankSummary s = summarize_trace(core::read_trace_file("rank00000.x.trace"), 10);
//   std::cout << format_summary_table({s});

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/core/trace_io.hpp"
#include "sim/core/units.hpp"

namespace trainsim::calibrate {

enum class TimeCategory : uint8_t { GEMM = 0, ATTENTION, ELEMENTWISE, COMMUNICATION, MEMCPY, IDLE };
inline constexpr int TIME_CATEGORY_COUNT = 6;
std::string_view to_string(TimeCategory c);  // "gemm", "attention", ... "idle"

// By kernel name, case-insensitive, first match wins:
//   "nccl"                                                        -> COMMUNICATION
//   "flash", "fmha", "attention", "attn", "softmax"               -> ATTENTION
//   "gemm", "cutlass", "xmma", "cublas", "nvjet", "matmul"        -> GEMM
//   anything else                                                 -> ELEMENTWISE
TimeCategory categorize_kernel(std::string_view name);
// A fused attention kernel by name ("flash", "fmha", "attention", "attn", case-insensitive):
// categorize_kernel's ATTENTION less the plain softmax kernels.
bool fused_attention_kernel(std::string_view name);
// Case-insensitive: whether the kernel's name contains one of `needles` (given in lower case).
bool kernel_name_has(std::string_view name, std::initializer_list<std::string_view> needles);

// A span of GPU activity, in nanoseconds.
struct Interval {
  uint64_t start = 0;
  uint64_t end = 0;
};
// Length of the union of `intervals` clipped to [lo, hi).
uint64_t union_length(std::vector<Interval> intervals, uint64_t lo, uint64_t hi);

// nccl-tests' bus bandwidth factor of an op on n ranks (1 for an unknown op or n < 1).
double bus_factor(trace::CollectiveOp op, int n);
std::string_view collective_name(trace::CollectiveOp op);  // "all_reduce", ...

struct KernelStat {
  std::string name;
  uint64_t count = 0;
  core::Seconds total;
  core::Seconds mean;
};

struct CollectiveStat {
  trace::CollectiveOp op = trace::COLLECTIVE_OP_UNKNOWN;
  core::Bytes size;           // nccl-tests' size
  int comm_size = 0;
  uint64_t count = 0;
  core::Seconds mean;
  core::BytesPerSecond algbw;
  core::BytesPerSecond busbw;
  trace::Timing timing = trace::TIMING_UNKNOWN;  // of the records behind the times
};

struct RankSummary {
  std::string path;
  int rank = -1;
  int world_size = -1;
  std::string device;                 // name of the first device known, if any
  uint64_t lost_bytes = 0;            // of a truncated tail
  uint64_t dropped_records = 0;       // reported by the tracer's status records
  std::vector<std::string> tracer_errors;
  core::Seconds window;               // the span the shares are computed over
  uint64_t iterations = 0;            // iteration markers inside the window (0: whole trace)
  std::array<core::Seconds, TIME_CATEGORY_COUNT> busy{};  // by TimeCategory; IDLE = window - all busy
  std::vector<KernelStat> top_kernels;
  std::vector<CollectiveStat> collectives;  // by op, then size, then comm size
};

// REQUIRES nothing: an empty trace gives an empty summary (zero window).
RankSummary summarize_trace(const core::TraceFile& trace, size_t top_kernels);

// One block per rank: a category table, a top-kernel table and a collective table.
std::string format_summary_table(const std::vector<RankSummary>& ranks);
// {"schema": "trainsim.trace-summary/1", "ranks": [...]}; times in seconds, sizes in bytes.
core::Json summary_to_json(const std::vector<RankSummary>& ranks);

}  // namespace trainsim::calibrate
