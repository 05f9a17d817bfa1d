#pragma once
// Chrome / Perfetto trace ("Trace Event Format" JSON) of a simulation: one process per rank, one
// thread (track) per stream, one complete event ("ph": "X") per task, timestamps in microseconds.
// With the SimGrid backend, the network flows a rank sends or receives are async slices ("ph": "b" and
// "e", category "network", named "gpu A -> gpu B", args.bytes) of that rank.
//
// Processes are named "rank N (<program name>)" and sorted by rank; threads are named after their
// stream (core::to_string(Stream)) and sorted in stream order. Each event is named after its task's
// interned name (Workload::names; the task kind when the table is empty), its category is the task
// kind, and its args carry the task index, phase, layer, micro-batch and, by kind, op class and
// FLOPs, collective op and group, peer rank, and bytes. Output is deterministic: the same result
// gives the same bytes. Open it in ui.perfetto.dev or chrome://tracing.

#include <cstdint>
#include <limits>
#include <ostream>
#include <vector>

#include "sim/core/workload.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim::engine {

// The part of the iteration a trace shows (`run --timeline-window`, `--timeline-micro-batches`), to
// keep files of large runs small. The default keeps everything.
struct TimelineFilter {
  // Simulated seconds: a task or flow is kept when its interval overlaps [start_s, end_s].
  double start_s = 0;
  double end_s = std::numeric_limits<double>::infinity();
  // Non-empty: only the tasks of these micro-batches, plus those that belong to no single
  // micro-batch: the optimizer step and the data-parallel stream (gradient reductions, ZeRO
  // gathers). A network flow is kept when it overlaps a kept communication task of its rank.
  std::vector<uint32_t> micro_batches;

  bool keeps_all() const { return start_s <= 0 && end_s == std::numeric_limits<double>::infinity() && micro_batches.empty(); }
};

// REQUIRES: `result` came from running `workload` with options.timeline_ranks set.
void write_chrome_trace(const SimulationResult& result, const core::Workload& workload, std::ostream& out,
                        const TimelineFilter& filter = {});

}  // namespace trainsim::engine
