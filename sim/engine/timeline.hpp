#pragma once
// Chrome / Perfetto trace ("Trace Event Format" JSON) of a simulation: one process per rank, one
// thread (track) per stream, one complete event ("ph": "X") per task, timestamps in microseconds.

#include <ostream>

#include "sim/core/workload.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim::engine {

void write_chrome_trace(const SimulationResult& result, const core::Workload& workload, std::ostream& out);

}  // namespace trainsim::engine
