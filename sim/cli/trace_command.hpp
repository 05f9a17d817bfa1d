#pragma once
// `trainsim trace`: record a run, read and summarize traces, import PyTorch profiler traces.
//
//   trainsim trace [--out DIR] [--nvtx] [--no-wrappers] -- CMD ARGS...
//       runs CMD with libtrainsim_tracer.so injected (CUDA_INJECTION64_PATH, NCCL_PROFILER_PLUGIN,
//       LD_PRELOAD for the nccl* and cuBLAS wrappers) and TRAINSIM_TRACE_DIR=DIR (default
//       ./trainsim-trace); exits with CMD's exit status (128 + N when killed by signal N). Works
//       around launchers (torchrun, mpirun, srun), whose workers inherit the environment.
//   trainsim trace dump FILE             one JSON object per line: the header, then every record
//                                        (protobuf's JSON mapping, field names as in trace.proto)
//   trainsim trace summary PATH... [--format table|json] [--top N]
//   trainsim trace import-kineto FILE... [--out DIR]   one .trace file per input (= per rank)
//
// Each command returns the exit code and lets core::InputError propagate (exit 2 in main).

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "calibrate/trace_summary.hpp"
#include "sim/cli/commands.hpp"

namespace CLI {
class App;
}

namespace trainsim::cli {

struct TraceRunArgs {
  std::string out_dir = "trainsim-trace";
  bool nvtx = false;                 // record NVTX ranges (iteration markers)
  bool wrappers = true;              // LD_PRELOAD the tracer: nccl* call records, GEMM shapes
  std::vector<std::string> command;  // CMD ARGS...
};
// REQUIRES: !args.command.empty(). Throws InputError (exit 2) when libtrainsim_tracer.so is not
// found: TRAINSIM_TRACER_LIB, else next to the trainsim binary, in ../lib, or in the build tree.
int trace_run_command(const TraceRunArgs& args, std::ostream& err);

// The tracer library `trace` would inject, or an empty string when there is none.
std::string find_tracer_library();

struct TraceDumpArgs {
  std::string file;
};
// A truncated file is dumped up to its last whole record, with a warning on `err`; exit 0.
int trace_dump_command(const TraceDumpArgs& args, std::ostream& out, std::ostream& err);

struct TraceSummaryArgs {
  std::vector<std::string> paths;  // trace files, or folders of *.trace files
  Format format = Format::TABLE;
  size_t top = 10;                 // kernels listed per rank
};
int trace_summary_command(const TraceSummaryArgs& args, std::ostream& out);
// `trace summary --format csv`: the three tables of each rank as one long table (rows of several
// runs concatenate under one header), one row per category, kernel or collective group, with the
// columns that apply to the row's section filled and the others empty:
//   rank,section,name,count,time_s,mean_s,share,size_bytes,comm_size,algbw_gb_s,busbw_gb_s
//   category    name, time_s (busy time), share (of the window; empty for an empty window)
//   kernel      name, count, time_s (total), mean_s
//   collective  name (the op), count, mean_s, size_bytes, comm_size, algbw_gb_s, busbw_gb_s
std::string trace_summary_csv(const std::vector<calibrate::RankSummary>& ranks);

struct TraceImportArgs {
  std::vector<std::string> files;  // Kineto Chrome trace JSON files
  std::string out_dir = ".";
};
// Prints the path of each trace written.
int trace_import_kineto_command(const TraceImportArgs& args, std::ostream& out);

// `trace` and its subcommands, registered on the application's CLI11 App. CLI11 writes the parsed
// values into this object, so it must stay where it is (not copyable, not movable) until run().
//
// Example (sim/cli/main.cpp):
//   TraceSubcommand trace(app);
//   app.parse(argc, argv);
//   if (std::optional<int> code = trace.run(std::cout, std::cerr)) return *code;
class TraceSubcommand {
 public:
  explicit TraceSubcommand(CLI::App& app);
  TraceSubcommand(const TraceSubcommand&) = delete;
  TraceSubcommand& operator=(const TraceSubcommand&) = delete;

  // After app.parse(): the exit code of the chosen trace command, or std::nullopt when `trace` was
  // not on the command line. Throws InputError for `trace` without a command or a subcommand.
  std::optional<int> run(std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* trace_ = nullptr;
  CLI::App* dump_ = nullptr;
  CLI::App* summary_ = nullptr;
  CLI::App* import_ = nullptr;
  TraceRunArgs run_args_;
  TraceDumpArgs dump_args_;
  TraceSummaryArgs summary_args_;
  TraceImportArgs import_args_;
};

}  // namespace trainsim::cli
