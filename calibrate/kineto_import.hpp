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
// Everything else (CPU ops, runtime calls, flows, metadata) is skipped and counted.
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
  uint64_t skipped_events = 0;         // events of other categories
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
