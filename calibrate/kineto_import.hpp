#pragma once
// Converting PyTorch profiler (Kineto) Chrome traces into trainsim traces (sim/core/trace.proto), so
// that traces users already have feed `trace summary`, calibration and replay like the tracer's.
//
// What is converted, per trace event (ph "X"):
//   cat "kernel"                 -> Kernel (name, device, stream, correlation, grid, block,
//                                   registers); an NCCL kernel with a "Collective name" arg also
//                                   gives a Collective (send/recv: a P2p) timed by the kernel
//                                   (TIMING_GPU_KERNEL, SOURCE_KINETO): op, "In/Out msg nelems",
//                                   "dtype", "Group size", "Process Group Name", "Process Group Ranks"
//   cat "gpu_memcpy"             -> Memcpy (kind and memory kinds from the name, "bytes")
//   cat "gpu_memset"             -> Memset
//   cat "user_annotation" and
//   cat "gpu_user_annotation"    -> Marker (domain = the category); "ProfilerStep#N" is iteration N
//   cat "cpu_op" with costed inputs -> Gemm (a GEMM's m, n, k, batch and types) or Operation
//                                   (attention FLOPs, memory-bound bytes) from "Input Dims", "Input
//                                   type" and "Concrete Inputs" (calibrate/op_costs.hpp), with one
//                                   ExternalCorrelation per kernel it launched: the tracer's
//                                   convention, so that `calibrate` fits both alike
// A kernel belongs to the CPU op whose "External id" it carries, else to the op its launching runtime
// call ("correlation") has, else to the innermost op enclosing that call on its thread (the op
// stack). Its time counts for that op when the op is costed, else for the nearest costed ancestor
// when that is a GEMM (a GEMM kernel) or an attention op (an attention kernel): a kernel of an
// uncosted op nested in a costed memory-bound op is not counted for it.
// Everything else (CPU ops and runtime calls as events, flows, metadata) is skipped and counted.
// The header comes from "deviceProperties", "distributedInfo" (rank, world size, NCCL version) and
// "cuda_runtime_version" / "cuda_driver_version". Timestamps are microseconds (fractional) in Kineto
// and nanoseconds here: ns = baseTimeNanoseconds + round(ts * 1000).
//
// Example:
//   KinetoImport t = import_kineto_file("rank0.pt.trace.json");
//   std::string path = write_kineto_import(t, "out");   // "out/rank00000.rank0.pt.trace.trace"

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/core/trace.pb.h"

namespace trainsim::calibrate {

struct KinetoImport {
  std::string source;                  // the file converted
  trace::Header header;
  std::vector<trace::Record> records;  // in trace event order
  uint64_t skipped_events = 0;         // events of other categories (cpu_op and runtime events included)
  uint64_t costed_ops = 0;             // Gemm and Operation records made from CPU ops
  uint64_t linked_kernels = 0;         // kernels linked to them
};

// Reads and converts one Kineto trace. Throws core::InputError naming the file and the JSON pointer
// of the first malformed value (a missing "traceEvents" array, an event without a numeric "ts").
KinetoImport import_kineto_file(const std::string& path);
// The same for an already parsed document; `origin` names it in errors.
KinetoImport import_kineto_json(const core::Json& document, const std::string& origin);

// The output file name: "rank00003.<stem>.trace" ("norank.<stem>.trace" without a rank), where the
// stem is the source's file name without ".json".
std::string kineto_output_name(const KinetoImport& trace);
// Writes the trace to `dir`/kineto_output_name(...), creating `dir`; returns the path. Throws
// core::InputError when the file cannot be written.
std::string write_kineto_import(const KinetoImport& trace, const std::string& dir);

}  // namespace trainsim::calibrate
