#include "sim/cli/trace_command.hpp"

#include <iostream>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>
#include <sys/wait.h>
#include <unistd.h>

#include "calibrate/kineto_import.hpp"
#include "calibrate/trace_summary.hpp"
#include "sim/cli/cli_options.hpp"
#include "sim/plan/report_figures.hpp"
#include "sim/core/error.hpp"
#include "sim/core/trace_io.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace fs = std::filesystem;

namespace {

constexpr const char* TRACER_LIBRARY = "libtrainsim_tracer.so";

std::string to_json_line(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;  // rank 0 and stream 0 are values, not absences
  std::string line;
  const auto status = google::protobuf::util::MessageToJsonString(message, &line, options);
  TRAINSIM_CHECK(status.ok(), "a parsed trace record prints as JSON");
  return line;
}

// The environment of the traced command: this process's, with the tracer's variables set.
std::vector<std::string> traced_environment(const TraceRunArgs& args, const std::string& library,
                                            const std::string& out_dir) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  auto set = [&env](const std::string& key, const std::string& value) {
    const std::string prefix = key + "=";
    std::erase_if(env, [&prefix](const std::string& e) { return e.rfind(prefix, 0) == 0; });
    env.push_back(prefix + value);
  };
  set("CUDA_INJECTION64_PATH", library);
  set("NCCL_PROFILER_PLUGIN", library);
  set("TRAINSIM_TRACE_DIR", out_dir);
  set("TRAINSIM_TRACE_WRAPPERS", args.wrappers ? "1" : "0");
  if (args.wrappers) {
    const char* preload = std::getenv("LD_PRELOAD");
    set("LD_PRELOAD", preload != nullptr && *preload != '\0' ? library + ":" + preload : library);
  }
  if (args.nvtx) {
    set("TRAINSIM_TRACE_NVTX", "1");
    set("NVTX_INJECTION64_PATH", library);
  }
  return env;
}

}  // namespace

