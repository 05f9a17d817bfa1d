#pragma once
// The choice rule of a ready pool (sim/core/workload.hpp, READY POOL: AxoNN's message-driven
// execution), apart from the executor that applies it. Internal to sim/engine.

#include <cstdint>
#include <vector>

namespace trainsim::engine {

// The first unissued block of one queue, allowed by the in-flight limit.
struct PoolCandidate {
  uint32_t block = 0;
  uint32_t queue = 0;
  bool arrived = false;  // its input's arrival is known (its trigger has ended)
  double arrival = 0;    // when it arrived, if known
};

struct PoolChoice {
  // WAIT: no candidate's input has arrived yet.
  // ISSUE: `block` runs at `time`, final: every candidate's arrival is known.
  // DEFER: `block` runs at `time` unless an input not known yet arrives by then; the executor
  //   issues it when no input can arrive before `time` any more (the simulated clock reached it),
  //   ties with an input still unknown at that instant going to `block`.
  enum Kind { WAIT, DEFER, ISSUE } kind = WAIT;
  uint32_t block = 0;
  double time = 0;
};

// With the COMPUTE stream free at `free`: at t = max(free, earliest known arrival), the candidate
// arrived first among those arrived by t, the lower queue on ties (then the lower block).
PoolChoice choose_block(const std::vector<PoolCandidate>& candidates, double free);

}  // namespace trainsim::engine
