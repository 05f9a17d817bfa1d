#pragma once
// Which classes of calls run alone on their links whenever they run, whatever else the job does:
// the SimGrid backend replays such a call from its class's first run instead of simulating its
// flows again (SimulationOptions::replay_calls_alone). Internal to sim/engine; no SimGrid here.
//
// A class is one set of flows the backend starts for a call (ScheduleFlows: a collective's meeting,
// op and size with its mirror images; a send/recv pair and size; a copy), and every call of the
// class starts exactly those flows. Classes whose flows share a link are joined into components
// (union over shared links), so that a component's classes share no link with any other
// component's. A component's calls never overlap in time when one simulated rank takes part in all
// of them from one lane (it is a member of every meeting of the component and issues all its tasks
// of the component on that lane): a lane runs one task at a time, and a call's flows have all ended
// when the call ends. So each call of such a component runs its flows on links that nothing else
// crosses meanwhile, and max-min sharing on a set of links used by no other flow depends on those
// flows alone: every call of a class takes the time of its first run, exactly (up to SimGrid's
// clock rounding). Typical: a tensor-parallel group inside a node whose NVLink ports only its own
// calls cross (the pipeline sends and data-parallel rings leave through PCIe and the NICs), which
// was 80% of the flows of Llama 3 405B on 16,384 H100.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainsim::engine {

// One call site of a class: the simulated rank's slot and lane that issue it, and the meeting it
// joins (a call of that meeting includes every simulated member's task).
struct ClassSite {
  uint32_t cls = 0;
  uint32_t slot = 0;
  uint8_t lane = 0;
  uint64_t meeting = 0;
};

// Per class, whether it runs alone on its links whenever it runs (see above). `links[c]` are the
// links class c's flows cross (any order, repeats allowed), `sites` every call site of every class.
// REQUIRES: every site's cls < links.size(); every link id < link_count.
std::vector<bool> isolated_classes(const std::vector<std::vector<uint32_t>>& links, const std::vector<ClassSite>& sites,
                                   size_t link_count);

}  // namespace trainsim::engine
