#pragma once
// Pipeline schedules: the order in which each pipeline rank runs the forward and backward passes of
// its model chunks over the micro-batches, and a reference timing of that order from which the
// workload builder derives a deadlock-free order of pipeline sends and receives.
//
// Model positions: with p pipeline ranks and v chunks per rank, chunk c of rank r holds model
// position c·p + r (Megatron-LM's interleaved assignment); position i feeds position i + 1.

#include <vector>

#include "models/strategy.hpp"

namespace trainsim::models {

enum class Pass : uint8_t { FORWARD, BACKWARD };

struct PassSlot {
  Pass pass = Pass::FORWARD;
  int micro_batch = 0;
  int chunk = 0;  // model chunk of this rank, 0..chunks-1
};

// Each pipeline rank's passes in execution order (m micro-batches, p ranks, v chunks per rank):
//  GPIPE             all forwards, then all backwards, micro-batches in order (Huang et al. 2019;
//                    Narayanan et al. 2021, Figure 3).
//  ONE_F_ONE_B       PipeDream-Flush (Narayanan et al. 2021, Figure 4 top): min(p - rank - 1, m)
//                    warm-up forwards, then one forward and one backward alternately, then the
//                    remaining backwards. With v = 1 the interleaved schedule is this one.
//  INTERLEAVED_1F1B  Megatron-LM's forward_backward_pipelining_with_interleaving: m·v virtual
//                    micro-batches; virtual micro-batch k runs chunk (k mod p·v) / p forward (reversed,
//                    v - 1 - that, backward) on micro-batch (k / (p·v))·p + k mod p (get_model_chunk_id);
//                    min((p - rank - 1)·2 + (v - 1)·p, m·v) warm-up forwards, then 1F1B, then cool-down.
// REQUIRES: stages, chunks, micro_batches >= 1; chunks > 1 only with INTERLEAVED_1F1B and then
// micro_batches a multiple of stages.
std::vector<std::vector<PassSlot>> pipeline_order(PipelineSchedule schedule, int stages, int chunks, int micro_batches);

struct TimedSlot {
  PassSlot slot;
  double start = 0;
  double end = 0;
};

// Runs `order` with each pass taking forward_cost[position] or backward_cost[position] (indexed by
// model position, all > 0) and instantaneous transfers: a forward pass waits for the previous
// position's forward of the same micro-batch, a backward pass for the next position's backward (the
// last position: for its own forward). Returns each rank's slots with their times, in order.
// Throws InternalError when the order cannot complete (a bug in pipeline_order).
std::vector<std::vector<TimedSlot>> time_pipeline(const std::vector<std::vector<PassSlot>>& order, int stages,
                                                  const std::vector<double>& forward_cost,
                                                  const std::vector<double>& backward_cost);

}  // namespace trainsim::models
