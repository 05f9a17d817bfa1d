#pragma once
// A Workload IR built from Chakra execution traces (MLCommons; sim/core/chakra_io.hpp), one file per
// rank, as chakra_trace_link / chakra_converter write them from PyTorch execution traces and Kineto,
// or as `trainsim export --to chakra` writes them (sim/plan/chakra_export.hpp): `trainsim replay
// --chakra` simulates it on a cluster (docs/chakra.md).
//
// What is built, per rank (one program each; no templates):
//  - Program order: the nodes in dependency order (data_deps; ties in file order). ctrl_deps (in
//    PyTorch traces, the operator that called this one) are not execution order and are ignored, as
//    ASTRA-sim's feeder does. Every data dependency becomes a task dependency.
//  - COMP_NODE -> COMPUTE: on the COMPUTE stream, or HOST for is_cpu_op. Its time: the attribute
//    trainsim.duration_s when present (exact), else duration_micros; a node without either is priced
//    from num_ops (FLOPs) and tensor_size (bytes) by the compute model (op class trainsim.op_class,
//    else gemm); a node with none of them takes 1 ns, as ASTRA-sim gives it (counted in `untimed`).
//  - COMM_COLL_NODE -> COLLECTIVE: comm_type (ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL,
//    REDUCE_SCATTER; REDUCE_SCATTER_BLOCK as REDUCE_SCATTER, BARRIER as an ALL_REDUCE of comm_size
//    bytes), comm_size bytes per rank, over the process group pg_name. GATHER and SCATTER, and values
//    outside the schema, are refused.
//  - COMM_SEND_NODE / COMM_RECV_NODE -> SEND / RECV to / from comm_dst / comm_src, matched by comm_tag.
//  - MEM_LOAD_NODE / MEM_STORE_NODE -> COPY host to device / device to host of tensor_size bytes
//    (trainsim.copy names another direction), costed by the backend.
//  - METADATA_NODE and INVALID_NODE: no task (a dependency on one is a dependency on its own).
//  - Process groups: pg_name "" or "0" is the world (as in ASTRA-sim); others are defined by the
//    PyTorch metadata node (process_group:init: inputs.values holds [{"pg_name", "ranks"}, ...]) or
//    by ASTRA-sim's communicator-group file ({"1": [0, 1], ...}; ChakraOptions::comm_groups).
//  - Layout: from the files' trainsim.layout and trainsim.group_kinds (trainsim's export), else
//    inferred from the process groups (calibrate/parallel_groups.hpp). A send or receive must reach
//    a rank along one parallel axis.
//  - Streams: trainsim.stream when present; else collectives on their group's axis stream, sends and
//    receives on the pipeline's streams (toward a higher coordinate on their axis PIPELINE_FORWARD,
//    toward a lower one PIPELINE_BACKWARD), copies on COPY (inbound) / COPY_OUT (outbound).
// Throws core::InputError naming the file (and the node id) for: a node type the schema does not
// have or that trainsim does not model, a dependency on an id the file does not hold, a duplicate id,
// a cycle, an unknown or unsupported collective type, a process group no definition gives or that
// does not contain the rank, a peer outside the world or not along one axis, more than 256 tags.
//
// Example:
//   std::vector<core::ChakraTrace> files = load_chakra_traces("out/job");   // out/job.<rank>.et
//   ChakraWorkload w = build_chakra_workload(files, ChakraOptions{});
//   backend->run(w.workload, cluster_of(w.workload.layout.world_size()), profile, options);

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/chakra_io.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::calibrate {

// The most one replay reads, over every rank: bytes of Chakra files (about 160 a node on disk, and
// some 300 once parsed), and nodes (the tasks `simulation.max_tasks` allows a scenario by default).
// A 1,024-rank GPT-3 175B export (43 million nodes, 6.6 GB) is over both: replay a smaller job.
inline constexpr uint64_t CHAKRA_MAX_TOTAL_BYTES = uint64_t{2} << 30;
inline constexpr uint64_t CHAKRA_MAX_TOTAL_NODES = 12'000'000;

// The files of one job: `path` is a folder holding PREFIX.<rank>.et files of one prefix, or the
// prefix itself (ASTRA-sim's --workload-configuration). Throws core::InputError when none is found,
// a folder holds several prefixes, a rank from 0 to the highest is missing, a rank number is above
// core::TRACE_MAX_WORLD_SIZE, the files exceed CHAKRA_MAX_TOTAL_BYTES, or a file does not read
// (read_chakra_file). Index i of the result is rank i.
std::vector<core::ChakraTrace> load_chakra_traces(const std::string& path);

struct ChakraOptions {
  std::string comm_groups;  // ASTRA-sim's communicator-group JSON file; "" for none
};

struct ChakraWorkload {
  core::Workload workload;
  uint64_t compute_tasks = 0;      // over the ranks
  uint64_t collective_tasks = 0;
  uint64_t send_recv_tasks = 0;
  uint64_t copy_tasks = 0;
  uint64_t untimed = 0;            // compute nodes with no duration, FLOPs or bytes (1 ns each)
  uint64_t skipped = 0;            // METADATA_NODE and INVALID_NODE nodes
  bool layout_from_files = false;  // trainsim.layout and trainsim.group_kinds gave the layout
  // The traced span, when the nodes carry start times: the longest over the ranks of the first
  // start to the last end.
  std::optional<core::Seconds> traced;
};

// REQUIRES: traces[i] is rank i's file (load_chakra_traces).
ChakraWorkload build_chakra_workload(const std::vector<core::ChakraTrace>& traces, const ChakraOptions& options);

}  // namespace trainsim::calibrate
