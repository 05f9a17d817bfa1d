#pragma once
// A scenario's workload written as Chakra execution traces (MLCommons' schema, sim/core/chakra_et.proto),
// one file per rank, for ASTRA-sim and the other tools that read them, and for `trainsim replay
// --chakra` (calibrate/chakra_workload.hpp), which reads them back to the same iteration time
// (docs/chakra.md).
//
//   const plan::Scenario s = plan::load_scenario("scenarios/gpt3-6.7b-a100-8.json");
//   const plan::ChakraExportResult r = plan::export_chakra(s, "out");
//   // out/gpt3-6.7b-a100-8.0.et ... .7.et, out/gpt3-6.7b-a100-8.comm_groups.json; r.prefix for ASTRA-sim's
//   // --workload-configuration, r.comm_groups for its --comm-group-configuration
//
// What each file holds: a GlobalMetadata (trainsim.layout, trainsim.group_kinds, trainsim.steady_state,
// trainsim.scenario, trainsim.gpu, trainsim.rank, trainsim.world_size), node 0, a METADATA_NODE
// "## process_group:init ##" listing the rank's process groups as PyTorch's execution trace does, then
// one node per task of the rank's program, in program order (ids from 1):
//   COMPUTE     COMP_NODE, duration_micros (rounded) and trainsim.duration_s (exact) = the task's time
//               as the engine prices it on the scenario's GPU (sim/engine/compute_model.hpp; a HOST-stream
//               task: the host model), num_ops (FLOPs), tensor_size (bytes), is_cpu_op (HOST stream),
//               trainsim.op_class
//   COLLECTIVE  COMM_COLL_NODE, comm_type, comm_size (bytes per rank, nccl-tests' size), pg_name (a process
//               group per group of each kind, numbered from 1: ASTRA-sim takes "" and "0" for the
//               world), trainsim.group (the kind)
//   SEND/RECV   COMM_SEND_NODE / COMM_RECV_NODE, comm_src, comm_dst, comm_tag, comm_size
//   COPY        MEM_LOAD_NODE (toward the GPU or host memory) / MEM_STORE_NODE (away), tensor_size,
//               duration_micros = the uncontended copy time, trainsim.copy (direction)
//   MEMORY      no node (Chakra has no allocation node): a dependency on one is a dependency on its own
// and every node carries trainsim.stream. data_deps: the task's dependencies and the task before it on
// its stream (the order the engine keeps), so that a reader without streams runs the same order.
// Ready pools (message-driven execution) are written in their default program order (a note says so).

#include <cstdint>
#include <string>
#include <vector>

#include "sim/plan/config_export.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {

// The most nodes one export writes, over every rank (about 160 bytes each on disk: 20 GB).
inline constexpr uint64_t CHAKRA_MAX_EXPORT_NODES = uint64_t{1} << 27;

struct ChakraExportResult {
  std::string prefix;               // DIR/NAME: the files are PREFIX.<rank>.et
  std::vector<std::string> files;   // per rank
  std::string comm_groups;          // PREFIX.comm_groups.json: {"1": [0, 1], ...}, ASTRA-sim's communicator groups
  uint64_t nodes = 0;               // over the files, metadata nodes included
  std::vector<ExportLoss> notes;    // what the traces do not carry
};

// Writes the files into `dir` (created if absent), named after the scenario (characters other than
// letters, digits, '.', '-' and '_' become '_'). Throws InputError when the workload has more than
// CHAKRA_MAX_EXPORT_NODES tasks over its ranks or a file cannot be written.
ChakraExportResult export_chakra(const Scenario& s, const std::string& dir);

}  // namespace trainsim::plan
