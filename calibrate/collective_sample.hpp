#pragma once
// One timed collective call, whatever measured it (a traced run, a row of nccl-tests' output): what
// the network fit of profile_fit.hpp reads. Traces give one sample per call (trace_set.hpp),
// nccl-tests one per result row (nccl_tests_import.hpp).
//
// Example:
//   CollectiveSample s{core::CollectiveOp::ALL_REDUCE, 8, core::Bytes(64 * core::MiB),
//                      core::Seconds(712e-6), collective_scope(1, 8)};  // one host: INTRA_NODE

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::calibrate {

// Which scope of the cost model (network/collective_cost.hpp) times a communicator:
//  INTRA_NODE    every member on one host (NVLink)
//  INTER_NODE    one member per host (the NICs)
//  HIERARCHICAL  several members on each of several hosts: both scopes at once, not fitted
//  UNKNOWN       some member's host is unknown (a rank without a trace), not fitted
enum class CollectiveScope : uint8_t { INTRA_NODE, INTER_NODE, HIERARCHICAL, UNKNOWN };
std::string_view to_string(CollectiveScope s);  // "intra_node", "inter_node", "hierarchical", "scope unknown"

// The scope of a communicator whose members sit on `hosts` hosts, at most `busiest_host` on one.
// REQUIRES: hosts >= 1, busiest_host >= 1.
CollectiveScope collective_scope(size_t hosts, int busiest_host);

struct CollectiveSample {
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;
  int ranks = 0;        // members of the communicator, >= 2
  core::Bytes bytes;    // nccl-tests' size: the per-rank buffer
  core::Seconds time;   // > 0
  CollectiveScope scope = CollectiveScope::UNKNOWN;
};

}  // namespace trainsim::calibrate
