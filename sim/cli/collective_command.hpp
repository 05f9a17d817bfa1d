#pragma once
// `trainsim collective`: one collective over a range of sizes, printed like nccl-tests.
//
//   trainsim collective --op all_reduce --gpus 8 --sizes 1M:16G
//   trainsim collective --op all_reduce --gpus 1024 --gpu H100-SXM5-80GB --nic-bandwidth "400 Gb/s"
//       --topology rail-optimized --fidelity flow --sizes 1G --format json         (one command line)
//   trainsim collective --scenario scenarios/gpt3-175b-a100-1024.json --gpus 64 --sizes 1M:1G
//   trainsim collective --gpus 8 --sizes 32K:16G --compare validation/collectives/nccl-tests.json
//
// The cluster comes from the options (nodes = gpus / gpus-per-node, one NIC per GPU, every other
// value the scenario default, see network/cluster.hpp) or from a scenario's "cluster" section and
// profile (--gpus then picks the first N of its GPUs; default all). The table has nccl-tests'
// columns: size_bytes, count (float elements), time_us, algbw_GB/s, busbw_GB/s (GB = 1e9), and the
// algorithm used; then the most utilized links at the largest size (step and flow fidelities).
//
// --compare FILE reads nccl-tests measurements in the form of
// validation/collectives/nccl-tests.json (an array of cases with "collective": {"collective",
// "ranks"} and "measured": {"busbw_GBps_by_size": {"1MiB": 18.0, ...}}) and prints predicted vs
// measured bus bandwidth and the signed error at every measured size among --sizes. The cases are
// measured on one 8 x A100 NVSwitch node: the run must be that (op all_reduce, 8 GPUs in one node, an
// A100, fabric nvswitch), else it is an input error.
//
// Budgets, checked before anything is built (docs/hardening.md, "Budgets"): the cluster's GPUs
// (the whole cluster: its topology, and at step and flow fidelity its SimGrid platform, are built
// even for a group of a few GPUs) are at most MAX_SIMGRID_COLLECTIVE_GPUS at step and flow fidelity
// and MAX_ANALYTIC_COLLECTIVE_GPUS at analytic fidelity; above them the run is refused (exit 2) with
// the platform's estimated memory and build time, naming --fidelity and --gpus. At step fidelity the
// flows of the algorithm's transfers are bounded as well (engine::STEP_FLOW_BUDGET).
//
// Errors in options are core::InputError naming the option (exit 2).

#include <optional>
#include <ostream>
#include <string>

#include "sim/cli/commands.hpp"

namespace CLI {
class App;
}

namespace trainsim::cli {

// The SimGrid platform of a fat-tree cluster takes about 18 KB of memory and 40 us of building per
// GPU before the first flow (measured at 131,072 GPUs: 1.9 million links, 2.4 GB, 5.2 s; the flows
// of one 1 GiB all-reduce then take 40 s more); a million GPUs would need about 18 GB.
inline constexpr int MAX_SIMGRID_COLLECTIVE_GPUS = 1 << 17;  // 131,072
// The topology alone at analytic fidelity: about 1.5 KB and 4 us per GPU (1.5 GB and 4.6 s at 2^20).
inline constexpr int MAX_ANALYTIC_COLLECTIVE_GPUS = 1 << 20;  // 1,048,576

struct CollectiveArgs {
  std::string op = "all_reduce";      // all_reduce | reduce_scatter | all_gather | broadcast | reduce | all_to_all
  int gpus = 0;                       // group size; required without --scenario
  int gpus_per_node = 8;
  std::string gpu;                    // catalog name; default the cluster default (A100-SXM4-80GB)
  std::string nic_bandwidth;          // per NIC, e.g. "400 Gb/s"; default the cluster default
  std::string topology;               // fat-tree | rail-optimized | dragonfly | torus | ideal
  std::string scenario;               // take the cluster and profile from this scenario instead
  std::string algorithm = "auto";     // network::parse_algorithm
  std::string fidelity = "flow";      // step | flow | analytic
  std::string sizes = "1M:16G";       // MIN:MAX (or one size), nccl-tests' per-rank buffer
  double factor = 2;                  // size multiplier between MIN and MAX, > 1
  Format format = Format::TABLE;
  std::string compare;                // nccl-tests measurements to compare with
  size_t top_links = 5;               // most utilized links listed
  bool no_symmetry = false;           // simulate every flow (engine::CollectiveRequest::use_symmetry)
  bool timings = false;               // where the time goes, per size, on stderr (wall clock)
};

// Prints the table (or JSON) on `out`; returns 0. Throws core::InputError naming the faulty option.
int collective_command(const CollectiveArgs& args, std::ostream& out);

// `collective`, registered on the application's CLI11 App. CLI11 writes the parsed values into this
// object, so it must stay where it is (not copyable, not movable) until run().
//
// Example (sim/cli/main.cpp):
//   CollectiveSubcommand collective(app);
//   app.parse(argc, argv);
//   if (std::optional<int> code = collective.run(std::cout)) return *code;
class CollectiveSubcommand {
 public:
  explicit CollectiveSubcommand(CLI::App& app);
  CollectiveSubcommand(const CollectiveSubcommand&) = delete;
  CollectiveSubcommand& operator=(const CollectiveSubcommand&) = delete;

  // After app.parse(): the exit code of `collective`, or std::nullopt when it was not on the command line.
  std::optional<int> run(std::ostream& out) const;

 private:
  CLI::App* command_ = nullptr;
  CollectiveArgs args_;
};

}  // namespace trainsim::cli