std::string find_tracer_library() {
  if (const char* path = std::getenv("TRAINSIM_TRACER_LIB"); path != nullptr && *path != '\0') {
    return fs::exists(path) ? std::string(path) : std::string();
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const fs::path dir = exe.parent_path();
  // Installed (bin/ and lib/), side by side, and the build tree (sim/cli/trainsim, tracer/).
  for (const fs::path& candidate : {dir / TRACER_LIBRARY, dir / ".." / "lib" / TRACER_LIBRARY,
                                    dir / ".." / ".." / "tracer" / TRACER_LIBRARY}) {
    if (fs::exists(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
  }
  return {};
}

int trace_run_command(const TraceRunArgs& args, std::ostream& err) {
  TRAINSIM_CHECK(!args.command.empty(), "the command line names a command to trace");
  const std::string library = find_tracer_library();
  if (library.empty()) {
    throw core::InputError("", "", std::string(TRACER_LIBRARY) +
                                       " not found: this trainsim was built without the tracer (it needs the "
                                       "CUDA toolkit with CUPTI and NCCL headers; see docs/tracer.md), or set "
                                       "TRAINSIM_TRACER_LIB to its path");
  }
  std::error_code ec;
  fs::create_directories(args.out_dir, ec);
  if (ec) throw core::InputError(args.out_dir, "", "cannot create the trace folder: " + ec.message());
  const std::string out_dir = fs::absolute(args.out_dir).string();

  const std::vector<std::string> env = traced_environment(args, library, out_dir);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const std::string& a : args.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  err << "trainsim trace: tracing `" << args.command[0] << "` into " << out_dir << "\n";
  err.flush();
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (child == 0) {
    execvpe(argv[0], argv.data(), envp.data());
    const std::string message = "trainsim trace: cannot run " + args.command[0] + ": " + std::strerror(errno) + "\n";
    const ssize_t ignored = write(STDERR_FILENO, message.data(), message.size());
    static_cast<void>(ignored);
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid failed: ") + std::strerror(errno));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int trace_dump_command(const TraceDumpArgs& args, std::ostream& out, std::ostream& err) {
  core::TraceReader reader(args.file);
  trace::Record header;
  *header.mutable_header() = reader.header();
  out << to_json_line(header) << "\n";
  trace::Record record;
  while (reader.next(record)) out << to_json_line(record) << "\n";
  if (reader.lost_bytes() > 0) {
    err << "warning: " << args.file << ": truncated: the last " << reader.lost_bytes()
        << " bytes (an incomplete record) were not read\n";
  }
  return 0;
}

std::string trace_summary_csv(const std::vector<calibrate::RankSummary>& ranks) {
  std::string s = "rank,section,name,count,time_s,mean_s,share,size_bytes,comm_size,algbw_gb_s,busbw_gb_s\n";
  for (const calibrate::RankSummary& r : ranks) {
    for (int c = 0; c < calibrate::TIME_CATEGORY_COUNT; ++c) {
      const double busy = r.busy[static_cast<size_t>(c)].value();
      const double window = r.window.value();
      s += fmt::format("{},category,{},,{},,{},,,,\n", r.rank, calibrate::to_string(static_cast<calibrate::TimeCategory>(c)),
                       busy, window > 0 ? fmt::format("{}", busy / window) : "");
    }
    for (const calibrate::KernelStat& k : r.top_kernels) {
      s += fmt::format("{},kernel,{},{},{},{},,,,,\n", r.rank, csv_field(k.name), k.count, k.total.value(), k.mean.value());
    }
    for (const calibrate::CollectiveStat& c : r.collectives) {
      s += fmt::format("{},collective,{},{},,{},,{},{},{},{}\n", r.rank, calibrate::collective_name(c.op), c.count,
                       c.mean.value(), c.size.value(), c.comm_size, c.algbw.value() / 1e9, c.busbw.value() / 1e9);
    }
  }
  return s;
}

int trace_summary_command(const TraceSummaryArgs& args, std::ostream& out) {
  std::vector<calibrate::RankSummary> ranks;
  for (const std::string& path : core::expand_trace_paths(args.paths)) {
    const core::TraceFile file = core::read_trace_file(path);
    if (const std::string w = core::truncation_warning(file); !w.empty()) std::cerr << w << "\n";
    ranks.push_back(calibrate::summarize_trace(file, args.top));
  }
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const calibrate::RankSummary& a, const calibrate::RankSummary& b) { return a.rank < b.rank; });
  switch (args.format) {
    case Format::JSON: out << calibrate::summary_to_json(ranks).dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n"; break;
    case Format::CSV: out << trace_summary_csv(ranks); break;
    case Format::TABLE: out << calibrate::format_summary_table(ranks); break;
  }
  return 0;
}

int trace_import_kineto_command(const TraceImportArgs& args, std::ostream& out) {
  for (const std::string& file : args.files) {
    out << calibrate::write_kineto_import(calibrate::import_kineto_file(file), args.out_dir) << "\n";
  }
  return 0;
}

TraceSubcommand::TraceSubcommand(CLI::App& app) {
  trace_ = app.add_subcommand("trace",
                              "Trace a run (trace -- CMD ARGS...), or read traces (dump, summary, import-kineto)");
  trace_->require_subcommand(0, 1);
  trace_->add_option("--out", run_args_.out_dir, "Folder of the per-rank trace files")->default_str("trainsim-trace");
  trace_->add_flag("--nvtx", run_args_.nvtx, "Record NVTX ranges (ProfilerStep#N marks iterations)");
  trace_->add_flag("!--no-wrappers", run_args_.wrappers,
                   "Do not LD_PRELOAD the tracer (no nccl* call records, no GEMM shapes)");
  trace_->add_option("command", run_args_.command, "The command to trace, after --")->type_name("CMD ARGS...");

  dump_ = trace_->add_subcommand("dump", "Print a trace file as JSON lines (the header, then each record)");
  dump_->add_option("file", dump_args_.file, "Trace file")->required();

  summary_ = trace_->add_subcommand("summary",
                                    "Per rank: time by category, top kernels, collectives with their bus bandwidth");
  summary_->add_option("paths", summary_args_.paths, "Trace files, or folders of *.trace files")->required();
  add_format(summary_, summary_args_.format, /*csv=*/true);
  summary_->add_option("--top", summary_args_.top, "Kernels listed per rank")->default_str("10");

  import_ = trace_->add_subcommand("import-kineto", "Convert PyTorch profiler (Kineto) Chrome traces");
  import_->add_option("files", import_args_.files, "Kineto trace JSON files (one per rank)")->required();
  import_->add_option("--out", import_args_.out_dir, "Output folder")->default_str(".");
}

std::optional<int> TraceSubcommand::run(std::ostream& out, std::ostream& err) const {
  if (!trace_->parsed()) return std::nullopt;
  if (dump_->parsed()) return trace_dump_command(dump_args_, out, err);
  if (summary_->parsed()) return trace_summary_command(summary_args_, out);
  if (import_->parsed()) return trace_import_kineto_command(import_args_, out);
  if (run_args_.command.empty()) {
    throw core::InputError("", "", "trace: give a command after --, e.g. `trainsim trace -- python train.py`, "
                                   "or one of dump, summary, import-kineto");
  }
  return trace_run_command(run_args_, err);
}

}  // namespace trainsim::cli
