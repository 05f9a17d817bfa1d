#include "sim/engine/ready_pool.hpp"

#include <algorithm>
#include <tuple>

namespace trainsim::engine {

PoolChoice choose_block(const std::vector<PoolCandidate>& candidates, double free) {
  PoolChoice choice;
  const PoolCandidate* pick = nullptr;
  bool unknown = false;
  for (const PoolCandidate& c : candidates) {
    if (!c.arrived) {
      unknown = true;
      continue;
    }
    // Arrived by max(free, this arrival) and earlier than the best so far, or tied and preferred:
    // the earliest arrival always qualifies, so the minimum by (arrival, queue, block) is the pick.
    if (pick == nullptr || std::tie(c.arrival, c.queue, c.block) < std::tie(pick->arrival, pick->queue, pick->block)) {
      pick = &c;
    }
  }
  if (pick == nullptr) return choice;
  choice.kind = unknown ? PoolChoice::DEFER : PoolChoice::ISSUE;
  choice.block = pick->block;
  choice.time = std::max(free, pick->arrival);
  return choice;
}

}  // namespace trainsim::engine
