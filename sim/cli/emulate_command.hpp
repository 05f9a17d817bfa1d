#pragma once
// `mpirun -np N trainsim emulate SCENARIO` (docs/emulate.md): every rank of the scenario's job is
// one MPI process that executes its program of the Workload IR for real: compute and copies as
// timed waits, collectives and point-to-point messages as MPI calls of the IR's sizes
// (sim/engine/emulation_plan.hpp says how the IR maps onto MPI). Rank 0 prints the emulated
// iteration time, per-collective timings and the analytic backend's prediction of the same job;
// --trace DIR writes one trainsim trace per rank (sim/core/trace.proto) that `trace summary`,
// `replay` and `calibrate` read.
//
// The MPI part lives in emulate_mpi.cpp, the only file that sees mpi.h; this header and
// emulate_command.cpp are plain C++ (the trace writing and the report are tested without MPI).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/core/trace.pb.h"
#include "sim/core/workload.hpp"
#include "sim/engine/emulation_plan.hpp"

namespace trainsim::cli {

struct EmulateArgs {
  std::string scenario;
  std::vector<std::string> overrides;  // --set key.path=value
  double scale_compute = 1;            // --scale-compute F: compute and copy waits times F
  double scale_bytes = 1;              // --scale-bytes F: message and collective sizes times F
  int iterations = 2;                  // --iterations N: N iterations, the last one measured
  std::string trace_dir;               // --trace DIR: DIR/emulate.rank<R>.trace
  std::string ranks = "all";           // --ranks all | node:N | stage:S (engine::EmulationSubset)
  std::string device = "cpu";          // --device cpu | gpu (gpu: NCCL and spin kernels, emulate_gpu.hpp)
};

// One executed task of the measured iteration, host CLOCK_REALTIME nanoseconds.
struct EmulatedSpan {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// Writes `dir`/emulate.rank<R>.trace: a header (producer_version "trainsim emulate", clock REALTIME, world
// size of the job and global rank of the plan), an iteration marker (ProfilerStep-like, iteration
// `iteration`) over the rank's measured iteration, a Kernel record per WAIT of a COMPUTE task
// (named after the task), a Memcpy per WAIT of a COPY task, a Collective per measured COLLECTIVE (the
// ranks that ran it, communicator size and rank, bytes, sequence number) and a P2p per measured
// SEND/RECV (peer: the global rank exchanged with), timed `timing`; a Marker (domain
// "trainsim.emulate.modelled") per modelled call, so that calibration never fits the model's own
// numbers. `spans` is indexed like plan.tasks. Throws InputError when the file cannot be written.
// Returns the path.
std::string write_emulation_trace(const std::string& dir, const core::Workload& workload,
                                  const engine::EmulationPlan& plan, const std::vector<EmulatedSpan>& spans,
                                  const std::string& command_line, int iteration, trace::Timing timing);

// Per (group kind, collective op) of one rank's measured iteration: calls, bytes and seconds.
struct CollectiveTiming {
  std::string group;
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;
  int ranks = 0;     // that ran it (the present members)
  int members = 0;   // of the group in the job
  bool modelled = false;
  uint64_t calls = 0;
  double bytes = 0;
  double seconds = 0;
};
std::vector<CollectiveTiming> collective_timings(const core::Workload& workload, const engine::EmulationPlan& plan,
                                                 const std::vector<EmulatedSpan>& spans);

// What rank 0 reports.
struct EmulationOutcome {
  int mpi_ranks = 0;
  int rank = 0;                       // global rank of MPI rank 0 (the table's rank)
  double iteration_s = 0;             // emulated: the longest rank, barrier to its last task
  double predicted_s = 0;             // analytic backend, the whole scaled job
  double predicted_present_s = -1;    // analytic, the longest emulated rank; < 0: every rank is emulated
  double wait_s = 0;                  // rank 0's compute and copy waits
  uint64_t measured_calls = 0;        // rank 0's calls through MPI / NCCL
  uint64_t modelled_calls = 0;        // rank 0's calls completed as modelled waits
  std::vector<CollectiveTiming> timings;
};

// The report rank 0 prints: the measured iteration, the per-collective table and the comparison
// with the analytic prediction of the job with compute and sizes scaled as emulated.
std::string emulation_report(const EmulateArgs& args, const EmulationOutcome& o);

// The command. Under mpirun with MPI built: exit codes as `run` (0, 2 for bad input on every rank,
// printed by rank 0 only). Without MPI built: InputError (rank 0 of an mpirun only) saying how to
// rebuild; the other ranks return 2 silently. Under MPI, errors are printed on `err` by rank 0 (once).
int emulate_command(const EmulateArgs& args, std::ostream& out, std::ostream& err);

class EmulateSubcommand {
 public:
  explicit EmulateSubcommand(CLI::App& app);
  EmulateSubcommand(const EmulateSubcommand&) = delete;
  EmulateSubcommand& operator=(const EmulateSubcommand&) = delete;
  std::optional<int> run(std::ostream& out, std::ostream& err);

 private:
  CLI::App* command_ = nullptr;
  EmulateArgs args_;
};

}  // namespace trainsim::cli
